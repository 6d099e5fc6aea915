package plan_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gelo/device"
	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// offloaded compiles qwen3-tiny at the named level with every linear op
// offloaded (so every crossing is protected), the device weight format
// and K probes per crossing, and returns it with the model's weights.
func offloaded(t *testing.T, level, weights string, k int) (*ir.Module, *models.Weights) {
	t.Helper()
	return compiledTiny(t, level, weights, k, true)
}

// compiledTiny compiles qwen3-tiny at level with the given weights and
// probes; all forces every linear op across, else the offload decision
// stands.
func compiledTiny(t *testing.T, level, weights string, k int, all bool) (*ir.Module, *models.Weights) {
	t.Helper()
	if _, ok := passes.LookupLevel(level); !ok {
		t.Fatalf("no level %s", level)
	}
	src, cfg := tiny(t)
	o := plan.Level(level)
	o.OffloadAll = all
	o.Weights = weights
	o.Verify = k
	m, err := plan.Compile(src, cfg, o, nil)
	if err != nil {
		t.Fatalf("%s: %v", level, err)
	}
	mod, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, mod.Weights
}

// levelLogits runs a prefill and steps decode steps at the named level and
// returns every pass's logits.
func levelLogits(t *testing.T, level, weights string, prompt []int32, steps int) ([][]float32, []int) {
	t.Helper()
	m, w := offloaded(t, level, weights, passes.DefaultVerify)
	return runLogits(t, m, w, level, prompt, steps)
}

// runLogits is levelLogits on a compiled module.
func runLogits(t *testing.T, m *ir.Module, w *models.Weights, level string, prompt []int32, steps int) ([][]float32, []int) {
	t.Helper()
	return forcedLogits(t, m, w, level, prompt, steps, nil)
}

// forcedLogits is runLogits decoding the tokens force (its own greedy
// tokens when force is nil).
func forcedLogits(t *testing.T, m *ir.Module, w *models.Weights, level string, prompt []int32, steps int, force []int) ([][]float32, []int) {
	t.Helper()
	s, done, err := plan.NewSession(plan.EngineOptions{}, w, make([]byte, 32), m, runtime.Options{MaxContext: 80})
	if err != nil {
		t.Fatalf("%s: %v", level, err)
	}
	defer done()
	var out [][]float32
	var toks []int
	lg, err := s.Prefill(prompt)
	if err != nil {
		t.Fatalf("%s prefill: %v", level, err)
	}
	out = append(out, append([]float32(nil), lg...))
	for i := 0; i < steps; i++ {
		best := 0
		for j, v := range lg {
			if v > lg[best] {
				best = j
			}
		}
		if force != nil {
			best = force[i]
		}
		toks = append(toks, best)
		if lg, err = s.Decode(int32(best)); err != nil {
			t.Fatalf("%s decode: %v", level, err)
		}
		out = append(out, append([]float32(nil), lg...))
	}
	return out, toks
}

// TestLevelLogits is the numerics gate of the levels: over 64 greedy steps
// every level (all linear ops offloaded, so every crossing is protected)
// decodes the tokens --security none decodes, with logits within 1e-3 of
// it in f32 (measured: about 6e-6 for gelo-8x4 and exact, 8e-5 for span,
// whose shield rows carry 32x the data rows' norm; the unmask's rounding
// scales with the stack's norm) and bf16 weights (widened exactly: the
// same products). q8_0 payloads are quantized after mixing, so the
// shield's energy becomes block-scale rounding on the data: span is
// refused with quantized weights; exact and whiten decode none's tokens
// (teacher-forced, so one near-tie cannot fork the two runs: at pass 11
// of this prompt none's top two logits are 0.0043 apart) within
// qTol of its logits at every pass (measured max |dlogit| 0.18 exact,
// 0.14 whiten) and pick none's token wherever none's top two are more
// than 2 qTol apart. gelo-8x4's q8_0 payloads (8 shield rows at energy 4
// in each block) already drift from none's within a dozen steps.
func TestLevelLogits(t *testing.T) {
	prompt := []int32{1, 2, 3, 4, 5}
	const steps, tol, qTol = 64, 1e-3, 0.3
	for _, w := range []string{formats.F32, formats.BF16, formats.Q8_0} {
		ref, refToks := levelLogits(t, passes.LevelNone, w, prompt, steps)
		for _, lv := range []string{passes.Level8x4, passes.LevelSpan, passes.LevelWhiten, passes.LevelExact} {
			if lv != passes.LevelExact && lv != passes.LevelWhiten && w == formats.Q8_0 {
				continue
			}
			var got [][]float32
			if w == formats.Q8_0 {
				m, wts := offloaded(t, lv, w, passes.DefaultVerify)
				got, _ = forcedLogits(t, m, wts, lv, prompt, steps, refToks)
				for p := range ref {
					if margin(ref[p]) > 2*qTol && runtime.Argmax(got[p]) != runtime.Argmax(ref[p]) {
						t.Errorf("%s, %s weights: pass %d picks %d, none %d (none's margin %.3g)", lv, w, p, runtime.Argmax(got[p]), runtime.Argmax(ref[p]), margin(ref[p]))
					}
				}
			} else {
				var toks []int
				got, toks = levelLogits(t, lv, w, prompt, steps)
				if !slices.Equal(toks, refToks) {
					t.Errorf("%s, %s weights: tokens %v, none decodes %v", lv, w, toks, refToks)
				}
			}
			worst := 0.0
			for p := range ref {
				for j := range ref[p] {
					worst = math.Max(worst, math.Abs(float64(got[p][j]-ref[p][j])))
				}
			}
			t.Logf("%s, %s weights: max |dlogit| %.3g over %d passes", lv, w, worst, len(ref))
			bound := tol
			if w == formats.Q8_0 {
				bound = qTol
			}
			if worst > bound {
				t.Errorf("%s, %s weights: max |dlogit| %.3g > %g", lv, w, worst, bound)
			}
		}
	}
}

