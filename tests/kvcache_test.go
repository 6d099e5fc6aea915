package tests

import (
	"math"
	goruntime "runtime"
	"slices"
	"testing"

	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/models"
	"gelo/runtime"
)

// kvModels are the two synthetic models of the KV-dtype figures:
// qwen3-tiny and two layers at the Qwen3-0.6B widths (full vocabulary),
// as `gelo synth --variant qwen3-0.6b --layers 2` makes.
func kvModels(t *testing.T) []*models.Config {
	tiny, _ := models.Variant("qwen3-tiny")
	wide, _ := models.Variant("qwen3-0.6b")
	wide.NumHiddenLayers = 2
	return []*models.Config{tiny, wide}
}

// kvSession compiles cfg unprotected with the given cache dtype.
func kvSession(t *testing.T, cfg *models.Config, w *models.Weights, dt ir.DType, workers, maxCtx int) *runtime.Session {
	t.Helper()
	return newSession(t, compileModule(t, cfg, models.TraceOptions{KVDType: dt}, plain), w, workers, maxCtx)
}

// forced runs prompt then decodes toks (teacher forcing, so every dtype
// sees the same history) and returns the logits of every step.
func forced(t *testing.T, s *runtime.Session, prompt []int32, toks []int) [][]float32 {
	t.Helper()
	l, err := s.Prefill(prompt)
	if err != nil {
		t.Fatal(err)
	}
	out := [][]float32{append([]float32(nil), l...)}
	for _, tok := range toks[:len(toks)-1] {
		if l, err = s.Decode(int32(tok)); err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]float32(nil), l...))
	}
	return out
}

// TestKVDTypeBitIdentity: within each KV dtype the logits of prefill and
// 32 greedy steps do not depend on the worker count or GOMAXPROCS, and a
// batched decode gives the serial bits. (The head-major layout left the
// f32 logits bit-identical to the token-major one it replaced: checked
// when it landed, on both models of kvModels, masked and unmasked.)
func TestKVDTypeBitIdentity(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w := models.Synthesize(cfg, 31)
	prompt := testPrompt(70, cfg.VocabSize) // crosses a 64-position attention chunk
	for _, dt := range models.KVDTypes {
		var ref [][]float32
		var refToks []int
		for _, procs := range []int{1, 2} {
			old := goruntime.GOMAXPROCS(procs)
			s := kvSession(t, cfg, w, dt, procs, 160)
			toks, logits := greedyRun(t, s, prompt, 33)
			goruntime.GOMAXPROCS(old)
			if ref == nil {
				ref, refToks = logits, toks
				continue
			}
			for i := range logits {
				if j := firstDiff(logits[i], ref[i]); j >= 0 {
					t.Fatalf("kv %v: step %d logit %d differs between GOMAXPROCS 1 and 2", dt, i, j)
				}
			}
		}
		// Two sequences with different prompts decoding together: each
		// gives its own serial bits (a slot or head offset that read the
		// other sequence's cache would show here).
		prompt2 := slices.Clone(prompt[:50])
		slices.Reverse(prompt2)
		s2 := kvSession(t, cfg, w, dt, 2, 160)
		refToks2, ref2 := greedyRun(t, s2, prompt2, 9)
		m := compileModule(t, cfg, models.TraceOptions{KVDType: dt}, plain)
		be := cpu.New(w, cpu.Options{SessionKey: testKey})
		t.Cleanup(be.Close)
		bt, err := runtime.NewBatch(m, runtime.Adapt(be.Name(), be.Compile), 2, runtime.Options{MaxContext: 160})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range [][]int32{prompt, prompt2} {
			if _, err := bt.Prefill(i, p); err != nil {
				t.Fatal(err)
			}
		}
		for step := 0; step < 8; step++ {
			l, err := bt.Decode([]int32{int32(refToks[step]), int32(refToks2[step])})
			if err != nil {
				t.Fatal(err)
			}
			v := len(ref[0])
			for i, r := range [][][]float32{ref, ref2} {
				if j := firstDiff(l[i*v:(i+1)*v], r[step+1]); j >= 0 {
					t.Fatalf("kv %v: batched sequence %d step %d logit %d differs from serial", dt, i, step, j)
				}
			}
		}
	}
}

