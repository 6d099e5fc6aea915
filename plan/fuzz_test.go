package plan_test

import (
	"testing"

	"gelo/ir"
	"gelo/models"
	"gelo/plan"
	"gelo/runtime"
)

// FuzzParsedPlanToLowering drives IR text through the path a loaded
// plan takes: parse, verify (NewEngine refuses what its compiler would
// refuse), lower and run one prefill and one decode step on the tiny
// model. Any input may be refused; none may panic or hang.
func FuzzParsedPlanToLowering(f *testing.F) {
	src, cfg, err := models.Resolve(models.DefaultVariant, 1, "")
	if err != nil {
		f.Fatal(err)
	}
	for _, lv := range []string{"gelo-8x4", "exact", "none", "lwe"} {
		o := plan.Level(lv)
		o.OffloadAll = true
		m, err := plan.Compile(src, cfg, o, nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(ir.Print(m))
	}
	mod, err := models.Open(models.DefaultVariant, 1, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m, err := ir.Parse(text)
		if err != nil {
			return
		}
		s, done, err := plan.NewSession(plan.EngineOptions{Workers: 1}, mod.Weights, make([]byte, 32), m, runtime.Options{MaxContext: 16})
		if err != nil {
			return
		}
		defer done()
		lg, err := s.Prefill([]int32{1, 2, 3})
		if err != nil {
			return
		}
		s.Decode(int32(runtime.Argmax(lg)))
	})
}
