package tests

import (
	"math"
	"strings"
	"testing"

	"gelo/device/wire"
	"gelo/formats"
	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

// relRMS is ||got - want|| / ||want|| over a logit vector.
func relRMS(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(num / den)
}

// klDiv is KL(softmax(want) || softmax(got)) in nats: what llama.cpp's
// perplexity tool reports for a quantized model against its f16 one.
func klDiv(got, want []float32) float64 {
	lse := func(l []float32) float64 {
		m := math.Inf(-1)
		for _, v := range l {
			m = math.Max(m, float64(v))
		}
		var s float64
		for _, v := range l {
			s += math.Exp(float64(v) - m)
		}
		return m + math.Log(s)
	}
	lg, lw := lse(got), lse(want)
	var kl float64
	for i := range want {
		pw := float64(want[i]) - lw
		kl += math.Exp(pw) * (pw - (float64(got[i]) - lg))
	}
	return kl
}

// dequantized returns w with every matrix rounded through format's blocks
// (quantized and expanded back to f32): the weights a quantized plan's
// device multiplies by, for the f32 plan to run exactly.
func dequantized(t *testing.T, w *models.Weights, format wire.Format) *models.Weights {
	t.Helper()
	data := map[string][]float32{}
	for _, name := range w.Names() {
		v, shape, err := w.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		v = append([]float32(nil), v...)
		if len(shape) == 2 {
			m, err := wire.Quantize(format, v, shape[0], shape[1])
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Dequantize(v); err != nil {
				t.Fatal(err)
			}
		}
		data[name] = v
	}
	out, err := models.NewWeights(w.Config, data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQuantizedLogits compares q8_0 and q4_0 plans with the f32 plan on
// the synthetic Qwen3-0.6B widths (4 layers, vocabulary cut to 4096) over
// a prefill and 16 decode steps fed the f32 plan's tokens, so every step
// sees the same context. Each quantized plan is also compared with the f32
// plan run on its dequantized weights (weight rounding only, exact
// activations), which splits the error into what the weight format costs
// and what the plan adds (the q8_0 activation rows, and under hd3 their
// shield).
//
// Measured (max over the steps, relative RMS of the logits; KL mean over
// the steps, nats):
//
//	                     vs f32   vs weight-only rounding   KL vs f32
//	weight-only q8_0     2.9 %    -
//	q8_0 plan, none      3.7 %    2.8 %                     5.3e-4
//	q8_0 plan, hd3       7.1 %    7.1 %                     2.2e-3
//	weight-only q4_0     42 %     -
//	q4_0 plan, none      38 %     22 %                      6.5e-2
//
// The 2 % target for q8_0 is not reachable on this model with any
// q8_0 kernel: rounding only the weights, with exact arithmetic after,
// already gives 2.9 % here. Each matrix's q8_0 rounding error is 0.54 %
// RMS, and this synthetic model (i.i.d. Gaussian weights; every block adds
// an O(1) update to the residual) turns weight noise into 4-5.5x as much
// logit noise (q8_0: 0.54 % in the weights, 2.9 % in the logits; bf16
// rounding of an f32 qwen3-tiny: 0.17 % in the weights, 0.69 % in the
// logits, TestBF16Weights). By llama.cpp's measure, the KL divergence of
// the next-token distribution, the q8_0 plan's 5.3e-4 nats is below the
// 1.36e-3 llama.cpp's perplexity documentation reports for LLaMA 3 8B
// q8_0 against f16 (ggml-org/llama.cpp pull request 6936).
//
// Under hd3 the rows are quantized after masking, where they carry shield
// rows of 4x the data's energy, so the block scales are set by the shield
// and the error projected back onto the data grows about 2-4x. The q4_0
// plan is far from its weight-only reference because q4_0 leaves the
// model in a strongly perturbed regime where the q8_0 activation rounding
// is amplified too.
//
// Bounds: vs f32 5 % (q8_0 none), 10 % (q8_0 hd3), 50 % (q4_0); vs the
// weight-only rounding 4 % (q8_0 none) and 30 % (q4_0 none). They catch
// a wrong scale, nibble order or block stride (errors of 100 % or more).
func TestQuantizedLogits(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: quantizes the 0.6B widths")
	}
	cfg := smallWidthConfig(t)
	w, err := models.SynthesizeAs(cfg, 5, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	prompt := testPrompt(24, cfg.VocabSize)
	const steps = 16
	// run feeds toks (nil: its own greedy tokens) and returns the logits.
	run := func(po passes.ProtectOptions, w *models.Weights, toks []int) [][]float32 {
		s := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, po), w, testKey, runtime.Options{MaxContext: 64})
		logits, err := s.Prefill(prompt)
		if err != nil {
			t.Fatal(err)
		}
		var all [][]float32
		for i := 0; i < steps; i++ {
			all = append(all, append([]float32(nil), logits...))
			tok := runtime.Argmax(logits)
			if toks != nil {
				tok = toks[i]
			}
			if i+1 < steps {
				if logits, err = s.Decode(int32(tok)); err != nil {
					t.Fatal(err)
				}
			}
		}
		return all
	}
	ref := run(plain, w, nil)
	refToks := make([]int, len(ref))
	for i := range ref {
		refToks[i] = runtime.Argmax(ref[i])
	}
	weightOnly := map[string][][]float32{}
	for _, f := range []struct {
		name   string
		format wire.Format
	}{{formats.Q8_0, wire.Q8_0}, {formats.Q4_0, wire.Q4_0}} {
		weightOnly[f.name] = run(plain, dequantized(t, w, f.format), refToks)
		var worst float64
		for i := range ref {
			worst = math.Max(worst, relRMS(weightOnly[f.name][i], ref[i]))
		}
		t.Logf("%s weight-only rounding: logits rel. RMS vs f32 max %.4f", f.name, worst)
	}
	for _, tc := range []struct {
		weights     string
		mask        string
		tol, tolOwn float64
	}{
		{formats.Q8_0, passes.MaskNone, 0.05, 0.04},
		{formats.Q8_0, passes.MaskHD3, 0.10, 0.10},
		{formats.Q4_0, passes.MaskNone, 0.50, 0.30},
	} {
		po := passes.DefaultProtect()
		po.Mask, po.Weights = tc.mask, tc.weights
		if tc.mask == passes.MaskNone {
			po = plain
			po.Weights = tc.weights
		}
		// Fed the f32 plan's tokens so every run sees the same context.
		got := run(po, w, refToks)
		var worst, worstOwn, sum, kl float64
		agree := 0
		for i := range got {
			e := relRMS(got[i], ref[i])
			worst, sum = math.Max(worst, e), sum+e
			worstOwn = math.Max(worstOwn, relRMS(got[i], weightOnly[tc.weights][i]))
			kl += klDiv(got[i], ref[i]) / steps
			if runtime.Argmax(got[i]) == refToks[i] {
				agree++
			}
		}
		t.Logf("%s weights, mask %s: logits rel. RMS vs f32 mean %.4f max %.4f, vs weight-only rounding max %.4f; KL %.2e nats; greedy token agrees on %d/%d steps",
			tc.weights, tc.mask, sum/steps, worst, worstOwn, kl, agree, steps)
		if worst > tc.tol {
			t.Errorf("%s, mask %s: logits differ from f32 by %.4f relative RMS (tolerance %g)", tc.weights, tc.mask, worst, tc.tol)
		}
		if worstOwn > tc.tolOwn {
			t.Errorf("%s, mask %s: logits differ from the weight-only rounding by %.4f relative RMS (tolerance %g)", tc.weights, tc.mask, worstOwn, tc.tolOwn)
		}
	}
}

// TestQuantizedPlanShape: a q8_0 plan's device weights are q8_0, and the
// rows that cross are q8_0 blocks emitted by the mask.
func TestQuantizedPlanShape(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	po := passes.DefaultProtect()
	po.Weights = formats.Q8_0
	m := compileModule(t, cfg, models.TraceOptions{}, po)
	for _, g := range m.Graphs {
		for _, n := range g.Nodes {
			if n.Op != "matmul" && n.Op != "lm_head" || n.Place != ir.Device {
				continue
			}
			if w := g.Node(n.Inputs[1]); w.Type.DType.String() != "q8_0" {
				t.Errorf("%v = %s reads %v weights", n.ID, n.Op, w.Type)
			}
			if x := g.Node(n.Inputs[0]); x.Op != "mask" || x.Type.DType.String() != "q8_0" {
				t.Errorf("%v = %s reads %v = %s %v, want q8_0 rows from mask", n.ID, n.Op, x.ID, x.Op, x.Type)
			}
		}
	}
	if m.Meta["weights"] != "q8_0" {
		t.Errorf("weights meta %q", m.Meta["weights"])
	}
}

// TestBF16Weights: bf16 device weights widen exactly, so on a bf16
// checkpoint the bf16 plan must give the f32 plan's logits bit for bit
// at every step, unprotected and under hd3 (same session key), while the
// device holds half the bytes: every device weight is uploaded as bf16.
// On an f32 checkpoint the weights are rounded (to nearest even, relative
// error at most 2^-9); the logits then move by about the weights'
// relative error times the model's gain. Measured on qwen3-tiny: 6.9e-3
// at worst over 64 steps (the matrices move by 1.7e-3 relative RMS: this
// synthetic model amplifies weight noise about 4x, see
// TestQuantizedLogits). The bound 2e-2 is far below what a wrong
// widening, layout or dispatch gives (order 1).
func TestBF16Weights(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	prompt := testPrompt(12, cfg.VocabSize)
	const steps = 64
	bf16ckpt, err := models.SynthesizeAs(cfg, 23, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	for _, mask := range []string{passes.MaskNone, passes.MaskHD3} {
		po := passes.DefaultProtect()
		po.Mask = mask
		if mask == passes.MaskNone {
			po = plain
		}
		ref := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, po), bf16ckpt, testKey, runtime.Options{MaxContext: 12 + steps})
		wantToks, want := greedyRun(t, ref, prompt, steps)
		po.Weights = formats.BF16
		m := compileModule(t, cfg, models.TraceOptions{}, po)
		s, spy := spySession(t, m, bf16ckpt, testKey, 12+steps)
		toks, got := greedyRun(t, s, prompt, steps)
		for i := range got {
			if toks[i] != wantToks[i] {
				t.Fatalf("mask %s: token %d is %d with bf16 weights, %d with f32", mask, i, toks[i], wantToks[i])
			}
			for j := range got[i] {
				if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
					t.Fatalf("mask %s: step %d logit %d is %v with bf16 weights, %v with f32", mask, i, j, got[i][j], want[i][j])
				}
			}
		}
		ups := spy.Uploads()
		if len(ups) == 0 {
			t.Fatalf("mask %s: nothing uploaded", mask)
		}
		for _, u := range ups {
			if !strings.HasPrefix(u, "bf16:") {
				t.Errorf("mask %s: device weight %q was not uploaded as bf16", mask, u)
			}
		}
		if m.Meta["weights"] != formats.BF16 {
			t.Errorf("weights meta %q", m.Meta["weights"])
		}
	}

	// An f32 checkpoint is rounded: close, not equal.
	f32ckpt, err := models.SynthesizeAs(cfg, 23, "f32")
	if err != nil {
		t.Fatal(err)
	}
	ref := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, plain), f32ckpt, testKey, runtime.Options{MaxContext: 12 + steps})
	refToks, want := greedyRun(t, ref, prompt, steps)
	po := plain
	po.Weights = formats.BF16
	s := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, po), f32ckpt, testKey, runtime.Options{MaxContext: 12 + steps})
	logits, err := s.Prefill(prompt)
	if err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i := 0; i < steps; i++ {
		worst = math.Max(worst, relRMS(logits, want[i]))
		if i+1 < steps {
			if logits, err = s.Decode(int32(refToks[i])); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("f32 checkpoint rounded to bf16: logits rel. RMS vs f32 at most %.2e over %d steps", worst, steps)
	if worst == 0 || worst > 2e-2 {
		t.Errorf("f32 checkpoint with bf16 weights: logits differ by %.3g relative RMS (want > 0 and <= 2e-2)", worst)
	}
}

// TestBF16Refusals: malformed bf16 uploads fail with errors that say
// why, and a device matmul on bf16 weights moved into the TEE by hand runs
// there on the same widening kernel (the TEE multiplies every plan format):
// the same logits, bit for bit.
func TestBF16Refusals(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, _ := models.SynthesizeAs(cfg, 23, "bf16")
	be := cpu.New(w, cpu.Options{})
	t.Cleanup(be.Close)
	dev := cpu.NewLocalDevice(be.Kernels())
	if err := dev.UploadBF16("w", make([]uint16, 5), 2, 3); err == nil || !strings.Contains(err.Error(), "bf16 values for shape [2, 3]") {
		t.Errorf("UploadBF16 of 5 values as [2, 3]: %v", err)
	}
	if err := dev.MatMul("matmul", "never", make([]float32, 3), 1, make([]float32, 2)); err == nil || !strings.Contains(err.Error(), "never uploaded") {
		t.Errorf("MatMul on a weight never uploaded: %v", err)
	}

	po := plain
	po.Weights = formats.BF16
	m := compileModule(t, cfg, models.TraceOptions{}, po)
	g := m.Graphs[0]
	moved := false
	for _, n := range g.Nodes {
		if n.Op == "matmul" && n.Place == ir.Device && g.Node(n.Inputs[1]).Type.DType == ir.BF16 {
			n.Place = ir.TEE
			moved = true
			break
		}
	}
	if !moved {
		t.Fatal("no device matmul on bf16 weights in the plan")
	}
	prefill := func(m *ir.Module) []float32 {
		s, err := runtime.NewSession(m, runtime.Adapt(be.Name(), be.Compile), runtime.Options{MaxContext: 16})
		if err != nil {
			t.Fatal(err)
		}
		lg, err := s.Prefill(testPrompt(4, cfg.VocabSize)) // steps compile on first use
		if err != nil {
			t.Fatalf("a TEE matmul on bf16 weights: %v", err)
		}
		return append([]float32(nil), lg...)
	}
	got, want := prefill(m), prefill(compileModule(t, cfg, models.TraceOptions{}, po))
	for j := range want {
		if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
			t.Fatalf("logit %d: %v with the matmul in the TEE, %v on the device", j, got[j], want[j])
		}
	}
}