func firstDiff(a, b []float32) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestKVDTypeNumerics holds f16 and bf16 caches to the f32 cache over a
// 16-token prompt and 64 greedy steps on both kvModels. The f32 run's
// tokens are fed to every dtype (teacher forcing) so that each step's
// logits compare on one history; the free-running greedy tokens are
// logged too.
//
// The bound. A stored value is x(1+d), |d| <= u, u the unit roundoff of
// round-to-nearest-even: 2^-11 for f16, 2^-8 for bf16 (the widening back is
// exact). In one attention o = sum_t p_t v_t: rounding V moves o by at most
// u max|v| (p is a convex combination); rounding K moves score s_t by at
// most u A_t (A_t = scale sum_i |q_i k_ti|) and o by at most 2 u max_t A_t
// max|v| (softmax's Jacobian maps max-norm to 1-norm with gain <= 2). With
// QK-norm, A_t is of order 1 here (an assumption the measured figures
// bear out), so an attention output moves by about 3u of its scale at
// most, and the
// residual, RMSNorm and LM head carry that (linearly, to first order) to
// the logits, attention being one part of the residual. Hence
//
//	max |logit - f32 logit| / max |logit| <= 3u
//
// (errors of many positions and layers have random signs and mostly
// cancel; measured 1.1-1.6u, see README). The error must also scale with
// u: bf16's is 4 to 16 times f16's (2^3 = 8 in the mean), which a format
// stored wrongly (truncated, or left f32) would not give. A teacher-forced
// argmax may differ from f32's only where f32's top two logits are closer
// than twice the bound.
func TestKVDTypeNumerics(t *testing.T) {
	const steps = 64
	unit := map[ir.DType]float64{ir.F16: 0x1p-11, ir.BF16: 0x1p-8}
	for _, cfg := range kvModels(t) {
		if cfg.HiddenSize > 64 && testing.Short() {
			continue
		}
		w, err := models.SynthesizeAs(cfg, 5, "bf16")
		if err != nil {
			t.Fatal(err)
		}
		prompt := testPrompt(16, cfg.VocabSize)
		ref := kvSession(t, cfg, w, ir.F32, 0, 96)
		toks, want := greedyRun(t, ref, prompt, steps)
		errs := map[ir.DType]float64{}
		for _, dt := range []ir.DType{ir.F16, ir.BF16} {
			got := forced(t, kvSession(t, cfg, w, dt, 0, 96), prompt, toks)
			var worst float64
			for i := range got {
				e := relErr(got[i], f64(want[i]))
				worst = math.Max(worst, e)
				if a := runtime.Argmax(got[i]); a != toks[i] && margin(want[i]) > 2*3*unit[dt]*maxAbs(want[i]) {
					t.Errorf("hidden %d, kv %v, step %d: argmax %d, f32's %d by a margin above twice the bound", cfg.HiddenSize, dt, i, a, toks[i])
				}
			}
			errs[dt] = worst
			free, _ := greedyRun(t, kvSession(t, cfg, w, dt, 0, 96), prompt, steps)
			same := 0
			for same < steps && free[same] == toks[same] {
				same++
			}
			t.Logf("hidden %d, kv %v: max |logit - f32's| / max |logit| = %.3g (%.2fu) over %d steps; free-running greedy tokens equal to f32's for the first %d of %d",
				cfg.HiddenSize, dt, worst, worst/unit[dt], steps, same, steps)
			if !(worst <= 3*unit[dt]) { // NaN fails too
				t.Errorf("hidden %d, kv %v: logits deviate by %.3g relative, above 3u = %.3g", cfg.HiddenSize, dt, worst, 3*unit[dt])
			}
		}
		if r := errs[ir.BF16] / errs[ir.F16]; !(r >= 4 && r <= 16) {
			t.Errorf("hidden %d: bf16's error is %.3g times f16's, want 4 to 16 (2^3 in the mean)", cfg.HiddenSize, r)
		}
	}
}

// margin is the gap between the two largest logits.
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

func maxAbs(l []float32) float64 {
	var m float64
	for _, v := range l {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}
