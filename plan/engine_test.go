package plan_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"gelo/formats"
	"gelo/ir"
	"gelo/lower/vulkan"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// engineModule compiles qwen3-tiny widened to rows of whole q4_k blocks
// (256 values: at its own 64 every q4_k weight is its q8_0 fallback), one
// layer, at level with the given weights and KV cache dtype, over f32
// synthetic weights; all forces every linear op across, else the offload
// decision stands.
func engineModule(t *testing.T, level, weights string, kv ir.DType, all bool) (*ir.Module, *models.Weights) {
	t.Helper()
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.HiddenSize, cfg.IntermediateSize, cfg.HeadDim, cfg.NumHiddenLayers = 256, 256, 64, 1
	o := plan.Level(level)
	o.OffloadAll = all
	o.Weights = weights
	o.Trace.KVDType = kv
	m, err := plan.Compile(models.Source{}, cfg, o, nil)
	if err != nil {
		t.Fatalf("%s %s kv %v: %v", level, weights, kv, err)
	}
	w, err := models.SynthesizeAs(cfg, 21, "f32")
	if err != nil {
		t.Fatal(err)
	}
	return m, w
}

// TestNewEngineRefusesWhatTheRecordsDecline: a plan the chosen engine's
// record does not take is refused before anything is opened (so these
// run without a Vulkan driver), as a usage error (ErrEngine) naming what
// the engine takes, the plan's flag and where it would run.
func TestNewEngineRefusesWhatTheRecordsDecline(t *testing.T) {
	for _, tc := range []struct {
		name           string
		eo             plan.EngineOptions
		level, weights string
		kv             ir.DType
		want           string
	}{
		{"gomlx forward, bf16 cache", plan.EngineOptions{Backend: "gomlx"}, passes.LevelNone, formats.F32, ir.BF16,
			"--backend gomlx keeps an f32 KV cache; this plan was compiled with --kv-dtype bf16 (use --backend cpu, or compile with --kv-dtype f32)"},
		{"vulkan forward, f16 cache", plan.EngineOptions{Backend: "vulkan"}, passes.LevelNone, formats.F32, ir.F16,
			"--backend vulkan keeps an f32 KV cache; this plan was compiled with --kv-dtype f16"},
		{"gomlx forward, bf16dot", plan.EngineOptions{Backend: "gomlx"}, passes.LevelNone, formats.BF16Dot, ir.F32,
			"--backend gomlx takes --weights f32 or bf16; this plan was compiled with --weights bf16dot (use --backend cpu, or compile with --weights f32 or bf16)"},
		{"gomlx forward, q8_0", plan.EngineOptions{Backend: "gomlx"}, passes.LevelNone, formats.Q8_0, ir.F32,
			"--backend gomlx takes --weights f32 or bf16; this plan was compiled with --weights q8_0 (use --backend cpu or --backend vulkan"},
		{"vulkan forward, q4_k", plan.EngineOptions{Backend: "vulkan"}, passes.LevelNone, formats.Q4_K, ir.F32,
			"--backend vulkan takes --weights f32, bf16, q8_0 or q4_0; this plan was compiled with --weights q4_k (use --backend cpu,"},
		{"vulkan forward, protected", plan.EngineOptions{Backend: "vulkan"}, passes.Level8x4, formats.F32, ir.F32,
			"--backend vulkan runs unprotected plans only (--security none), not --security gelo-8x4; a protected plan runs its device side on it with --backend cpu --device vulkan"},
		{"gomlx device under a protected plan, bf16dot", plan.EngineOptions{Backend: "gomlx", GomlxBackend: "go"}, passes.Level8x4, formats.BF16Dot, ir.F32,
			"the device of --backend gomlx (gomlx:go) takes --weights f32, bf16, q8_0, q4_0, q4_k or int8; this plan was compiled with --weights bf16dot and multiplies on the device (use --backend cpu --device local,"},
		{"cpu with the gomlx device, bf16dot", plan.EngineOptions{Device: "gomlx:go"}, passes.LevelNone, formats.BF16Dot, ir.F32,
			"--device gomlx:go takes --weights f32, bf16, q8_0, q4_0, q4_k or int8; this plan was compiled with --weights bf16dot"},
		{"cpu with the vulkan device, q4_k", plan.EngineOptions{Device: "vulkan:0"}, passes.Level8x4, formats.Q4_K, ir.F32,
			"--device vulkan:0 takes --weights f32, bf16, q8_0, q4_0 or int8; this plan was compiled with --weights q4_k and multiplies on the device"},
		{"recorded vulkan, bf16dot", plan.EngineOptions{Backend: "vulkan", Spy: true}, passes.LevelNone, formats.BF16Dot, ir.F32,
			"the device of --backend vulkan (vulkan) takes --weights f32, bf16, q8_0, q4_0 or int8"},
		{"unknown backend", plan.EngineOptions{Backend: "tpu"}, passes.LevelNone, formats.F32, ir.F32,
			`--backend "tpu": want cpu, gomlx or vulkan`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, w := engineModule(t, tc.level, tc.weights, tc.kv, true)
			eng, err := plan.NewEngine(tc.eo, w, make([]byte, 32), m)
			if err == nil {
				eng.Close()
				t.Fatalf("accepted; want %q", tc.want)
			}
			if !errors.Is(err, plan.ErrEngine) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want ErrEngine and %q", err, tc.want)
			}
		})
	}
}

