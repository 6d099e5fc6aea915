package corpus

import (
	"bytes"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"gelo/tokenizer"
)

var update = flag.Bool("update", false, "rewrite the corpus ids with the Qwen3 tokenizer")

const corpusPath = "../testdata/corpus.jsonl"

// TestCorpusTokens: the corpus has 64 prompts of every kind, each with the
// Qwen3 tokenizer's ids (checked against the tokenizer when it is there).
func TestCorpusTokens(t *testing.T) {
	ps, err := Load(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) < 64 {
		t.Fatalf("%d prompts, want at least 64", len(ps))
	}
	kinds := map[string]int{}
	for _, p := range ps {
		kinds[p.Kind]++
	}
	for _, k := range Kinds {
		if kinds[k] == 0 {
			t.Errorf("no %s prompt", k)
		}
	}
	dir := TokenizerDir()
	if dir == "" {
		for i, p := range ps {
			if len(p.IDs) == 0 {
				t.Fatalf("prompt %d has no ids", i)
			}
		}
		t.Skip("Qwen3 tokenizer not found (GELO_TOKENIZER_DIR or ../shared/tokenizers/qwen3): ids not re-checked")
	}
	tk, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		for i := range ps {
			ps[i].IDs = nil
		}
	}
	ids, err := Tokenize(tk, ps)
	if err != nil {
		t.Fatal(err)
	}
	if !*update {
		return
	}
	for i := range ps {
		ps[i].IDs = ids[i]
	}
	old, _ := os.ReadFile(corpusPath)
	var comments []string
	for _, line := range strings.Split(string(old), "\n") {
		if strings.HasPrefix(line, "# ") {
			comments = append(comments, strings.TrimPrefix(line, "# "))
		}
	}
	data, err := Format(comments, ps)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, old) {
		if err := os.WriteFile(corpusPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseRefusals(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "no prompts"},
		{`{"kind":"poetry","text":"x"}`, `kind "poetry"`},
		{`{"kind":"prose"}`, "needs text or ids"},
		{`{"kind":"prose","text":"x","extra":1}`, "unknown field"},
		{`{"kind":"prose","text":"x"} {}`, "trailing"},
		{`{"kind":"prose","ids":[-1]}`, "negative"},
		{"# c\n{\"kind\":\"prose\",\"text\":\"a\"}\nnot json", "c:3"},
	} {
		if _, err := Parse("c", []byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestFit(t *testing.T) {
	got := Fit([][]int32{{5, 40000, 151643}}, 32768)
	if got[0][0] != 5 || got[0][1] != 40000-32768 || got[0][2] != 151643%32768 {
		t.Fatalf("Fit: %v", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"kind":"chat","text":"hi","ids":[1,2]}`))
	f.Add([]byte("# x\n{\"kind\":\"zh\",\"text\":\"你好\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := Parse("f", data)
		if err != nil {
			return
		}
		for _, p := range ps {
			if len(p.IDs) > maxPromptIDs || (p.Text == "" && len(p.IDs) == 0) {
				t.Fatalf("accepted %+v", p)
			}
		}
	})
}

func TestAnchors(t *testing.T) {
	ps := []Prompt{{Kind: "chat"}, {Kind: "prose"}, {Kind: "chat"}}
	ids := [][]int32{{9, 1, 2, 7}, {1, 2, 3}, {2, 1, 8, 9}}
	if got := Anchors(ps, ids); !slices.Equal(got, []int32{1, 2, 9}) {
		t.Fatalf("Anchors = %v, want [1 2 9] (the ids every chat prompt shares)", got)
	}
	if got := Anchors(ps[1:2], ids[1:2]); got != nil {
		t.Fatalf("no chat prompt: %v", got)
	}
}

// TestRetokenize: the built-in trained model's pruned tokenizer gives
// other ids than the recorded Qwen3 ones; Tokenize calls that a stale
// corpus, Retokenize encodes the text with it (every prompt, Chinese and
// code included: the tokenizer keeps every byte).
func TestRetokenize(t *testing.T) {
	ps, err := Load("../testdata/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.Load("../../models/trained")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Tokenize(tk, ps); err == nil {
		t.Fatal("Tokenize with another vocabulary's tokenizer: no stale-corpus error")
	}
	ids, err := Retokenize(tk, ps)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if !slices.Equal(ids[i], Encode(tk, p)) {
			t.Errorf("prompt %d: %v, want its text's ids", i, ids[i])
		}
		if got := tk.Decode(toInts(ids[i])); p.Kind != "chat" && got != p.Text {
			t.Errorf("prompt %d does not round-trip: %q", i, got)
		}
	}
	if _, err := Retokenize(nil, ps); err == nil {
		t.Error("Retokenize without a tokenizer: no error")
	}
}

func toInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, v := range ids {
		out[i] = int(v)
	}
	return out
}
