package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// qwenDir finds the Qwen3 tokenizer files (SharedQwen3Dir).
func qwenDir() string { return SharedQwen3Dir() }

const skipMessage = "Qwen3 tokenizer files not found: set GELO_TOKENIZER_DIR to a folder with tokenizer.json " +
	"and tokenizer_config.json, or provide shared/tokenizers/qwen3/ beside the repository (../shared from its root)"

var (
	qwenOnce sync.Once
	qwenTok  *Tokenizer
	qwenErr  error
)

// loadQwen returns the shared Qwen3 tokenizer, or skips the test when the
// files are not there.
func loadQwen(tb testing.TB) *Tokenizer {
	tb.Helper()
	dir := qwenDir()
	if dir == "" {
		tb.Skip(skipMessage)
	}
	qwenOnce.Do(func() { qwenTok, qwenErr = Load(dir) })
	if qwenErr != nil {
		tb.Fatalf("loading %s: %v", dir, qwenErr)
	}
	return qwenTok
}

// referenceFile is testdata/reference.json.
type referenceFile struct {
	Generator  string `json:"generator"`
	CrossCheck string `json:"cross_check"`
	Cases      []struct {
		Text          string  `json:"text"`
		IDs           []int   `json:"ids"`
		SpecialAsText []int   `json:"ids_special_as_text"`
		Decoded       *string `json:"decoded"`
	} `json:"cases"`
}

func loadReference(tb testing.TB) *referenceFile {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "reference.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var r referenceFile
	if err := json.Unmarshal(data, &r); err != nil {
		tb.Fatalf("testdata/reference.json: %v", err)
	}
	return &r
}

// tinyTokenizerJSON builds a small byte-level BPE tokenizer.json: the 256
// byte tokens, then one token per merge. mergesAsPairs selects the
// ["a", "b"] merges format instead of "a b".
func tinyTokenizerJSON(merges [][2]string, added []AddedToken, mergesAsPairs bool, extra map[string]any) []byte {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = len(vocab)
	}
	var ms []any
	for _, m := range merges {
		a, b := byteLevelEncode(m[0]), byteLevelEncode(m[1])
		if _, ok := vocab[a+b]; !ok {
			vocab[a+b] = len(vocab)
		}
		if mergesAsPairs {
			ms = append(ms, []string{a, b})
		} else {
			ms = append(ms, a+" "+b)
		}
	}
	if ms == nil {
		ms = []any{}
	}
	for i := range added {
		added[i].ID = len(vocab) + i
	}
	if added == nil {
		added = []AddedToken{}
	}
	doc := map[string]any{
		"version":      "1.0",
		"added_tokens": added,
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": QwenPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": vocab, "merges": ms},
	}
	for k, v := range extra {
		doc[k] = v
	}
	data, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return data
}
