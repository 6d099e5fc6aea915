package tests

import (
	"math"
	"testing"

	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

func compileFused(t testing.TB, cfg *models.Config, po passes.ProtectOptions, off []string) *ir.Module {
	t.Helper()
	m, err := plan.Compile(models.Source{}, cfg, plan.Options{ProtectOptions: po, NoFuse: off}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFusionGates: every fusion says it keeps the arithmetic order, so
// turning any one of them off (or all) must give bit-identical logits at
// every one of 64 greedy steps, unprotected and under hd3 (same session
// key: the fused plan draws the same mask material in the same order).
func TestFusionGates(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, _ := models.SynthesizeAs(cfg, 17, "bf16")
	prompt := testPrompt(12, cfg.VocabSize)
	const steps = 64
	for _, po := range []passes.ProtectOptions{plain, passes.DefaultProtect()} {
		run := func(off []string) ([]int, [][]float32) {
			s := newSessionOpts(t, compileFused(t, cfg, po, off), w, testKey, runtime.Options{MaxContext: 12 + steps})
			return greedyRun(t, s, prompt, steps)
		}
		fusedToks, fusedLogits := run(nil)
		variants := map[string][]string{"all off": passes.Unfused()}
		for _, f := range passes.Fusions {
			if !f.BitIdentical {
				continue
			}
			variants[f.Name+" off"] = []string{f.Name}
		}
		for name, off := range variants {
			toks, logits := run(off)
			for i := range logits {
				if toks[i] != fusedToks[i] {
					t.Fatalf("mask %s, %s: token %d is %d, fused gives %d", po.Mask, name, i, toks[i], fusedToks[i])
				}
				for j := range logits[i] {
					if math.Float32bits(logits[i][j]) != math.Float32bits(fusedLogits[i][j]) {
						t.Fatalf("mask %s, %s: step %d logit %d: %v unfused, %v fused", po.Mask, name, i, j, logits[i][j], fusedLogits[i][j])
					}
				}
			}
		}
	}
}

// TestFusedPlanShape: fused, a Qwen3 block makes 4 device matmuls; the
// unfused ops are gone.
func TestFusedPlanShape(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	m := compileFused(t, cfg, passes.DefaultProtect(), nil)
	for _, g := range m.Graphs {
		ops := map[string]int{}
		for _, n := range g.Nodes {
			if n.Op == "matmul" && n.Place != ir.Device {
				continue // the TEE's product of a centred crossing's mean row
			}
			ops[n.Op]++
		}
		for _, gone := range []string{"qk_norm", "rope", "silu", "mul", "kv_append"} {
			if ops[gone] != 0 {
				t.Errorf("%s: %d %s nodes left after fusion", g.Name, ops[gone], gone)
			}
		}
		// Q, K and V are column slices of the one QKV product; gate|up
		// needs none (swiglu reads it whole).
		if ops["slice_cols"] != 3*cfg.NumHiddenLayers {
			t.Errorf("%s: %d slice_cols, want 3 per block", g.Name, ops["slice_cols"])
		}
		if ops["matmul"] != 4*cfg.NumHiddenLayers {
			t.Errorf("%s: %d device matmuls, want 4 per block", g.Name, ops["matmul"])
		}
	}
	if m.Meta["fusions"] != "norm_rope_append,add_rms_norm,concat_proj,swiglu" {
		t.Errorf("fusions meta %q", m.Meta["fusions"])
	}
}
