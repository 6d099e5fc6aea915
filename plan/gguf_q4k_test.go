package plan_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gelo/device/wire"
	"gelo/formats"
	"gelo/models"
	"gelo/models/gguf"
	"gelo/passes"
	"gelo/plan"
)

// q4kConfig is qwen3-tiny at widths of whole Q4_K super-blocks (256).
func q4kConfig(t *testing.T, arch string, tied bool) *models.Config {
	t.Helper()
	cfg, err := models.Variant(models.DefaultVariant)
	if err != nil {
		t.Fatal(err)
	}
	cfg.HiddenSize, cfg.IntermediateSize, cfg.HeadDim = 256, 512, 64
	cfg.TieWordEmbeddings = tied
	if arch == "llama" {
		cfg.ModelType, cfg.Architectures, cfg.HeadDim = "llama", []string{"LlamaForCausalLM"}, 0
	}
	return cfg
}

// TestGGUFQ4K: export --type q4_k writes every matrix as gelo's Q4_K
// blocks and loading keeps them byte for byte (llama files: the rows
// permuted on export and back on load), with values that decode them
// exactly; exporting the loaded model again writes the same tensor bytes; a q4_k
// plan over the file multiplies its blocks (it decodes the tokens of a
// q4_k plan over the original model holding the file's embedding values),
// the same at the default level (TEE-local) as at none (device), and
// tracks a plan over the dequantized f32 weights.
func TestGGUFQ4K(t *testing.T) {
	for _, arch := range []string{"qwen3", "llama"} {
		cfg := q4kConfig(t, arch, arch == "llama")
		w, err := models.SynthesizeAs(cfg, 5, models.SynthDType)
		if err != nil {
			t.Fatal(err)
		}
		src := &models.Model{Source: models.Source{Spec: "tiny-" + arch}, Weights: w}
		dir := t.TempDir()
		g := exportTo(t, src, plan.Tokenizer{}, "q4_k", dir)
		held := map[string][]float32{}
		for _, name := range src.Names() {
			a, shape, _ := src.Get(name)
			b, _, err := g.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			held[name] = b
			sb, ok := g.Blocks(name)
			if len(shape) != 2 {
				if ok || !slices.Equal(a, b) {
					t.Fatalf("%s %s: a vector changed or has blocks", arch, name)
				}
				continue
			}
			qa, err := wire.Quantize(wire.Q4_K, a, shape[0], shape[1])
			if err != nil {
				t.Fatal(err)
			}
			if !ok || sb.Type != gguf.Q4_K || !bytes.Equal(sb.Data, qa.Data) {
				t.Fatalf("%s %s: the loaded blocks are not the exported ones", arch, name)
			}
			vals := make([]float32, len(a))
			if err := qa.Dequantize(vals); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(b, vals) {
				t.Fatalf("%s %s: loaded values are not the blocks' values", arch, name)
			}
		}
		// Export the loaded model again: the stored blocks are written
		// as they are.
		first, err := os.ReadFile(filepath.Join(dir, "q4_k.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		var again bytes.Buffer
		if err := plan.ExportGGUF(g, plan.Tokenizer{}, "q4_k", &again); err != nil {
			t.Fatal(err)
		}
		f1, err := gguf.Parse(first)
		if err != nil {
			t.Fatal(err)
		}
		f2, err := gguf.Parse(again.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range src.Names() {
			gn := models.GGUFName(name)
			t1, ok1 := f1.Tensor(gn)
			t2, ok2 := f2.Tensor(gn)
			if !ok1 || !ok2 || t1.Type != t2.Type || !bytes.Equal(f1.Data(t1), f2.Data(t2)) {
				t.Fatalf("%s: re-exporting the loaded q4_k file changes tensor %s", arch, gn)
			}
		}

		o := plan.Level(passes.LevelNone)
		o.Weights = formats.Q4_K
		got := greedy(t, g.Weights, o, 32)
		// The default level keeps every B = 1 matmul in the TEE, with
		// the kernel the local device runs at none.
		oe := plan.Level(passes.LevelExact)
		oe.Weights = formats.Q4_K
		if exact := greedy(t, g.Weights, oe, 32); !slices.Equal(exact, got) {
			t.Errorf("%s: q4_k plan decodes %v at exact, %v at none", arch, exact, got)
		}
		if arch == "qwen3" {
			// Untied: the original's matrices quantize to the file's
			// blocks; only the gathered embedding must hold the file's
			// values.
			ref := map[string][]float32{}
			for _, name := range src.Names() {
				ref[name], _, _ = src.Get(name)
			}
			ref[models.EmbedName] = held[models.EmbedName]
			rw, err := models.NewWeights(src.Config, ref)
			if err != nil {
				t.Fatal(err)
			}
			if want := greedy(t, rw, o, 32); !slices.Equal(got, want) {
				t.Errorf("q4_k plan over the file decodes %v, over the original %v", got, want)
			}
		}
		hw, err := models.NewWeights(src.Config, held)
		if err != nil {
			t.Fatal(err)
		}
		f32 := greedy(t, hw, plan.Level(passes.LevelNone), 32)
		agree := 0
		for agree < len(f32) && agree < len(got) && f32[agree] == got[agree] {
			agree++
		}
		t.Logf("%s: q4_k plan and f32 plan over the dequantized weights agree on %d of 32 greedy tokens", arch, agree)
		if agree < 4 {
			t.Errorf("%s: q4_k plan %v, f32 plan on the dequantized weights %v", arch, got, f32)
		}
	}
}
