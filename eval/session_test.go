package eval

import (
	"bytes"
	"math"
	"testing"

	"gelo/formats"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// tinySession is qwen3-tiny (synthetic f32 weights, seed 7) compiled at
// level none with the given weight format and every row's logits, in a
// session whose cache holds ctx tokens.
func tinySession(t *testing.T, weights string, ctx int) *runtime.Session {
	t.Helper()
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	o := plan.Level(passes.LevelNone)
	o.Weights = weights
	o.Trace.AllLogits = true
	m, err := plan.Compile(models.Source{}, cfg, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := models.SynthesizeAs(cfg, 7, "f32")
	if err != nil {
		t.Fatal(err)
	}
	s, done, err := plan.NewSession(plan.EngineOptions{}, w, make([]byte, 32), m, runtime.Options{MaxContext: ctx})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	return s
}

// TestSessionAgainstReference: on a real session, chunked prefills give
// the perplexity a float64 reference computes from the same session's
// logits of whole-window prefills.
func TestSessionAgainstReference(t *testing.T) {
	const ctx = 32
	s := tinySession(t, formats.F32, ctx)
	vocab := s.Vocab()
	toks := textOf(3*ctx+5, vocab)
	var sum float64
	var n int
	for w := range 3 {
		s.Reset()
		win := toks[w*ctx : (w+1)*ctx]
		logits, err := s.Prefill(win)
		if err != nil {
			t.Fatal(err)
		}
		for j := ctx / 2; j <= ctx-2; j++ {
			lp := logSoftmax(vocab, func(v int) float64 { return float64(logits[j*vocab+v]) })
			sum -= lp[win[j+1]]
			n++
		}
	}
	want := math.Exp(sum / float64(n))
	r, err := Run(s, toks, Options{Ctx: ctx, Batch: 7})
	if err != nil {
		t.Fatal(err)
	}
	if e := math.Abs(r.PPL.Value-want) / want; e > 1e-5 || r.Scored != int64(n) {
		t.Fatalf("PPL %.9g over %d tokens, reference %.9g over %d (relative %.2g)", r.PPL.Value, r.Scored, want, n, e)
	}
	if r.PPL.Err <= 0 {
		t.Errorf("no standard error: %v", r.PPL)
	}
}

// TestQ8AgainstF32: q8_0 weights against the f32 run's saved file: KL
// above 0 but small, top-1 agreement high, the same tokens compared; f32
// against itself: 0 and 100 %.
func TestQ8AgainstF32(t *testing.T) {
	const ctx = 32
	base := tinySession(t, formats.F32, ctx)
	toks := textOf(4*ctx, base.Vocab())
	file := saveRun(t, base, toks, ctx, F32)
	for _, tc := range []struct {
		weights string
		zero    bool
	}{{formats.F32, true}, {formats.Q8_0, false}} {
		t.Run(tc.weights, func(t *testing.T) {
			lr, err := NewLogitsReader(bytes.NewReader(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Run(tinySession(t, tc.weights, ctx), toks, Options{Ctx: ctx, Batch: 16, Base: lr})
			if err != nil {
				t.Fatal(err)
			}
			k := r.KL
			t.Logf("%s: PPL %.4f (base %.4f), KLD %.3g +/- %.2g, max %.3g, top-1 %.1f %%", tc.weights, k.PPL.Value, k.BasePPL.Value, k.KLD.Value, k.KLD.Err, k.Max, 100*k.Top1.Value)
			if tc.zero {
				if k.KLD.Value != 0 || k.Top1.Value != 1 {
					t.Fatalf("against itself: KLD %v, top-1 %v", k.KLD, k.Top1)
				}
				return
			}
			if !(k.KLD.Value > 0 && k.KLD.Value < 0.05 && k.Top1.Value > 0.8 && k.Max >= k.KLD.Value) {
				t.Fatalf("q8_0: KLD %v (max %v), top-1 %v: want 0 < KLD < 0.05, top-1 > 80 %%", k.KLD, k.Max, k.Top1)
			}
			if math.Abs(k.LogRatio.Value) > 0.05 {
				t.Errorf("ln(PPL/PPL_base) %v: q8_0 should barely move perplexity", k.LogRatio)
			}
		})
	}
}
