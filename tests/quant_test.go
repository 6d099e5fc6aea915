package tests

import (
	"math"
	"strings"
	"testing"

	"gelo/ir"
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

// TestQuantizedLogits compares q8_0 and q4_0 plans with the f32 plan on
// the synthetic Qwen3-0.6B widths (4 layers, vocabulary cut to 4096) over
// a prefill and 16 decode steps fed the f32 plan's tokens, so every step
// sees the same context.
//
// Tolerances (relative RMS of the logits) are set from what this model
// does, not from what a trained model would: the synthetic weights are
// i.i.d. Gaussian, so every block adds an O(1) random update to the
// residual and perturbations grow through the layers instead of being
// damped. Measured on this model: rounding only the weights to q8_0
// (exact f32 activations, dequantized weights on the f32 path) already
// moves the logits by 2.9 % RMS, and q4_0 weights by 42 % -- the kernels
// are exact with respect to their blocks (lower/cpu/quant tests), this is
// the model's sensitivity. Full q8_0 (weights and q8_0 activation rows)
// measures 3.7 %; bound 5 %. Under hd3 the rows are quantized after
// masking, where they carry shield rows of 4x the data's energy, so the
// block scales are set by the shield and the error projected back onto
// the data grows about 4x: measured 15 %, bound 20 %. q4_0: measured
// 38 %, bound 50 %. These bounds catch a wrong scale, nibble order or
// block stride (errors of 100 % or more), not small regressions.
// The 2 % target for q8_0 is not met on this synthetic model.
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
	run := func(po passes.ProtectOptions) [][]float32 {
		s := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, po), w, testKey, runtime.Options{MaxContext: 64})
		_, logits := greedyRun(t, s, prompt, steps)
		return logits
	}
	ref := run(plain)
	refToks := make([]int, len(ref))
	for i := range ref {
		refToks[i] = runtime.Argmax(ref[i])
	}
	for _, tc := range []struct {
		weights string
		mask    string
		tol     float64
	}{
		{passes.WeightsQ8_0, passes.MaskNone, 0.05},
		{passes.WeightsQ8_0, passes.MaskHD3, 0.20},
		{passes.WeightsQ4_0, passes.MaskNone, 0.50},
	} {
		po := passes.DefaultProtect()
		po.Mask, po.Weights = tc.mask, tc.weights
		// Feed the f32 plan's tokens so both see the same context.
		s := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, po), w, testKey, runtime.Options{MaxContext: 64})
		logits, err := s.Prefill(prompt)
		if err != nil {
			t.Fatal(err)
		}
		var worst, sum float64
		agree := 0
		for i := 0; i < steps; i++ {
			e := relRMS(logits, ref[i])
			worst, sum = math.Max(worst, e), sum+e
			if runtime.Argmax(logits) == refToks[i] {
				agree++
			}
			if i+1 < steps {
				if logits, err = s.Decode(int32(refToks[i])); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Logf("%s weights, mask %s: logits rel. RMS vs f32 mean %.4f max %.4f; greedy token agrees on %d/%d steps",
			tc.weights, tc.mask, sum/steps, worst, agree, steps)
		if worst > tc.tol {
			t.Errorf("%s, mask %s: logits differ from f32 by %.4f relative RMS (tolerance %g)", tc.weights, tc.mask, worst, tc.tol)
		}
	}
}

// TestQuantizedPlanShape: a q8_0 plan's device weights are q8_0, and the
// rows that cross are q8_0 blocks emitted by the mask.
func TestQuantizedPlanShape(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	po := passes.DefaultProtect()
	po.Weights = passes.WeightsQ8_0
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
// at worst over 64 steps (the weights move by about 1.1e-3 RMS: this
// synthetic model amplifies weight noise about 6x, see
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
		po.Weights = passes.WeightsBF16
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
		if m.Meta["weights"] != passes.WeightsBF16 {
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
	po.Weights = passes.WeightsBF16
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