// TestTiedGatherRefusesBadIDs: where the tied embedding is gathered from
// the LM head's bf16 or block table, a token id outside the vocabulary is
// refused with an error, in the prefill and in a decode step (the session
// checks first; the gather's own check, checkIDs, is tested in lower/cpu).
func TestTiedGatherRefusesBadIDs(t *testing.T) {
	cfg := tinyConfig(t)
	w, err := models.SynthesizeAs(cfg, 3, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{formats.BF16, formats.Q8_0, formats.Q4_0} {
		po := plain
		po.Weights = format
		m := compileModule(t, cfg, models.TraceOptions{}, po)
		s := newSessionOpts(t, m, w, testKey, runtime.Options{MaxContext: 16})
		bad := int32(cfg.VocabSize)
		if _, err := s.Prefill([]int32{1, bad}); err == nil || !strings.Contains(err.Error(), "outside the vocabulary") {
			t.Errorf("%s: prefill of id %d: err %v, want outside the vocabulary", format, bad, err)
		}
		s = newSessionOpts(t, m, w, testKey, runtime.Options{MaxContext: 16})
		if _, err := s.Prefill([]int32{1, 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Decode(-1); err == nil || !strings.Contains(err.Error(), "outside the vocabulary") {
			t.Errorf("%s: decode of id -1: err %v, want outside the vocabulary", format, err)
		}
	}
}
