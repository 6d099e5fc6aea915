package plan_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gelo/device/wire"
	"gelo/models"
	"gelo/models/gguf"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// exportTo writes m as GGUF with matrices of format into dir and opens it.
func exportTo(t *testing.T, m *models.Model, tok plan.Tokenizer, format, dir string) *models.Model {
	t.Helper()
	var buf bytes.Buffer
	if err := plan.ExportGGUF(m, tok, format, &buf); err != nil {
		t.Fatalf("export %s: %v", format, err)
	}
	path := filepath.Join(dir, format+".gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := models.Open(path, 0, nil)
	if err != nil {
		t.Fatalf("open %s: %v", format, err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// greedy decodes steps tokens of m's weights under the options.
func greedy(t *testing.T, w *models.Weights, o plan.Options, steps int) []int {
	t.Helper()
	m, err := plan.Compile(models.Source{}, w.Config, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, done, err := plan.NewSession(plan.EngineOptions{}, w, make([]byte, 32), m, runtime.Options{MaxContext: 80})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	out, err := s.Generate([]int32{1, 2, 3, 4, 5}, runtime.GenerateOptions{MaxTokens: steps})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Round trip: export then load gives the same config and, per format,
// bit-identical tensors (f32, bf16 exactly; q8_0 and q4_0 the blocks'
// values, and requantizing them gives the same blocks, so a quantized
// plan over the GGUF model multiplies exactly the file's blocks), and the
// same greedy tokens as the original holding the file's values under the
// matching plan.
func TestGGUFRoundTrip(t *testing.T) {
	src, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, format := range []string{"f32", "bf16", "q8_0", "q4_0"} {
		g := exportTo(t, src, plan.Tokenizer{}, format, dir)
		want := *src.Config
		want.TorchDType = "float32" // what the weights are in memory: GGUF has no torch dtype
		if !bytes.Equal(g.Config.JSON(), want.JSON()) {
			t.Fatalf("%s: config %s, want %s", format, g.Config.JSON(), want.JSON())
		}
		held := map[string][]float32{} // what the file holds, as f32
		for _, name := range src.Names() {
			a, shape, _ := src.Get(name)
			b, _, err := g.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			vals := a
			if len(shape) == 2 && (format == "q8_0" || format == "q4_0") {
				f := wire.Q8_0
				if format == "q4_0" {
					f = wire.Q4_0
				}
				qa, _ := wire.Quantize(f, a, shape[0], shape[1])
				vals = make([]float32, len(a))
				qa.Dequantize(vals)
				qb, _ := wire.Quantize(f, b, shape[0], shape[1])
				if !bytes.Equal(qa.Data, qb.Data) {
					t.Errorf("%s %s: requantizing the loaded tensor changes its blocks", format, name)
				}
			}
			if !slices.Equal(b, vals) {
				t.Fatalf("%s %s: loaded values differ from the exported ones", format, name)
			}
			held[name] = vals
		}
		// The reference: the original model with the file's values (a
		// quantized file's embedding, gathered in the TEE, is its blocks).
		ref, err := models.NewWeights(src.Config, held)
		if err != nil {
			t.Fatal(err)
		}
		o := plan.Level(passes.LevelNone)
		o.Weights = format
		if format == "f32" || format == "bf16" {
			o.Weights = "f32" // the synthetic weights are bf16-exact already
		}
		wantToks, got := greedy(t, ref, o, 24), greedy(t, g.Weights, o, 24)
		if !slices.Equal(wantToks, got) {
			t.Errorf("%s: GGUF model decodes %v, the original %v", format, got, wantToks)
		}
	}
}

// A GGUF file's own tokenizer encodes what the tokenizer.json it was made
// from encodes, special tokens and chat included.
func TestGGUFTokenizerMatches(t *testing.T) {
	dir := "../../shared/tokenizers/qwen3"
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Skipf("no qwen3 tokenizer at %s", dir)
	}
	tok, err := plan.LoadTokenizer(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := models.Variant(models.DefaultVariant)
	cfg.VocabSize = 151936 // the tokenizer's ids, padded as Qwen3's embedding is
	w, err := models.SynthesizeAs(cfg, 1, models.SynthDType)
	if err != nil {
		t.Fatal(err)
	}
	m := &models.Model{Source: models.Source{Spec: "qwen3-tiny-wide-vocab"}, Weights: w}
	g := exportTo(t, m, tok, "q8_0", t.TempDir())
	gt, err := plan.LoadTokenizer("", g.Path())
	if err != nil {
		t.Fatal(err)
	}
	if gt.Tok == nil {
		t.Fatal("the GGUF file has no tokenizer")
	}
	for _, text := range []string{
		"Hello, world! 你好，世界。", "  leading spaces\tand\ttabs\n\nnew lines", "numbers 12345 and émojis 🙂🙃",
		"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", "don't we'll I'M",
	} {
		a, b := tok.Tok.Encode(text), gt.Tok.Encode(text)
		if !slices.Equal(a, b) {
			t.Errorf("%q: tokenizer.json gives %v, the GGUF tokenizer %v", text, a, b)
		}
	}
	if gt.Tok.VocabSize() != tok.Tok.VocabSize() {
		t.Errorf("vocabulary %d, want %d", gt.Tok.VocabSize(), tok.Tok.VocabSize())
	}
}

// A tensor whose shape disagrees with the metadata is an error naming it.
// defaultAsGGUF is the default variant and its f32 GGUF export's bytes.
func defaultAsGGUF(t *testing.T) (*models.Model, []byte) {
	t.Helper()
	src, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := plan.ExportGGUF(src, plan.Tokenizer{}, "f32", &buf); err != nil {
		t.Fatal(err)
	}
	return src, buf.Bytes()
}

func TestGGUFShapeMismatch(t *testing.T) {
	_, b := defaultAsGGUF(t)
	key := []byte("qwen3.feed_forward_length")
	i := bytes.Index(b, key) + len(key) + 4 // the key, then its u32 type tag
	if b[i] != 192 {
		t.Fatalf("feed_forward_length is %d in the file", b[i])
	}
	b[i] = 96
	path := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(path, b, 0o644)
	_, err := models.Open(path, 0, nil)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("blk.0.ffn_gate.weight has shape [192 64], the metadata implies [96 64]")) {
		t.Fatalf("got %v", err)
	}
}

// A llama-architecture model round-trips too: export applies llama.cpp's
// Q/K row permutation and load undoes it (the same tensors and tokens),
// and the exported file holds the permuted rows.
func TestGGUFLlamaPermutation(t *testing.T) {
	cfg, _ := models.Variant(models.DefaultVariant)
	cfg.ModelType, cfg.Architectures = "llama", []string{"LlamaForCausalLM"}
	w, err := models.SynthesizeAs(cfg, 3, models.SynthDType)
	if err != nil {
		t.Fatal(err)
	}
	src := &models.Model{Source: models.Source{Spec: "tiny-llama"}, Weights: w}
	g := exportTo(t, src, plan.Tokenizer{}, "f32", t.TempDir())
	for _, name := range src.Names() {
		a, _, _ := src.Get(name)
		b, _, err := g.Get(name)
		if err != nil || !slices.Equal(a, b) {
			t.Fatalf("%s: differs after the round trip (%v)", name, err)
		}
	}
	f, err := models.OpenGGUF(g.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	q, _, _ := src.Get("model.layers.0.self_attn.q_proj.weight")
	ti, _ := f.Tensor("blk.0.attn_q.weight")
	stored := make([]float32, len(q))
	if err := gguf.Dequantize(ti.Type, f.Data(ti), stored); err != nil {
		t.Fatal(err)
	}
	d, hd := cfg.HiddenSize, cfg.HeadDimension()
	// Row 1 of GGUF head 0 is HF row hd/2 (the second rotary half's first row).
	if !slices.Equal(stored[1*d:2*d], q[(hd/2)*d:(hd/2+1)*d]) || slices.Equal(stored, q) {
		t.Fatal("the stored q rows are not llama.cpp's permutation of the model's")
	}
	o := plan.Level(passes.LevelNone)
	if want, got := greedy(t, w, o, 16), greedy(t, g.Weights, o, 16); !slices.Equal(want, got) {
		t.Errorf("llama GGUF decodes %v, the original %v", got, want)
	}
}
