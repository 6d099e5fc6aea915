// Package corpus reads the attack harness's prompt corpus: JSON Lines, one
// prompt a line, {"kind": "...", "text": "...", "ids": [...]}. Kinds say
// what the text is (prose, code, zh, numbers, chat); a "chat" prompt is
// formatted with the model's chat template before it is tokenized. "ids"
// holds the Qwen3 tokenization, so runs without the tokenizer (CI) attack
// the same tokens; Tokenize fills or checks it.
package corpus

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"gelo/tokenizer"
)

// Kinds a prompt may have.
var Kinds = []string{"prose", "code", "zh", "numbers", "chat"}

// Prompt is one corpus entry.
type Prompt struct {
	Kind string  `json:"kind"`
	Text string  `json:"text"`
	IDs  []int32 `json:"ids,omitempty"`
}

// maxPromptIDs bounds one prompt's token count: corpus prompts are short.
const maxPromptIDs = 4096

// Parse reads a corpus from its bytes; name labels errors.
func Parse(name string, data []byte) ([]Prompt, error) {
	var out []Prompt
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var p Prompt
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s:%d: trailing data after the prompt object", name, line)
		}
		if !slices.Contains(Kinds, p.Kind) {
			return nil, fmt.Errorf("%s:%d: kind %q: want one of %s", name, line, p.Kind, strings.Join(Kinds, ", "))
		}
		if p.Text == "" && len(p.IDs) == 0 {
			return nil, fmt.Errorf("%s:%d: a prompt needs text or ids", name, line)
		}
		if len(p.IDs) > maxPromptIDs {
			return nil, fmt.Errorf("%s:%d: %d ids, more than %d", name, line, len(p.IDs), maxPromptIDs)
		}
		for _, id := range p.IDs {
			if id < 0 {
				return nil, fmt.Errorf("%s:%d: negative token id %d", name, line, id)
			}
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts", name)
	}
	return out, nil
}

// Load reads a corpus file.
func Load(path string) ([]Prompt, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	return Parse(path, data)
}

// Encode tokenizes one prompt as the harness feeds it.
func Encode(tk *tokenizer.Tokenizer, p Prompt) []int32 {
	var ids []int
	if p.Kind == "chat" {
		ids = tk.EncodeChat([]tokenizer.Message{{Role: "user", Content: p.Text}}, true, false)
	} else {
		ids = tk.Encode(p.Text)
	}
	out := make([]int32, len(ids))
	for i, v := range ids {
		out[i] = int32(v)
	}
	return out
}

// Tokenize fills every prompt's ids with tk (when tk is not nil) and
// returns them; a prompt whose recorded ids differ from tk's is an error,
// so a stale corpus is noticed. Without a tokenizer every prompt must
// carry ids.
func Tokenize(tk *tokenizer.Tokenizer, ps []Prompt) ([][]int32, error) {
	out := make([][]int32, len(ps))
	for i, p := range ps {
		switch {
		case tk != nil:
			ids := Encode(tk, p)
			if p.IDs != nil && !slices.Equal(ids, p.IDs) {
				return nil, fmt.Errorf("corpus prompt %d: recorded ids differ from the tokenizer's (regenerate the corpus)", i)
			}
			out[i] = ids
		case p.IDs != nil:
			out[i] = p.IDs
		default:
			return nil, fmt.Errorf("corpus prompt %d has no ids and no tokenizer was given", i)
		}
	}
	return out, nil
}

// Retokenize encodes every prompt's text with tk, ignoring the recorded
// ids: those are Qwen3's, and a model with a vocabulary of its own (the
// built-in trained model's pruned Qwen3 tokenizer) reads its own ids.
func Retokenize(tk *tokenizer.Tokenizer, ps []Prompt) ([][]int32, error) {
	if tk == nil {
		return nil, fmt.Errorf("corpus: re-tokenize without a tokenizer")
	}
	out := make([][]int32, len(ps))
	for i, p := range ps {
		if out[i] = Encode(tk, p); len(out[i]) == 0 {
			return nil, fmt.Errorf("corpus prompt %d encodes to no token", i)
		}
	}
	return out, nil
}

// Fit maps token ids into a model's vocabulary (id mod vocab): the
// synthetic smoke models have smaller vocabularies than the tokenizer.
// The attacks only need distinct dictionary rows, which the map keeps
// for all but colliding ids.
func Fit(prompts [][]int32, vocab int) [][]int32 {
	out := make([][]int32, len(prompts))
	for i, p := range prompts {
		out[i] = make([]int32, len(p))
		for j, id := range p {
			out[i][j] = id % int32(vocab)
		}
	}
	return out
}

// TokenizerDir finds the Qwen3 tokenizer the corpus ids come from
// (tokenizer.SharedQwen3Dir); "" when there is none.
func TokenizerDir() string { return tokenizer.SharedQwen3Dir() }

// Format writes prompts back as corpus lines (with their ids), after the
// given comment lines.
func Format(comments []string, ps []Prompt) ([]byte, error) {
	var b bytes.Buffer
	for _, c := range comments {
		b.WriteString("# " + c + "\n")
	}
	for _, p := range ps {
		line, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// Anchors are the ids every chat prompt shares (the chat template's),
// which an attacker knows to be present; ids are the prompts' fitted ids.
func Anchors(ps []Prompt, ids [][]int32) []int32 {
	var common []int32
	first := true
	for i, p := range ps {
		if p.Kind != "chat" {
			continue
		}
		if first {
			common, first = slices.Clone(ids[i]), false
			continue
		}
		common = slices.DeleteFunc(common, func(t int32) bool { return !slices.Contains(ids[i], t) })
	}
	slices.Sort(common)
	return slices.Compact(common)
}
