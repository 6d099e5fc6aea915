// Command tokprune prunes Qwen3's byte-level BPE tokenizer to the tokens a
// corpus uses, for the small trained model (issue 51), and writes the
// corpus as token ids for the training script.
//
// It keeps every byte token (so any text still encodes), every token the
// corpus encodes to, every token a kept token is merged from (the BPE
// intermediates), the special tokens Qwen3's chat turns need
// (<|endoftext|>, <|im_start|>, <|im_end|>), and the merges in rank order
// whose parts and result are all kept; ids are renumbered compactly in the
// original order. A merge the original tokenizer applies to a corpus word
// produces a kept token, so it is kept; the pruned tokenizer picks among a
// subset of the original's candidates that holds the original's choice,
// hence encodes the corpus identically. The tool checks that rather than
// trusting the argument: it re-encodes every input with the pruned
// tokenizer and compares token strings with Qwen3's.
//
//	go run ./tools/tokprune -src ../shared/tokenizers/qwen3 -out models/trained \
//	    -ids tools/train/data tools/train/data/train.txt tools/train/data/heldout.txt
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gelo/tokenizer"
)

func main() {
	src := flag.String("src", "../shared/tokenizers/qwen3", "directory of the tokenizer to prune (tokenizer.json, tokenizer_config.json)")
	out := flag.String("out", "models/trained", "directory to write the pruned tokenizer.json and tokenizer_config.json to")
	ids := flag.String("ids", "", "if set, directory to write each input's token ids to (NAME.ids: little-endian uint16)")
	flag.Parse()
	if err := run(*src, *out, *ids, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "tokprune:", err)
		os.Exit(1)
	}
}

// keepSpecial are the added tokens the pruned tokenizer keeps: those
// Qwen3's ChatML turns (tokenizer.FormatChat) and end of text need.
var keepSpecial = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}

func run(src, out, idsDir string, inputs []string) error {
	if len(inputs) == 0 {
		return fmt.Errorf("no corpus files given")
	}
	orig, err := tokenizer.Load(src)
	if err != nil {
		return err
	}
	texts := make([]string, len(inputs))
	used := map[string]bool{}
	for i, path := range inputs {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		texts[i] = string(b)
		for _, id := range orig.Encode(texts[i]) {
			tok, _ := orig.IDToToken(id)
			used[tok] = true
		}
	}
	raw, err := readRaw(src)
	if err != nil {
		return err
	}
	pruned, err := raw.prune(used, keepSpecial)
	if err != nil {
		return err
	}
	if err := pruned.write(out); err != nil {
		return err
	}
	tok, err := tokenizer.Load(out)
	if err != nil {
		return fmt.Errorf("loading the pruned tokenizer: %w", err)
	}
	fmt.Printf("vocabulary: %d tokens (%d model tokens, %d merges, %d added); corpus uses %d\n",
		tok.VocabSize(), tok.ModelVocabSize(), len(pruned.merges), len(pruned.added), len(used))
	for i, path := range inputs {
		got, err := checkSame(orig, tok, texts[i])
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fmt.Printf("%s: %d tokens, identical token strings under both tokenizers\n", path, len(got))
		if idsDir != "" {
			name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)) + ".ids"
			if err := writeIDs(filepath.Join(idsDir, name), got); err != nil {
				return err
			}
		}
	}
	return checkAnyText(tok)
}

// checkSame encodes text with both tokenizers and requires the same token
// strings; it returns the pruned tokenizer's ids.
func checkSame(orig, pruned *tokenizer.Tokenizer, text string) ([]int, error) {
	a, b := orig.Encode(text), pruned.Encode(text)
	if len(a) != len(b) {
		return nil, fmt.Errorf("encodes to %d tokens with the source tokenizer, %d pruned", len(a), len(b))
	}
	for i := range a {
		ta, _ := orig.IDToToken(a[i])
		tb, _ := pruned.IDToToken(b[i])
		if ta != tb {
			return nil, fmt.Errorf("token %d: %q with the source tokenizer, %q pruned", i, ta, tb)
		}
	}
	return b, nil
}

// checkAnyText checks that text outside the corpus (accents, CJK, emoji,
// invalid UTF-8) still encodes and decodes back byte for byte: every byte
// token was kept.
func checkAnyText(tok *tokenizer.Tokenizer) error {
	for _, s := range []string{"héllo, wörld", "日本語 テキスト", "🙂 ok", "\xff\xfe bad utf-8", "<|im_start|>user\nhi<|im_end|>\n"} {
		if got := string(tok.DecodeBytes(tok.Encode(s))); got != s {
			return fmt.Errorf("%q decodes back as %q", s, got)
		}
	}
	return nil
}

// writeIDs writes ids as little-endian uint16, the training script's input.
func writeIDs(path string, ids []int) error {
	b := make([]byte, 2*len(ids))
	for i, id := range ids {
		if id < 0 || id > 0xffff {
			return fmt.Errorf("%s: token id %d does not fit uint16", path, id)
		}
		binary.LittleEndian.PutUint16(b[2*i:], uint16(id))
	}
	return os.WriteFile(path, b, 0o644)
}
