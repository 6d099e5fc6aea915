package tests

import (
	"math"
	"testing"

	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

// replaySession builds a session over m in eager or capture mode.
func replaySession(t testing.TB, cfg *models.Config, w *models.Weights, po passes.ProtectOptions, eager bool, maxCtx int) *runtime.Session {
	t.Helper()
	m := compileModule(t, cfg, models.TraceOptions{}, po)
	s := newSessionOpts(t, m, w, testKey, runtime.Options{MaxContext: maxCtx, Eager: eager})
	return s
}

// TestReplayBitIdenticalToEager decodes 128 steps eagerly (every step
// lowered and allocated anew) and with capture/replay, across several
// kv-length buckets, and demands identical bits at every step.
func TestReplayBitIdenticalToEager(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(testing.TB) *models.Config
	}{
		{"qwen3-tiny", func(testing.TB) *models.Config { c, _ := models.Variant("qwen3-tiny"); return c }},
		{"qwen3-0.6b", func(t testing.TB) *models.Config { c, _ := models.Variant("qwen3-0.6b"); return c }},
	}
	const promptLen, steps = 8, 128
	for _, tc := range cases {
		for _, po := range []passes.ProtectOptions{plain, passes.DefaultProtect()} {
			t.Run(tc.name+"/"+po.Mask, func(t *testing.T) {
				if testing.Short() && tc.name != "qwen3-tiny" {
					t.Skip("-short: the synthetic 0.6B takes a minute")
				}
				cfg := tc.cfg(t)
				w, err := models.SynthesizeAs(cfg, 1, "bf16")
				if err != nil {
					t.Fatal(err)
				}
				prompt := testPrompt(promptLen, cfg.VocabSize)
				eager := replaySession(t, cfg, w, po, true, promptLen+steps+1)
				replay := replaySession(t, cfg, w, po, false, promptLen+steps+1)
				a, err := eager.Prefill(prompt)
				if err != nil {
					t.Fatal(err)
				}
				b, err := replay.Prefill(prompt)
				if err != nil {
					t.Fatal(err)
				}
				for step := 0; step < steps; step++ {
					for i := range a {
						if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
							t.Fatalf("step %d logit %d: eager %v, replay %v", step, i, a[i], b[i])
						}
					}
					tok := int32(runtime.Argmax(a))
					if a, err = eager.Decode(tok); err != nil {
						t.Fatal(err)
					}
					if b, err = replay.Decode(tok); err != nil {
						t.Fatal(err)
					}
				}
				if got := replay.Captured(); len(got) < 2 {
					t.Errorf("replay captured buckets %v: the run should cross at least two", got)
				} else {
					t.Logf("captured kv buckets %v", got)
				}
				if len(eager.Captured()) != 0 {
					t.Errorf("eager session captured %v", eager.Captured())
				}
			})
		}
	}
}

// TestReplayAllocatesNothing: once a bucket is captured, a decode step
// (protected, with its fresh mask material) allocates nothing.
func TestReplayAllocatesNothing(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, _ := models.SynthesizeAs(cfg, 1, "bf16")
	for _, po := range []passes.ProtectOptions{plain, passes.DefaultProtect(),
		{Mask: passes.MaskHaar, Cadence: passes.PerOffload, ShieldK: 8, ShieldEnergy: 4, Center: true}} {
		s := replaySession(t, cfg, w, po, false, 64)
		if _, err := s.Prefill(testPrompt(4, cfg.VocabSize)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ { // capture the bucket and warm every pool
			if _, err := s.Decode(3); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		allocs := testing.AllocsPerRun(20, func() {
			if _, e := s.Decode(3); e != nil {
				err = e
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if allocs != 0 {
			t.Errorf("mask %s/%s: a replayed decode step allocates %.1f times", po.Mask, po.Cadence, allocs)
		}
	}
}

func TestBuckets(t *testing.T) {
	for _, tc := range []struct{ kv, maxT, want int }{
		{1, 4096, 64}, {64, 4096, 64}, {65, 4096, 128}, {1000, 4096, 1024}, {3000, 2048, 2048},
	} {
		if got := runtime.Bucket(tc.kv, tc.maxT); got != tc.want {
			t.Errorf("Bucket(%d, %d) = %d, want %d", tc.kv, tc.maxT, got, tc.want)
		}
	}
}
