package tests

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gelo/device"
	"gelo/formats"
	"gelo/lower/cpu"
	"gelo/lower/cpu/kernels"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// levelOptions returns the protection options of a named level, as the
// command line compiles it (the default integrity probes included).
func levelOptions(name string) passes.ProtectOptions {
	return plan.Level(name).ProtectOptions
}

// TestBF16Dot: the bf16 dot product (--weights bf16dot) on a bf16
// checkpoint.
//
//   - Unprotected (every product on the local device, its payload rounded
//     to bf16 before it crosses) and exact (every product in the TEE,
//     which rounds its own input) give the same logits bit for bit: the
//     rounding is idempotent and both run the same kernel.
//   - Against the exact bf16 plan (weights widened, f32 inputs): rounding
//     each input to bf16 moves a product by at most 2^-9 of sum |x||w|
//     (kernels.TestMatMulTBF16DotAccuracy measures 2.6e-4 on random rows),
//     and the logits then by the model's gain times that (this synthetic
//     model amplifies weight noise about 4x, see TestBF16Weights).
//     Measured on qwen3-tiny over 64 teacher-forced steps: at most 9.6e-3
//     relative RMS unmasked (none and exact: bound 2e-2), 3.2e-2 under
//     gelo-8x4's masks, whose payload is the masked rows, rounded, then
//     unmasked: the shield rows raise their norm, so the rounding weighs
//     more (bound 6e-2). Every device product passes the default
//     integrity probes, which a payload not rounded before it crossed
//     fails (its product is then not that of what was sent).
//     Tokens must agree wherever the exact plan's top-2 margin exceeds
//     twice the logits' deviation (norm-wise); this model's margins are
//     thin, so that is a few steps, not all 64. A wrong kernel or a
//     widening mix-up is order 1.
//   - Every device weight is uploaded for the dot product.
func TestBF16Dot(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	prompt := testPrompt(12, cfg.VocabSize)
	const steps = 64
	ckpt, err := models.SynthesizeAs(cfg, 23, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	var noneLogits [][]float32
	for _, level := range []string{passes.LevelNone, passes.LevelExact, passes.Level8x4} {
		po := levelOptions(level)
		po.Weights = formats.BF16
		ref := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, po), ckpt, testKey, runtime.Options{MaxContext: 12 + steps})
		wantToks, want := greedyRun(t, ref, prompt, steps)
		po.Weights = formats.BF16Dot
		m := compileModule(t, cfg, models.TraceOptions{}, po)
		if m.Meta["weights"] != formats.BF16Dot {
			t.Fatalf("%s: weights meta %q", level, m.Meta["weights"])
		}
		s, spy := spySession(t, m, ckpt, testKey, 12+steps)
		// Teacher-forced on the exact plan's tokens: the deviation of
		// each step's logits, and the tokens wherever the exact plan's
		// top-2 margin exceeds twice the deviation.
		got := forced(t, s, prompt, wantToks)
		var worst float64
		checked := 0
		for i := range got {
			d := relRMS(got[i], want[i])
			worst = math.Max(worst, d)
			if margin(want[i]) > 2*d*maxAbs(want[i])*math.Sqrt(float64(len(want[i]))) {
				checked++
				if tok := runtime.Argmax(got[i]); tok != wantToks[i] {
					t.Fatalf("%s: step %d token %d with the bf16 dot product, %d exact (margin %.3g)", level, i, tok, wantToks[i], margin(want[i]))
				}
			}
		}
		t.Logf("%s: bf16dot logits vs bf16 at most %.2e relative RMS over %d steps; tokens checked at %d of them", level, worst, steps, checked)
		bound := 2e-2
		if level == passes.Level8x4 {
			bound = 6e-2
		}
		if worst == 0 || worst > bound {
			t.Errorf("%s: bf16dot logits differ from bf16's by %.3g relative RMS (want > 0 and <= %g)", level, worst, bound)
		}
		switch level {
		case passes.LevelNone:
			noneLogits = got
			if len(spy.Uploads()) == 0 {
				t.Fatal("none: nothing uploaded")
			}
		case passes.LevelExact:
			for i := range got {
				for j := range got[i] {
					if math.Float32bits(got[i][j]) != math.Float32bits(noneLogits[i][j]) {
						t.Fatalf("exact: step %d logit %d is %v, the unprotected plan's %v", i, j, got[i][j], noneLogits[i][j])
					}
				}
			}
		}
		for _, u := range spy.Uploads() {
			if !strings.HasPrefix(u, "bf16dot:") {
				t.Errorf("%s: device weight %q was not uploaded for the bf16 dot product", level, u)
			}
		}
	}
}

// noDot is a device without the bf16 dot product (only device.Device's
// methods).
type noDot struct{ device.Device }

// TestBF16DotRefusals: the whole-forward engines (which widen bf16
// exactly) refuse a bf16dot plan, naming the flag; so does the cpu
// backend whose device has no bf16 dot product, when it compiles the
// plan's first device matmul.
func TestBF16DotRefusals(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	ckpt, err := models.SynthesizeAs(cfg, 23, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	po := plain
	po.Weights = formats.BF16Dot
	m := compileModule(t, cfg, models.TraceOptions{}, po)
	for _, be := range []string{"gomlx", "vulkan"} {
		_, err := plan.NewEngine(plan.EngineOptions{Backend: be}, ckpt, testKey, m)
		if err == nil || !errors.Is(err, plan.ErrEngine) || !strings.Contains(err.Error(), "bf16dot") {
			t.Errorf("--backend %s ran a bf16dot plan (err %v)", be, err)
		}
	}
	ctx := kernels.NewCtx(1)
	defer ctx.Close()
	be := cpu.New(ckpt, cpu.Options{SessionKey: testKey, Device: noDot{cpu.NewLocalDevice(ctx)}})
	defer be.Close()
	s, err := runtime.NewSession(m, runtime.Adapt(be.Name(), be.Compile), runtime.Options{MaxContext: 16})
	if err == nil {
		_, err = s.Prefill(testPrompt(4, cfg.VocabSize))
	}
	if err == nil || !strings.Contains(err.Error(), "no bf16 dot product") {
		t.Errorf("a device without the bf16 dot product ran a bf16dot plan (err %v)", err)
	}
}
