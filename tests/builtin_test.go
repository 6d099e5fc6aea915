package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"reflect"
	"testing"

	"gelo/models"
	"gelo/models/trained"
	"gelo/plan"
	"gelo/runtime"
)

// TestBuiltinTrainedGolden: the model built into the binary (gelo's
// default --model) is the one tests/testdata/trained_greedy.json pins:
// its embedded files have the golden SHA-256s, and loaded as gelo loads it
// (OpenPrivate: sealed reads from the binary; its own tokenizer) it
// continues the golden prompt with the golden tokens and text.
func TestBuiltinTrainedGolden(t *testing.T) {
	var want trainedGoldenFile
	b, err := os.ReadFile(trainedGolden)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", trainedGolden, err)
	}
	fsys, ok := models.Builtin(models.BuiltinModel)
	if !ok {
		t.Fatalf("no built-in model %s", models.BuiltinModel)
	}
	got := trainedGoldenFile{SHA256: map[string]string{}, Prompt: want.Prompt}
	for _, name := range trained.FileNames {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		got.SHA256[name] = hex.EncodeToString(sum[:])
	}
	m, err := models.OpenPrivate(models.BuiltinModel, 0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tok, err := plan.ModelTokenizer("", m)
	if err != nil || tok.Tok == nil {
		t.Fatalf("the built-in model's tokenizer: %v (none: %v)", err, tok.Tok == nil)
	}
	checkTrainedConfig(t, m.Config, tok.Tok)
	s := newSession(t, compileModule(t, m.Config, models.TraceOptions{}, plain), m.Weights, 0, 128)
	var prompt []int32
	for _, id := range tok.Tok.Encode(got.Prompt) {
		prompt = append(prompt, int32(id))
	}
	if got.Tokens, err = s.Generate(prompt, runtime.GenerateOptions{MaxTokens: len(want.Tokens)}); err != nil {
		t.Fatal(err)
	}
	got.Text = tok.Tok.Decode(got.Tokens)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the built-in model differs from %s:\ngot  %+v\nwant %+v", trainedGolden, got, want)
	}
}
