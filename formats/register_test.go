package formats_test

import (
	"bytes"
	"slices"
	"testing"

	"gelo/device/wire"
	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/models/gguf"
	"gelo/plan"
	"gelo/runtime"
)

// A new weight format is one record: registered here (a mix like
// llama.cpp's Q4_K_M: q4_k super-blocks where the rows are whole ones,
// q4_0 where not, where the built-in q4_k falls back to q8_0), it compiles
// (--weights takes it, each matrix in the dtype the record says), the
// preflight counts it, the engine runs it with the existing kernels (on
// qwen3-tiny every row is 64 or 192 wide, so every matrix falls back and
// the tokens are q4_0's, bit for bit) and the GGUF export writes it, with
// no switch anywhere naming it.
func TestRegisteredFormatRunsEverywhere(t *testing.T) {
	const name = "q4_k-q4_0"
	err := formats.Register(formats.Format{Name: name, Doc: "test: q4_k, q4_0 where the rows are not whole super-blocks",
		DType: ir.Q4_K, Input: ir.Q8_0, Fallback: formats.Q4_0, Plan: true, Export: true,
		GGUF: gguf.Q4_K, GGUFFileType: 15, Wire: wire.Q4_K, Devices: []string{formats.DeviceLocal},
		Encode: wire.QuantizeQ4_K, Decode: wire.DequantizeQ4_K})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { formats.Unregister(name) })
	if !slices.Contains(formats.PlanNames(), name) {
		t.Fatalf("PlanNames %v lacks %s", formats.PlanNames(), name)
	}

	// Compile at widths where some rows are whole super-blocks.
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	wide := *cfg
	wide.HiddenSize, wide.IntermediateSize = 256, 320
	opt := withWeights(name)
	m, err := plan.Compile(models.Source{}, &wide, opt, nil)
	if err != nil {
		t.Fatalf("compile --weights %s: %v", name, err)
	}
	if m.Meta["weights"] != name {
		t.Errorf("meta weights %q, want %q", m.Meta["weights"], name)
	}
	seen := map[ir.DType]int{}
	for _, g := range m.Graphs {
		for _, n := range g.Nodes {
			if n.Op != ir.OpWeight || !n.Type.DType.IsQuantized() {
				continue
			}
			cols := n.Type.Shape[n.Type.Rank()-1].Size
			want := ir.Q4_0
			if cols%256 == 0 {
				want = ir.Q4_K
			}
			if n.Type.DType != want {
				t.Errorf("weight %v, rows of %d: %v, want %v", n.Attrs, cols, n.Type.DType, want)
			}
			seen[n.Type.DType]++
		}
	}
	if seen[ir.Q4_K] == 0 || seen[ir.Q4_0] == 0 {
		t.Errorf("matrices by dtype %v: want both q4_k and q4_0", seen)
	}

	// The preflight counts each matrix in the dtype it is held in.
	need, err := plan.Preflight(plan.Run{Config: &wide, Weights: name, Limit: 1 << 50})
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, s := range wide.TensorSpecs() {
		if len(s.Shape) == 2 {
			if r, c := int64(s.Shape[0]), int64(s.Shape[1]); c%256 == 0 {
				want += r * c / 256 * 144
			} else {
				want += r * c / 32 * 18
			}
		}
	}
	if need.DeviceWeights != want {
		t.Errorf("preflight: device weights %d, want %d", need.DeviceWeights, want)
	}

	// It runs, and where every matrix falls back it is q4_0's plan.
	src, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got := greedy(t, src.Weights, withWeights(name))
	ref := greedy(t, src.Weights, withWeights(formats.Q4_0))
	if !slices.Equal(got, ref) {
		t.Errorf("tokens %v, q4_0's %v", got, ref)
	}

	// The export writes it (tiny's matrices in the fallback's type).
	var buf bytes.Buffer
	if err := plan.ExportGGUF(src, plan.Tokenizer{}, name, &buf); err != nil {
		t.Fatalf("export: %v", err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range f.Tensors {
		if len(ti.Dims) == 2 && ti.Type != gguf.Q4_0 {
			t.Errorf("exported %s as %v, want Q4_0", ti.Name, ti.Type)
		}
	}
}

// withWeights is the default level's options with weights in format.
func withWeights(format string) plan.Options {
	o := plan.Defaults()
	o.Weights = format
	return o
}

// greedy decodes 16 tokens of w's weights under the options.
func greedy(t *testing.T, w *models.Weights, o plan.Options) []int {
	t.Helper()
	m, err := plan.Compile(models.Source{}, w.Config, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, done, err := plan.NewSession(plan.EngineOptions{}, w, make([]byte, 32), m, runtime.Options{MaxContext: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	out, err := s.Generate([]int32{1, 2, 3, 4, 5}, runtime.GenerateOptions{MaxTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
