package plan_test

import (
	"math"
	"testing"

	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// levelLogits runs a prefill and steps decode steps at the named level and
// returns every pass's logits.
func levelLogits(t *testing.T, level string, prompt []int32, steps int) [][]float32 {
	t.Helper()
	src, cfg := tiny(t)
	l, ok := passes.LookupLevel(level)
	if !ok {
		t.Fatalf("no level %s", level)
	}
	o := plan.Defaults()
	o.ProtectOptions = l.Options(o.ProtectOptions)
	o.OffloadAll = true
	m, err := plan.Compile(src, cfg, o, nil)
	if err != nil {
		t.Fatalf("%s: %v", level, err)
	}
	mod, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, done, err := plan.NewSession(plan.EngineOptions{}, mod.Weights, make([]byte, 32), m, runtime.Options{MaxContext: 64})
	if err != nil {
		t.Fatalf("%s: %v", level, err)
	}
	defer done()
	var out [][]float32
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
		if lg, err = s.Decode(int32(best)); err != nil {
			t.Fatalf("%s decode: %v", level, err)
		}
		out = append(out, append([]float32(nil), lg...))
	}
	return out
}

func TestLevelLogits(t *testing.T) {
	prompt := []int32{1, 2, 3, 4, 5}
	ref := levelLogits(t, passes.LevelNone, prompt, 8)
	for _, lv := range []string{passes.Level8x4, passes.LevelSpan, passes.LevelExact} {
		got := levelLogits(t, lv, prompt, 8)
		for p := range ref {
			worst := 0.0
			for j := range ref[p] {
				worst = math.Max(worst, math.Abs(float64(got[p][j]-ref[p][j])))
			}
			t.Logf("%s pass %d: max |dlogit| %.3g", lv, p, worst)
		}
	}
}