// margin is the gap between a logit vector's two largest values.
func margin(l []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, v := range l {
		switch x := float64(v); {
		case x > a:
			a, b = x, a
		case x > b:
			b = x
		}
	}
	return a - b
}

// TestTEELocalBitIdentical is the gate of the TEE-local matmuls: under
// the default level at B = 1 every linear op is kept in the TEE (the
// offload decision), and it multiplies the plan's own weight format with
// the kernel the local device runs, so the protected plan's logits are
// bit-identical to --security none's (every op on the local device) over
// 32 greedy steps, for every weight format; and the TEE holds the format,
// not an f32 copy, for every weight it multiplies.
func TestTEELocalBitIdentical(t *testing.T) {
	prompt := []int32{3, 1, 4, 1, 5, 9, 2, 6}
	const steps = 32
	for _, w := range formats.PlanNames() {
		mn, wts := compiledTiny(t, passes.LevelNone, w, 0, false)
		ref, refToks := runLogits(t, mn, wts, passes.LevelNone, prompt, steps)
		me, wts := compiledTiny(t, passes.LevelExact, w, passes.DefaultVerify, false)
		local := 0
		for _, g := range me.Graphs {
			for _, n := range g.Nodes {
				if !ir.IsLinear(n.Op) {
					continue
				}
				if n.Place != ir.TEE {
					t.Fatalf("%s weights: %s %v is on the device; this test wants every op TEE-local", w, g.Name, n.ID)
				}
				local++
				if wt := g.Node(n.Inputs[1]).Type.DType; w != formats.F32 && wt == ir.F32 {
					t.Errorf("%s weights: TEE-local %s %v multiplies f32 weights", w, g.Name, n.ID)
				}
			}
		}
		got, toks := runLogits(t, me, wts, passes.LevelExact, prompt, steps)
		if !slices.Equal(toks, refToks) {
			t.Errorf("%s weights: exact decodes %v, none %v", w, toks, refToks)
		}
		diff := 0
		for p := range ref {
			for j := range ref[p] {
				if math.Float32bits(got[p][j]) != math.Float32bits(ref[p][j]) {
					diff++
				}
			}
		}
		if diff != 0 {
			t.Errorf("%s weights: %d logits differ between exact (TEE-local) and none", w, diff)
		}
		t.Logf("%s weights: %d TEE-local linear ops, %d passes bit-identical to none", w, local, len(ref))
	}
}

// TestExactPayloadsOrthonormal checks the exact level's proof obligation
// on what the device actually received: every payload U (s x d) that
// crossed to the device, prefill and decode, has U^T U = I to float32
// rounding, whatever the prompt; and the payloads of span and gelo-8x4 do
// not (their Gram carries the data).
func TestExactPayloadsOrthonormal(t *testing.T) {
	src, cfg := tiny(t)
	mod, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, lv := range []string{passes.LevelExact, passes.LevelWhiten, passes.LevelSpan} {
		o := plan.Level(lv)
		o.OffloadAll = true
		m, err := plan.Compile(src, cfg, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		eng, err := plan.NewEngine(plan.EngineOptions{Spy: true}, mod.Weights, make([]byte, 32), m)
		if err != nil {
			t.Fatal(err)
		}
		s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: 32})
		if err != nil {
			t.Fatal(err)
		}
		lg, err := s.Prefill([]int32{7, 8, 9, 10, 11, 12})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if lg, err = s.Decode(int32(runtime.Argmax(lg))); err != nil {
				t.Fatal(err)
			}
		}
		payloads, worst := 0, 0.0
		for _, c := range eng.Spy.Record() {
			if c.Dir != device.ToDevice {
				continue
			}
			payloads++
			for a := 0; a < c.Cols; a++ {
				for b := a; b < c.Cols; b++ {
					var g float64
					for r := 0; r < c.Rows; r++ {
						g += float64(c.Data[r*c.Cols+a]) * float64(c.Data[r*c.Cols+b])
					}
					if a == b {
						g--
					}
					worst = math.Max(worst, math.Abs(g))
				}
			}
		}
		eng.Close()
		if payloads == 0 {
			t.Fatalf("%s: nothing crossed", lv)
		}
		t.Logf("%s: %d payloads, max |U^T U - I| = %.3g", lv, payloads, worst)
		if lv != passes.LevelSpan && worst > 1e-4 {
			t.Errorf("exact: max |U^T U - I| = %.3g over %d payloads, want rounding", worst, payloads)
		}
		if lv == passes.LevelSpan && worst < 0.5 {
			t.Errorf("span: payload Gram within %.3g of I: the test cannot tell whitened from Gaussian shields", worst)
		}
	}
}

