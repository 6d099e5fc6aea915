package plan_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gelo/formats"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// TestPreflight: the figures add up, counts out of range are ErrPreflight,
// a need above the limit is ErrMemory, and no value overflows.
func TestPreflight(t *testing.T) {
	cfg, err := models.Variant("qwen3-8b")
	if err != nil {
		t.Fatal(err)
	}
	r := plan.Run{Config: cfg, Weights: "bf16", Sequences: 2, MaxContext: 40960, MaxTokens: 16, ShieldK: 8, Limit: 1 << 50}
	n, err := plan.Preflight(r)
	if err != nil {
		t.Fatal(err)
	}
	// 36 layers x K and V x 2 sequences x 40960 x 8 heads x 128 x 4 bytes.
	if want := int64(36 * 2 * 2 * 40960 * 8 * 128 * 4); n.KV != want {
		t.Errorf("KV %d, want %d", n.KV, want)
	}
	if n.Weights != 4*cfg.ParamCount() || n.DeviceWeights != 2*matrixElems(cfg) {
		t.Errorf("weights %d / %d for %d params", n.Weights, n.DeviceWeights, cfg.ParamCount())
	}
	if n.Total != n.Weights+n.DeviceWeights+n.KV+n.History+n.Arena+n.Shields+n.Workers {
		t.Errorf("total %d is not the sum of %+v", n.Total, n)
	}
	r.Limit = n.Total - 1
	if _, err := plan.Preflight(r); !errors.Is(err, plan.ErrMemory) {
		t.Errorf("a limit one byte short: %v", err)
	}
	for name, edit := range map[string]func(*plan.Run){
		"context":    func(r *plan.Run) { r.MaxContext = math.MaxInt },
		"tokens":     func(r *plan.Run) { r.MaxTokens = math.MaxInt },
		"workers":    func(r *plan.Run) { r.Workers = 1 << 20 },
		"shield":     func(r *plan.Run) { r.ShieldK = math.MaxInt },
		"batch":      func(r *plan.Run) { r.Sequences = math.MaxInt },
		"prompt":     func(r *plan.Run) { r.PromptLen = r.MaxContext + 1 },
		"no context": func(r *plan.Run) { r.MaxContext = 0 },
	} {
		r := r
		r.Limit = 1 << 50
		edit(&r)
		if _, err := plan.Preflight(r); !errors.Is(err, plan.ErrPreflight) {
			t.Errorf("%s out of range: %v", name, err)
		}
	}
	if _, err := models.Mul(1<<40, 1<<30); !errors.Is(err, models.ErrOverflow) {
		t.Errorf("Mul(2^40, 2^30): %v", err)
	}
	if _, err := models.Add(math.MaxInt64, 1); !errors.Is(err, models.ErrOverflow) {
		t.Errorf("Add(MaxInt64, 1): %v", err)
	}
	for in, want := range map[string]int64{"512M": 512 << 20, "8G": 8 << 30, "1.5GiB": 3 << 29, "4096": 4096} {
		if got, err := plan.ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1G", "lots", "1e30", "NaN", "9E"} {
		if _, err := plan.ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) accepted", in)
		}
	}
}

// TestPreflightQ4K: under q4_k a matrix whose rows are whole 256-value
// super-blocks is counted at Q4_K's 144 bytes a block, one whose rows are
// not (qwen3-tiny's 64-wide inputs) at q8_0's 34 bytes per 32 values, the
// format it is held in: the sizes here are written out, not read from the
// format record.
func TestPreflightQ4K(t *testing.T) {
	for _, variant := range []string{"qwen3-0.6b", "qwen3-tiny"} {
		cfg, err := models.Variant(variant)
		if err != nil {
			t.Fatal(err)
		}
		n, err := plan.Preflight(plan.Run{Config: cfg, Weights: "q4_k", Limit: 1 << 50})
		if err != nil {
			t.Fatal(err)
		}
		var want, q8 int64
		for _, s := range cfg.TensorSpecs() {
			if len(s.Shape) != 2 {
				continue
			}
			rows, cols := int64(s.Shape[0]), int64(s.Shape[1])
			if cols%256 == 0 {
				want += rows * cols / 256 * 144
			} else {
				want += rows * cols / 32 * 34
				q8++
			}
		}
		if n.DeviceWeights != want {
			t.Errorf("%s: device weights %d, want %d", variant, n.DeviceWeights, want)
		}
		if (variant == "qwen3-tiny") != (q8 > 0) {
			t.Errorf("%s: %d matrices fall back to q8_0", variant, q8)
		}
	}
}