// TestNewEngineTakesWhatTheRecordsTake: the records do not over-refuse. A
// protected plan on --backend gomlx keeps its cache in the TEE (the cpu
// backend), so an f16 cache runs there and gives the cpu backend's
// greedy tokens (before the records it was refused by the backend's
// name); a bf16dot plan at exact places no matmul on the device, so a
// device without the bf16 dot product is no obstacle; a q4_k plan that
// multiplies only its q8_0 fallback runs where q8_0 does.
func TestNewEngineTakesWhatTheRecordsTake(t *testing.T) {
	m, w := engineModule(t, passes.Level8x4, formats.F32, ir.F16, true)
	want := engineTokens(t, plan.EngineOptions{}, m, w)
	if got := engineTokens(t, plan.EngineOptions{Backend: "gomlx", GomlxBackend: "go"}, m, w); !slices.Equal(got, want) {
		t.Errorf("--backend gomlx, f16 cache, gelo-8x4: tokens %v, the cpu backend's %v", got, want)
	}
	m, w = engineModule(t, passes.LevelExact, formats.BF16Dot, ir.F32, false)
	if onDevice(m) {
		t.Fatal("an exact plan placed a node on the device")
	}
	eng, err := plan.NewEngine(plan.EngineOptions{Device: "gomlx:go"}, w, make([]byte, 32), m)
	if err != nil {
		t.Fatalf("--device gomlx:go, bf16dot at exact (nothing on the device): %v", err)
	}
	eng.Close()

	// A q4_k plan whose rows are not whole blocks multiplies its q8_0
	// fallback only; the records are checked against what a plan
	// multiplies, so the vulkan engine, which takes q8_0, runs it.
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	o := plan.Level(passes.LevelNone)
	o.Weights = formats.Q4_K
	if m, err = plan.Compile(models.Source{}, cfg, o, nil); err != nil {
		t.Fatal(err)
	}
	if w, err = models.SynthesizeAs(cfg, 21, "f32"); err != nil {
		t.Fatal(err)
	}
	eng, err = plan.NewEngine(plan.EngineOptions{Backend: "vulkan"}, w, make([]byte, 32), m)
	switch {
	case err == nil:
		eng.Close()
	case errors.Is(err, vulkan.ErrUnavailable):
		t.Logf("no Vulkan driver, the records passed the plan: %v", err)
	default:
		t.Errorf("--backend vulkan, q4_k on qwen3-tiny (all q8_0): %v", err)
	}
}

// engineTokens generates four greedy tokens on the engine eo asks for.
func engineTokens(t *testing.T, eo plan.EngineOptions, m *ir.Module, w *models.Weights) []int {
	t.Helper()
	s, done, err := plan.NewSession(eo, w, make([]byte, 32), m, runtime.Options{MaxContext: 16})
	if err != nil {
		t.Fatalf("%+v: %v", eo, err)
	}
	defer done()
	out, err := s.Generate([]int32{3, 1, 4, 1, 5}, runtime.GenerateOptions{MaxTokens: 4})
	if err != nil {
		t.Fatalf("%+v: %v", eo, err)
	}
	return out
}

// onDevice reports whether m places any node on the device.
func onDevice(m *ir.Module) bool {
	for _, g := range m.Graphs {
		for _, n := range g.Nodes {
			if n.Place == ir.Device {
				return true
			}
		}
	}
	return false
}

// TestGomlxForwardBF16Weights: --backend gomlx on a bf16 plan over an f32
// checkpoint multiplies the bf16 values the plan names, as the cpu backend
// does (it multiplied the f32 values before: the logits of the f32 plan).
func TestGomlxForwardBF16Weights(t *testing.T) {
	m, w := engineModule(t, passes.LevelNone, formats.BF16, ir.F32, false)
	want := engineLogits(t, plan.EngineOptions{}, m, w)
	got := engineLogits(t, plan.EngineOptions{Backend: "gomlx", GomlxBackend: "go"}, m, w)
	var worst, scale float64
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i]-want[i])))
		scale = max(scale, math.Abs(float64(want[i])))
	}
	t.Logf("max logit deviation from the cpu backend %.2g relative", worst/scale)
	if !(worst <= 1e-4*scale) {
		t.Errorf("gomlx logits deviate from the cpu backend's by %.3g relative (tolerance 1e-4)", worst/scale)
	}
}

// engineLogits returns the logits of a prefill and two decode steps.
func engineLogits(t *testing.T, eo plan.EngineOptions, m *ir.Module, w *models.Weights) []float32 {
	t.Helper()
	s, done, err := plan.NewSession(eo, w, make([]byte, 32), m, runtime.Options{MaxContext: 16})
	if err != nil {
		t.Fatalf("%+v: %v", eo, err)
	}
	defer done()
	var all []float32
	lg, err := s.Prefill([]int32{3, 1, 4, 1, 5})
	for i := 0; err == nil && i < 3; i++ {
		all = append(all, lg...)
		lg, err = s.Decode(int32(2 + i))
	}
	if err != nil {
		t.Fatalf("%+v: %v", eo, err)
	}
	return all
}
