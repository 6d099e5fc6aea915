package tests

import (
	"testing"

	"gelo/lower/cpu"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

// At the 0.6B model's widths (4 layers), on the activations a synthetic
// model really produces, every probe of a prefill and 32 decode steps
// passes at the levels that cross (none, and gelo-8x4 with its 9-row
// stacks; exact's full-span Haar stacks are too slow at these widths for a
// test, and plan's tests check it on qwen3-tiny), and the decoded tokens
// are those without probes. The
// statistic's margin is logged: the calibration at real widths.
func TestProbesAtRealWidths(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds probe pools at the 0.6B widths")
	}
	cfg := smallWidthConfig(t)
	w, err := models.SynthesizeAs(cfg, 1, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	prompt := testPrompt(24, cfg.VocabSize)
	for _, level := range []string{passes.LevelNone, passes.Level8x4} {
		l, _ := passes.LookupLevel(level)
		var toks [2][]int
		for i, k := range []int{0, 2} {
			po := l.Options(passes.DefaultProtect())
			po.OffloadAll, po.Verify = true, k
			m := compileModule(t, cfg, models.TraceOptions{}, po)
			be := cpu.New(w, cpu.Options{SessionKey: []byte("gelo test session key 0123456789")})
			s, err := runtime.NewSession(m, runtime.Adapt(be.Name(), be.Compile), runtime.Options{MaxContext: 64})
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.Generate(prompt, runtime.GenerateOptions{MaxTokens: 32})
			if err != nil {
				t.Fatalf("%s, K = %d: %v", level, k, err)
			}
			toks[i] = out
			if k > 0 {
				st := be.ProbeStats()
				t.Logf("%s: %d honest checks at the 0.6B widths, largest statistic %.2e of its tolerance", level, st.Checks, st.Worst)
			}
			be.Close()
		}
		if len(toks[0]) != len(toks[1]) {
			t.Fatalf("%s: %d tokens without probes, %d with", level, len(toks[0]), len(toks[1]))
		}
		for i := range toks[0] {
			if toks[0][i] != toks[1][i] {
				t.Fatalf("%s: token %d is %d without probes, %d with", level, i, toks[0][i], toks[1][i])
			}
		}
	}
}
