package main

import (
	"fmt"
	"os"
	"testing"

	"gelo/tokenizer"
)

// TestCloseOverMerges: the parts of every kept token's merges are kept,
// transitively, and nothing else is added.
func TestCloseOverMerges(t *testing.T) {
	merges := [][2]string{{"t", "h"}, {"th", "e"}, {"Ġ", "the"}, {"x", "y"}, {"Ġ", "a"}}
	tests := []struct {
		used []string
		want []string
	}{
		{[]string{"Ġthe"}, []string{"Ġthe", "Ġ", "the", "th", "t", "h", "e"}},
		{[]string{"th"}, []string{"th", "t", "h"}},
		{[]string{"q"}, []string{"q"}},
	}
	for _, tc := range tests {
		keep := map[string]bool{}
		for _, u := range tc.used {
			keep[u] = true
		}
		closeOverMerges(keep, merges)
		want := map[string]bool{}
		for _, w := range tc.want {
			want[w] = true
		}
		if fmt.Sprint(keep) != fmt.Sprint(want) {
			t.Errorf("used %v: kept %v, want %v", tc.used, keep, want)
		}
	}
}

// kjvSample is text from books both in and out of training (Genesis 1:1-3,
// Ruth 1:1, James 1:5): the committed pruned tokenizer must encode it to
// Qwen3's token strings.
const kjvSample = `In the beginning God created the heaven and the earth.
And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters.
And God said, Let there be light: and there was light.
Now it came to pass in the days when the judges ruled, that there was a famine in the land. And a certain man of Bethlehemjudah went to sojourn in the country of Moab, he, and his wife, and his two sons.
If any of you lack wisdom, let him ask of God, that giveth to all men liberally, and upbraideth not; and it shall be given him.
`

// TestCommittedTokenizer checks models/trained's tokenizer against Qwen3's:
// KJV text encodes to the same token strings, text outside the corpus
// round-trips through the byte tokens, the chat template is Qwen3's (not
// flagged as ignored), and the vocabulary is compact.
func TestCommittedTokenizer(t *testing.T) {
	dir := tokenizer.SharedQwen3Dir()
	if dir == "" {
		t.Skip("Qwen3 tokenizer not found (GELO_TOKENIZER_DIR or shared/tokenizers/qwen3 beside the repository): the pruned tokenizer is not compared with it")
	}
	qwen, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	pruned, err := tokenizer.Load("../../models/trained")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkSame(qwen, pruned, kjvSample); err != nil {
		t.Error(err)
	}
	if err := checkAnyText(pruned); err != nil {
		t.Error(err)
	}
	if pruned.IgnoredChatTemplate() {
		t.Error("the pruned tokenizer_config.json's chat_template is not Qwen3's")
	}
	if got, want := pruned.VocabSize(), pruned.ModelVocabSize()+3; got != want {
		t.Errorf("VocabSize %d, want the model vocabulary plus 3 added tokens, %d", got, want)
	}
	for i := 0; i < pruned.VocabSize(); i++ {
		if _, ok := pruned.IDToToken(i); !ok {
			t.Fatalf("id %d is unassigned: ids are not compact", i)
		}
	}
}

// TestPruneRefusesUnknownKeys: a tokenizer.json key this tool does not
// carry over is an error, not silently dropped.
func TestPruneRefusesUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/tokenizer.json", []byte(`{"version":"1.0","surprise":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readRaw(dir); err == nil {
		t.Fatal("readRaw accepted an unknown key")
	}
}
