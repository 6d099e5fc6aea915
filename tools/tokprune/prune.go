package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// topKeys and modelKeys are the keys of a Hugging Face tokenizer.json and
// of its BPE model, in the order the files write them; a key outside them
// is refused rather than silently dropped.
var (
	topKeys   = []string{"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor", "decoder", "model"}
	modelKeys = []string{"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges", "vocab", "merges"}
)

// addedToken is one added_tokens entry, fields in the file's order.
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// rawTokenizer is a tokenizer.json and its tokenizer_config.json, with the
// parts pruning rewrites decoded and the rest kept as they were.
type rawTokenizer struct {
	top    map[string]json.RawMessage
	model  map[string]json.RawMessage
	vocab  []string // by id
	merges [][2]string
	added  []addedToken
	config map[string]json.RawMessage // tokenizer_config.json
}

func readRaw(dir string) (*rawTokenizer, error) {
	path := filepath.Join(dir, "tokenizer.json")
	r := &rawTokenizer{}
	if err := readJSON(path, &r.top, topKeys); err != nil {
		return nil, err
	}
	if err := decodeField(path, "model", r.top["model"], &r.model); err != nil {
		return nil, err
	}
	if err := checkKeys(path+": model", r.model, modelKeys); err != nil {
		return nil, err
	}
	var vocab map[string]int
	if err := decodeField(path, "model.vocab", r.model["vocab"], &vocab); err != nil {
		return nil, err
	}
	r.vocab = make([]string, len(vocab))
	for tok, id := range vocab {
		if id < 0 || id >= len(vocab) || r.vocab[id] != "" {
			return nil, fmt.Errorf("%s: model.vocab: id %d of %q is not a compact unique id", path, id, tok)
		}
		r.vocab[id] = tok
	}
	if err := decodeField(path, "model.merges", r.model["merges"], &r.merges); err != nil {
		return nil, fmt.Errorf("%v (only the [\"a\", \"b\"] pair form is supported)", err)
	}
	if err := decodeField(path, "added_tokens", r.top["added_tokens"], &r.added); err != nil {
		return nil, err
	}
	cpath := filepath.Join(dir, "tokenizer_config.json")
	if err := readJSON(cpath, &r.config, nil); err != nil {
		return nil, err
	}
	return r, nil
}

func readJSON(path string, v *map[string]json.RawMessage, keys []string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if keys == nil {
		return nil
	}
	return checkKeys(path, *v, keys)
}

func checkKeys(where string, m map[string]json.RawMessage, keys []string) error {
	known := map[string]bool{}
	for _, k := range keys {
		known[k] = true
	}
	for k := range m {
		if !known[k] {
			return fmt.Errorf("%s: key %q is not one this tool knows how to carry over", where, k)
		}
	}
	return nil
}

func decodeField(path, field string, raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %s: %w", path, field, err)
	}
	return nil
}

// isByteToken reports whether tok is one of the 256 single-character
// byte-level tokens (each byte is one rune of the GPT-2 byte alphabet).
func isByteToken(tok string) bool { return len([]rune(tok)) == 1 }

// prune returns the tokenizer reduced to used (token strings), the byte
// tokens, the parts of every kept token's merges (to a fixpoint) and the
// named added tokens; ids are renumbered in the original order.
func (r *rawTokenizer) prune(used map[string]bool, specials []string) (*rawTokenizer, error) {
	keep := map[string]bool{}
	for _, tok := range r.vocab {
		if used[tok] || isByteToken(tok) {
			keep[tok] = true
		}
	}
	if n := countBytes(keep); n != 256 {
		return nil, fmt.Errorf("found %d byte tokens, want 256", n)
	}
	closeOverMerges(keep, r.merges)
	out := &rawTokenizer{top: r.top, model: r.model, config: r.config}
	for _, tok := range r.vocab {
		if keep[tok] {
			out.vocab = append(out.vocab, tok)
		}
	}
	for _, m := range r.merges {
		if keep[m[0]] && keep[m[1]] && keep[m[0]+m[1]] {
			out.merges = append(out.merges, m)
		}
	}
	byContent := map[string]addedToken{}
	for _, a := range r.added {
		byContent[a.Content] = a
	}
	for i, s := range specials {
		a, ok := byContent[s]
		if !ok {
			return nil, fmt.Errorf("added token %q is not in the source tokenizer", s)
		}
		a.ID = len(out.vocab) + i
		out.added = append(out.added, a)
	}
	return out, nil
}

