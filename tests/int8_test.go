package tests

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// TestInt8Weights: the int8 per-output-channel format (--weights int8) on
// qwen3-tiny, 64 greedy steps after a 12-token prompt.
//
//   - Unprotected (every product on the local device, over the f32
//     payload) and exact (every product in the TEE) run the same kernel
//     on the same f32 rows: the same logits bit for bit, hence the same
//     tokens.
//   - gelo-8x4 (every product offloaded, masked rows): the tokens are
//     the unprotected plan's; the logits move by the masking's float
//     rounding only (bound 1e-3 relative RMS).
//   - Fused and unfused plans give the same logits bit for bit (fusion
//     changes no product: each output is one dot product in a fixed
//     order).
//   - Against the f32 plan, the int8 rounding of the weights (half a step
//     of max|w_j|/127 a weight) moves the logits by a bounded amount
//     (logged; bound 0.1 relative RMS, an order below a wrong kernel).
//   - Every device weight is uploaded as int8 rows ("int8:" names).
func TestInt8Weights(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	prompt := testPrompt(12, cfg.VocabSize)
	const steps = 64
	ckpt := models.Synthesize(cfg, 23)
	opts := runtime.Options{MaxContext: 12 + steps}
	var noneToks []int
	var noneLogits [][]float32
	for _, level := range []string{passes.LevelNone, passes.LevelExact, passes.Level8x4} {
		po := levelOptions(level)
		po.Weights = formats.Int8
		m := compileModule(t, cfg, models.TraceOptions{}, po)
		if m.Meta["weights"] != formats.Int8 {
			t.Fatalf("%s: weights meta %q", level, m.Meta["weights"])
		}
		for _, g := range m.Graphs {
			for _, n := range g.Nodes {
				// (gelo-8x4's mean-row corrections, added by protect after
				// quantize, multiply f32 copies in the TEE, in every format.)
				if !ir.IsLinear(n.Op) || len(n.Inputs) < 2 || (n.Place != ir.Device && level != passes.LevelExact) {
					continue
				}
				if _, named := ir.WeightName(g, n.Inputs[1]); named && g.Node(n.Inputs[1]).Type.DType != ir.I8 {
					t.Fatalf("%s: %s %v multiplies %v, not int8", level, g.Name, n.ID, g.Node(n.Inputs[1]).Type)
				}
			}
		}
		s, spy := spySession(t, m, ckpt, testKey, 12+steps)
		var toks []int
		var logits [][]float32
		if level == passes.LevelNone {
			toks, logits = greedyRun(t, s, prompt, steps)
		} else {
			// Teacher-forced on the unprotected plan's tokens, so each
			// step's logits compare with the same context's.
			toks, logits = noneToks, forced(t, s, prompt, noneToks)
			for i := range logits {
				if tok := runtime.Argmax(logits[i]); tok != noneToks[i] {
					t.Errorf("%s: step %d token %d, unprotected %d (margin %.3g)", level, i, tok, noneToks[i], margin(noneLogits[i]))
				}
			}
		}
		switch level {
		case passes.LevelNone:
			noneToks, noneLogits = toks, logits
			if len(spy.Uploads()) == 0 {
				t.Fatal("none: nothing uploaded")
			}
		case passes.LevelExact:
			if len(spy.Uploads()) != 0 {
				t.Fatalf("exact: %d weights uploaded", len(spy.Uploads()))
			}
			for i := range logits {
				for j := range logits[i] {
					if math.Float32bits(logits[i][j]) != math.Float32bits(noneLogits[i][j]) {
						t.Fatalf("exact: step %d logit %d is %v, the unprotected plan's %v", i, j, logits[i][j], noneLogits[i][j])
					}
				}
			}
		default:
			var worst float64
			for i := range logits {
				worst = math.Max(worst, relRMS(logits[i], noneLogits[i]))
			}
			t.Logf("%s: logits vs none at most %.2e relative RMS over %d steps", level, worst, steps)
			if worst > 1e-3 {
				t.Errorf("%s: logits differ from none's by %.3g relative RMS (want <= 1e-3)", level, worst)
			}
		}
		if !slices.Equal(toks, noneToks) {
			t.Errorf("%s: tokens %v, unprotected %v", level, toks, noneToks)
		}
		for _, u := range spy.Uploads() {
			if !strings.HasPrefix(u, "int8:") {
				t.Errorf("%s: device weight %q was not uploaded as int8", level, u)
			}
		}
	}

	// Fused vs unfused, exact level (every product in the TEE).
	po := levelOptions(passes.LevelExact)
	po.Weights = formats.Int8
	unfused, err := plan.Compile(models.Source{}, cfg, plan.Options{ProtectOptions: po, NoFuse: passes.Unfused()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, got := greedyRun(t, newSessionOpts(t, unfused, ckpt, testKey, opts), prompt, steps)
	for i := range got {
		for j := range got[i] {
			if math.Float32bits(got[i][j]) != math.Float32bits(noneLogits[i][j]) {
				t.Fatalf("unfused: step %d logit %d is %v, the fused plan's %v", i, j, got[i][j], noneLogits[i][j])
			}
		}
	}

	// Against the f32 plan, teacher-forced on its tokens.
	ref := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, levelOptions(passes.LevelExact)), ckpt, testKey, opts)
	wantToks, want := greedyRun(t, ref, prompt, steps)
	s := newSessionOpts(t, compileModule(t, cfg, models.TraceOptions{}, po), ckpt, testKey, opts)
	forcedLogits := forced(t, s, prompt, wantToks)
	var worst float64
	agree := 0
	for i := range forcedLogits {
		worst = math.Max(worst, relRMS(forcedLogits[i], want[i]))
		if runtime.Argmax(forcedLogits[i]) == wantToks[i] {
			agree++
		}
	}
	t.Logf("int8 vs f32: logits at most %.2e relative RMS over %d steps (teacher-forced), top-1 agrees at %d", worst, steps, agree)
	if worst == 0 || worst > 0.1 {
		t.Errorf("int8 logits differ from f32's by %.3g relative RMS (want > 0 and <= 0.1)", worst)
	}
}
