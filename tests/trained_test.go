package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"gelo/models"
	"gelo/runtime"
	"gelo/tokenizer"
)

// trainedDir is the small model trained on the KJV (issue 51,
// tools/train); trainedGolden pins what it is and what it says.
const (
	trainedDir    = "../models/trained"
	trainedGolden = "testdata/trained_greedy.json"
)

// trainedGoldenFile is the golden record: the files' SHA-256 and the
// greedy continuation of a fixed prompt. Regenerate it, after retraining
// on purpose, with GELO_UPDATE_GOLDEN=1 go test ./tests -run TestTrainedModel.
type trainedGoldenFile struct {
	SHA256 map[string]string `json:"sha256"`
	Prompt string            `json:"prompt"`
	Tokens []int             `json:"tokens"`
	Text   string            `json:"text"`
}

// TestTrainedModel loads models/trained through the real loaders (config,
// bf16 safetensors, tokenizer) and checks that the committed model is the
// one the golden file pins: the files' checksums, the config's shape, and
// the greedy continuation of "In the beginning" token for token.
func TestTrainedModel(t *testing.T) {
	w, err := models.Load(trainedDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	tok, err := tokenizer.Load(trainedDir)
	if err != nil {
		t.Fatal(err)
	}
	checkTrainedConfig(t, w.Config, tok)

	got := trainedGoldenFile{SHA256: map[string]string{}, Prompt: "In the beginning"}
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(trainedDir, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		got.SHA256[name] = hex.EncodeToString(sum[:])
	}
	m := compileModule(t, w.Config, models.TraceOptions{}, plain)
	s := newSession(t, m, w, 0, 128)
	var prompt []int32
	for _, id := range tok.Encode(got.Prompt) {
		prompt = append(prompt, int32(id))
	}
	if got.Tokens, err = s.Generate(prompt, runtime.GenerateOptions{MaxTokens: 32}); err != nil {
		t.Fatal(err)
	}
	got.Text = tok.Decode(got.Tokens)

	if os.Getenv("GELO_UPDATE_GOLDEN") != "" {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(trainedGolden, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want trainedGoldenFile
	b, err := os.ReadFile(trainedGolden)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", trainedGolden, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("models/trained differs from %s:\ngot  %+v\nwant %+v", trainedGolden, got, want)
	}
}

// checkTrainedConfig checks what the training script promises: a Qwen3
// decoder with q/k norms and tied embeddings, bf16 weights, and a
// vocabulary exactly the pruned tokenizer's, with bos and eos ids that
// name its <|endoftext|>.
func checkTrainedConfig(t *testing.T, cfg *models.Config, tok *tokenizer.Tokenizer) {
	t.Helper()
	eot, ok := tok.TokenToID("<|endoftext|>")
	if !ok {
		t.Fatal("the trained tokenizer has no <|endoftext|>")
	}
	checks := []struct {
		field     string
		got, want any
	}{
		{"model_type", cfg.ModelType, "qwen3"},
		{"vocab_size", cfg.VocabSize, tok.VocabSize()},
		{"num_hidden_layers", cfg.NumHiddenLayers, 4},
		{"hidden_size", cfg.HiddenSize, 192},
		{"num_attention_heads/num_key_value_heads", [2]int{cfg.NumAttentionHeads, cfg.NumKeyValueHeads}, [2]int{4, 2}},
		{"head_dim", cfg.HeadDimension(), 48},
		{"tie_word_embeddings", cfg.TieWordEmbeddings, true},
		{"torch_dtype", cfg.TorchDType, "bfloat16"},
		{"bos_token_id", cfg.BOSTokenID, eot},
		{"eos_token_id", []int(cfg.EOSTokenIDs), []int{eot}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("config %s = %v, want %v", c.field, c.got, c.want)
		}
	}
}
