package tests

import (
	"math"
	"testing"

	"gelo/device"
	"gelo/formats"
	"gelo/lower/vulkan/vulkantest"
	"gelo/models"
	"gelo/passes"
)

// TestLatticeDevices: an lwe plan (qwen3-tiny, every linear op offloaded)
// gives bit-identical logits on every device that runs the lwe product,
// against the local device, over 32 greedy steps: the device's product is
// exact in Z_2^32 and everything else runs in the same TEE, so any
// difference is a wrong word. It also checks that what crossed is
// ciphertext words (u32), never floats.
func TestLatticeDevices(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, err := models.SynthesizeAs(cfg, 5, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	lv, _ := passes.LookupLevel(passes.LevelLWE)
	po := lv.Options(passes.ProtectOptions{})
	po.OffloadAll = true
	if po.Weights != formats.Int8 {
		t.Fatalf("level lwe compiles --weights %s", po.Weights)
	}
	m := compileModule(t, cfg, models.TraceOptions{}, po)
	prompt := testPrompt(12, cfg.VocabSize)
	const steps = 32
	ls, lspy := spySession(t, m, w, testKey, 12+steps+1)
	wantToks, wantLogits := greedyRun(t, ls, prompt, steps)
	checkWords(t, lspy.Record())
	devices := map[string]func(t *testing.T) device.Device{
		"vulkan": func(t *testing.T) device.Device { return vulkantest.Open(t) },
	}
	for name, open := range devices {
		t.Run(name, func(t *testing.T) {
			dev := open(t)
			s, spy := deviceSession(t, m, w, dev, 12+steps+1)
			toks, logits := greedyRun(t, s, prompt, steps)
			checkWords(t, spy.Record())
			for i := range logits {
				for j := range logits[i] {
					if math.Float32bits(logits[i][j]) != math.Float32bits(wantLogits[i][j]) {
						t.Fatalf("pass %d logit %d: %v on %s, %v on the local device", i, j, logits[i][j], name, wantLogits[i][j])
					}
				}
			}
			for i := range toks {
				if toks[i] != wantToks[i] {
					t.Fatalf("token %d: %d on %s, %d on the local device", i, toks[i], name, wantToks[i])
				}
			}
			if len(spy.Record()) != len(lspy.Record()) {
				t.Errorf("%d crossings on %s, %d on the local device", len(spy.Record()), name, len(lspy.Record()))
			}
		})
	}
}

// checkWords fails unless every crossing is u32 words (the hint
// computations included: A's columns and their products).
func checkWords(t *testing.T, rec []device.Crossing) {
	t.Helper()
	if len(rec) == 0 {
		t.Fatal("nothing crossed")
	}
	for _, c := range rec {
		if c.Data != nil || len(c.Words) != c.Rows*c.Cols {
			t.Fatalf("crossing %d (%s %s): %d floats, %d words for %d x %d", c.Seq, c.Op, c.Weight, len(c.Data), len(c.Words), c.Rows, c.Cols)
		}
	}
}