// TestPreflightFormats: every plan format's device copy is its matrices at
// the format's bytes a value (and int8's scale a row), and f32 has none (the device shares the
// TEE's copy).
func TestPreflightFormats(t *testing.T) {
	cfg, err := models.Variant("qwen3-0.6b")
	if err != nil {
		t.Fatal(err)
	}
	for format, want := range map[string]int64{
		"f32": 0, "": 0, "bf16": 2 * matrixElems(cfg), "bf16dot": 2 * matrixElems(cfg),
		"q8_0": matrixElems(cfg) / 32 * 34, "q4_0": matrixElems(cfg) / 32 * 18,
		"int8": matrixElems(cfg) + 4*matrixRows(cfg), // a byte a value and a float32 scale a row
	} {
		n, err := plan.Preflight(plan.Run{Config: cfg, Weights: format, Limit: 1 << 50})
		if err != nil {
			t.Fatal(err)
		}
		if n.DeviceWeights != want {
			t.Errorf("%q: device weights %d, want %d", format, n.DeviceWeights, want)
		}
	}
	if _, err := plan.Preflight(plan.Run{Config: cfg, Weights: "q5_k", Limit: 1 << 50}); err == nil || !strings.Contains(err.Error(), `"q5_k"`) {
		t.Errorf("an unknown format: %v", err)
	}
}

// matrixElems counts the values of cfg's matrices (every 2-D tensor).
func matrixElems(cfg *models.Config) int64 {
	var n int64
	for _, s := range cfg.TensorSpecs() {
		if len(s.Shape) == 2 {
			n += int64(s.Shape[0]) * int64(s.Shape[1])
		}
	}
	return n
}

// matrixRows counts the rows of cfg's matrices (every 2-D tensor).
func matrixRows(cfg *models.Config) int64 {
	var n int64
	for _, s := range cfg.TensorSpecs() {
		if len(s.Shape) == 2 {
			n += int64(s.Shape[0])
		}
	}
	return n
}

// TestPreflightLattice: an lwe plan's hints, public matrices, integers,
// probe vectors and pads, as the backend holds them after a prefill and
// decode steps with every op offloaded, stay within the preflight's
// estimate for the run, which counts them in its total.
func TestPreflightLattice(t *testing.T) {
	const prompt, steps = 12, 8
	m, w := compiledTiny(t, passes.LevelLWE, formats.Int8, 2, true)
	eng, err := plan.NewEngine(plan.EngineOptions{}, w, make([]byte, 32), m)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: 64})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, prompt)
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	if _, err := s.Prefill(ids); err != nil {
		t.Fatal(err)
	}
	for range steps {
		if _, err := s.Decode(3); err != nil {
			t.Fatal(err)
		}
	}
	held := eng.CPU.LatticeBytes()
	lv, _ := passes.LookupLevel(passes.LevelLWE)
	n, err := plan.Preflight(plan.Run{Config: w.Config, Weights: formats.Int8, Sequences: 1, MaxContext: 64, PromptLen: prompt, LWE: lv.LWE, Limit: 1 << 50})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lwe state held %s, preflight %s (of a total %s)", plan.Bytes(held), plan.Bytes(n.Lattice), plan.Bytes(n.Total))
	if held == 0 || held > n.Lattice {
		t.Errorf("the backend holds %d bytes of lwe state, the preflight counts %d", held, n.Lattice)
	}
	if none, _ := plan.Preflight(plan.Run{Config: w.Config, Weights: formats.Int8, Sequences: 1, MaxContext: 64, PromptLen: prompt, Limit: 1 << 50}); none.Total+n.Lattice != n.Total {
		t.Errorf("the total %d does not count the lwe state %d (without it %d)", n.Total, n.Lattice, none.Total)
	}
}