// TestReleaseSource: an engine that owns its weights converts them at load
// and drops the f32 values of every matmul weight the plan holds in
// another format: the same logits bit for bit, the converted tensors refuse
// Get (naming them), and the f32 tensors the TEE reads as values (the tied
// embedding table, the norms) stay.
func TestReleaseSource(t *testing.T) {
	prompt := []int32{2, 7, 1, 8}
	for _, w := range []string{formats.Q8_0, formats.BF16} {
		m, wts := compiledTiny(t, passes.LevelExact, w, passes.DefaultVerify, false)
		want, _ := runLogits(t, m, wts, passes.LevelExact, prompt, 8)
		m, own := compiledTiny(t, passes.LevelExact, w, passes.DefaultVerify, false)
		s, done, err := plan.NewSession(plan.EngineOptions{ReleaseSource: true}, own, make([]byte, 32), m, runtime.Options{MaxContext: 80})
		if err != nil {
			t.Fatal(err)
		}
		var got [][]float32
		lg, err := s.Prefill(prompt)
		for i := 0; err == nil; i++ {
			got = append(got, append([]float32(nil), lg...))
			if i == 8 {
				break
			}
			lg, err = s.Decode(int32(runtime.Argmax(lg)))
		}
		done()
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		for p := range want {
			for j := range want[p] {
				if math.Float32bits(got[p][j]) != math.Float32bits(want[p][j]) {
					t.Fatalf("%s weights: pass %d logit %d differs with the source released", w, p, j)
				}
			}
		}
		const down = "model.layers.0.mlp.down_proj.weight"
		if _, _, err := own.Get(down); err == nil || !strings.Contains(err.Error(), down) || !strings.Contains(err.Error(), "released") {
			t.Errorf("%s weights: Get of a converted weight after release: %v", w, err)
		}
		if _, _, err := own.Get(models.FinalNormName); err != nil {
			t.Errorf("%s weights: %s (read as f32 in the TEE) was released: %v", w, models.FinalNormName, err)
		}
		// The tied table is gathered from the head's converted copy, so
		// no f32 copy of it, or of any matrix, stays.
		for _, name := range own.Names() {
			if _, shape, _ := own.Shape(name); len(shape) == 2 {
				if _, _, err := own.Get(name); err == nil {
					t.Errorf("%s weights: the f32 values of %s stayed after the engine converted it", w, name)
				}
			}
		}
	}
}

// TestOffloadOnly: the harness's OffloadOnly offloads exactly the linear
// ops it names under a full-span level (the exact level never pays, so
// without it nothing would cross) and keeps every other one in the TEE,
// in every graph, and the plan's meta says so.
func TestOffloadOnly(t *testing.T) {
	src, cfg := tiny(t)
	o := plan.Level(passes.LevelExact)
	o.OffloadOnly = []string{"model.layers.0.self_attn.q_proj", "model.layers.1.mlp.down_proj"}
	m, err := plan.Compile(src, cfg, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range m.Graphs {
		var got []string
		for _, n := range g.Nodes {
			if ir.IsLinear(n.Op) && n.Place == ir.Device {
				name, _ := ir.WeightName(g, n.Inputs[1])
				got = append(got, name)
			}
		}
		if len(got) != 2 || !strings.HasPrefix(got[0], o.OffloadOnly[0]) || !strings.HasPrefix(got[1], o.OffloadOnly[1]) {
			t.Errorf("graph %s: device linear ops %q, want the two named", g.Name, got)
		}
	}
	if !strings.HasPrefix(m.Meta["offload_plan"], "only ") {
		t.Errorf("meta offload_plan %q", m.Meta["offload_plan"])
	}
}
