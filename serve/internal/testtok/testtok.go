// Package testtok builds a small byte-level BPE tokenizer for the server's
// tests and load runs: the 256 byte tokens, a few merges, and the Qwen3
// chat control tokens, 270 ids in all, so that every id lies inside
// qwen3-tiny's vocabulary of 512 (the built-in model has no tokenizer of
// its own). It is not the Qwen3 tokenizer: only its shape.
package testtok

import (
	"encoding/json"

	"gelo/tokenizer"
)

// Merges are common English pairs, so that tokens and bytes differ.
var merges = [][2]string{{"t", "h"}, {"th", "e"}, {" ", "t"}, {"e", "r"}, {"i", "n"}, {" ", "a"}, {"o", "n"}, {"r", "e"}, {" ", "s"}, {"e", "n"}}

// Special tokens, after the byte tokens and merges.
var specials = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}

// New returns the tokenizer (EOS <|im_end|>).
func New() (*tokenizer.Tokenizer, error) {
	tj, cj := Files()
	return tokenizer.New(tj, cj)
}

// Files returns tokenizer.json and tokenizer_config.json.
func Files() (tokenizerJSON, configJSON []byte) {
	var byteToRune [256]rune
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
	}
	enc := func(s string) string {
		var r []rune
		for _, c := range []byte(s) {
			r = append(r, byteToRune[c])
		}
		return string(r)
	}
	vocab := map[string]int{}
	for b := range 256 {
		vocab[string(byteToRune[b])] = b
	}
	var ms []string
	for _, m := range merges {
		a, b := enc(m[0]), enc(m[1])
		if _, ok := vocab[a+b]; !ok {
			vocab[a+b] = len(vocab)
		}
		ms = append(ms, a+" "+b)
	}
	var added []map[string]any
	for i, s := range specials {
		added = append(added, map[string]any{"id": len(vocab) + i, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	bl := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
	doc := map[string]any{
		"version":      "1.0",
		"added_tokens": added,
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": tokenizer.QwenPattern}, "behavior": "Isolated", "invert": false},
			bl,
		}},
		"post_processor": bl,
		"decoder":        bl,
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": vocab, "merges": ms},
	}
	tj, err := json.Marshal(doc)
	if err != nil {
		panic(err) // maps of strings and numbers always marshal
	}
	cj, _ := json.Marshal(map[string]any{"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": nil})
	return tj, cj
}