func countBytes(keep map[string]bool) int {
	n := 0
	for tok := range keep {
		if isByteToken(tok) {
			n++
		}
	}
	return n
}

// closeOverMerges adds to keep the parts of every merge whose result is
// kept, until nothing changes: every intermediate token BPE builds on the
// way to a kept token is then kept too.
func closeOverMerges(keep map[string]bool, merges [][2]string) {
	for changed := true; changed; {
		changed = false
		for _, m := range merges {
			if keep[m[0]+m[1]] && (!keep[m[0]] || !keep[m[1]]) {
				keep[m[0]], keep[m[1]] = true, true
				changed = true
			}
		}
	}
}

// write writes tokenizer.json and tokenizer_config.json into dir.
func (r *rawTokenizer) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tj, err := r.tokenizerJSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tj, 0o644); err != nil {
		return err
	}
	cj, err := r.configJSON()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cj, 0o644)
}

// tokenizerJSON writes the keys in the Hugging Face order, the vocabulary
// in id order, one merge a line.
func (r *rawTokenizer) tokenizerJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, k := range topKeys {
		fmt.Fprintf(&b, "  %q: ", k)
		var err error
		switch k {
		case "added_tokens":
			err = writeAdded(&b, r.added)
		case "model":
			err = r.writeModel(&b)
		default:
			b.Write(r.top[k])
		}
		if err != nil {
			return nil, err
		}
		if i < len(topKeys)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

func writeAdded(b *bytes.Buffer, added []addedToken) error {
	b.WriteString("[\n")
	for i, a := range added {
		j, err := marshal(a)
		if err != nil {
			return err
		}
		b.WriteString("    ")
		b.Write(j)
		if i < len(added)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  ]")
	return nil
}

func (r *rawTokenizer) writeModel(b *bytes.Buffer) error {
	b.WriteString("{\n")
	for i, k := range modelKeys {
		fmt.Fprintf(b, "    %q: ", k)
		switch k {
		case "vocab":
			b.WriteString("{\n")
			for id, tok := range r.vocab {
				j, err := marshal(tok)
				if err != nil {
					return err
				}
				fmt.Fprintf(b, "      %s: %d", j, id)
				if id < len(r.vocab)-1 {
					b.WriteByte(',')
				}
				b.WriteByte('\n')
			}
			b.WriteString("    }")
		case "merges":
			b.WriteString("[\n")
			for i, m := range r.merges {
				j, err := marshal(m)
				if err != nil {
					return err
				}
				b.WriteString("      ")
				b.Write(j)
				if i < len(r.merges)-1 {
					b.WriteByte(',')
				}
				b.WriteByte('\n')
			}
			b.WriteString("    ]")
		default:
			raw, ok := r.model[k]
			if !ok {
				raw = json.RawMessage("null")
			}
			b.Write(raw)
		}
		if i < len(modelKeys)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  }")
	return nil
}

// configJSON is the source tokenizer_config.json with added_tokens_decoder
// and additional_special_tokens reduced to the kept added tokens; every
// other key (the chat template among them) is carried over as it was.
func (r *rawTokenizer) configJSON() ([]byte, error) {
	cfg := map[string]any{}
	for k, v := range r.config {
		cfg[k] = v
	}
	dec := map[string]any{}
	var extra []string
	for _, a := range r.added {
		dec[fmt.Sprint(a.ID)] = map[string]any{
			"content": a.Content, "lstrip": a.LStrip, "normalized": a.Normalized,
			"rstrip": a.RStrip, "single_word": a.SingleWord, "special": a.Special,
		}
		if a.Content != "<|endoftext|>" {
			extra = append(extra, a.Content)
		}
	}
	sort.Strings(extra)
	cfg["added_tokens_decoder"] = dec
	cfg["additional_special_tokens"] = extra
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping (tokens hold < and >).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
