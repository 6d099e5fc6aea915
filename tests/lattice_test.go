package tests

import (
	"math"
	"testing"

	"gelo/device"
	"gelo/formats"
	"gelo/lower/vulkan/vulkantest"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

// TestLatticeDevices: an lwe plan (qwen3-tiny, every linear op offloaded)
// gives bit-identical logits on every device that runs the lwe product
// (Vulkan on lavapipe, gomlx's Go engine),
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
	po.OffloadAll = true // every device weight int8, the level's format
	m := compileModule(t, cfg, models.TraceOptions{}, po)
	prompt := testPrompt(12, cfg.VocabSize)
	const steps = 32
	ls, lspy := spySession(t, m, w, testKey, 12+steps+1)
	wantToks, wantLogits := greedyRun(t, ls, prompt, steps)
	checkWords(t, lspy.Record())
	devices := map[string]func(t *testing.T) device.Device{
		"vulkan":   func(t *testing.T) device.Device { return vulkantest.Open(t) },
		"gomlx:go": func(t *testing.T) device.Device { return openGomlx(t, "go") },
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

// TestLatticeWideNumerics is level lwe's numerics gate at the Qwen3-0.6B
// widths (hidden 1024, intermediate 3072, 16/8 heads of 128; 2 layers and
// a 4096-token vocabulary to bound the hints' memory and their check):
// every linear op offloaded as lwe ciphertexts, teacher-forced on the
// tokens --security none decodes in the same int8 weights over 64 steps,
// the logits stay within latticeWideTol of none's at every pass, and the
// greedy token is none's wherever none's top two logits are more than
// 2 latticeWideTol apart (a random model's 4096 logits have near-ties a
// rounding can flip). The difference is the rows' encoding (a per-row step
// that leaves about 16 bits of each row's norm, and the lattice noise
// W_q e / Delta at 0.22x that rounding), not arithmetic error: the
// device's product is exact.
func TestLatticeWideNumerics(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the hints of the 0.6B widths take about half a minute to compute and check")
	}
	cfg := smallWidthConfig(t)
	cfg.NumHiddenLayers = 2
	w, err := models.SynthesizeAs(cfg, 11, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	lv, _ := passes.LookupLevel(passes.LevelLWE)
	po := lv.Options(passes.ProtectOptions{})
	po.OffloadAll = true
	none := passes.ProtectOptions{Mask: passes.MaskNone, Cadence: passes.PerForward, Weights: formats.Int8}
	prompt := testPrompt(16, cfg.VocabSize)
	const steps = 64
	ns, _ := spySession(t, compileModule(t, cfg, models.TraceOptions{}, none), w, testKey, 16+steps+1)
	wantToks, wantLogits := greedyRun(t, ns, prompt, steps)
	ls, spy := spySession(t, compileModule(t, cfg, models.TraceOptions{}, po), w, testKey, 16+steps+1)
	logits := forced(t, ls, prompt, wantToks)
	checkWords(t, spy.Record())
	var worst float64
	flips := 0
	for i := range logits {
		for j := range logits[i] {
			worst = math.Max(worst, math.Abs(float64(logits[i][j]-wantLogits[i][j])))
		}
		if tok := runtime.Argmax(logits[i]); tok != wantToks[i] {
			flips++
			if m := margin(wantLogits[i]); m > 2*latticeWideTol {
				t.Errorf("pass %d: lwe's greedy token %d, none's %d, whose top two are %.3g apart", i, tok, wantToks[i], m)
			}
		}
	}
	t.Logf("lwe vs none (int8) at the 0.6B widths, teacher-forced: max |dlogit| %.3g over %d passes; %d near-tie flips", worst, len(logits), flips)
	if worst > latticeWideTol {
		t.Errorf("max |dlogit| %.3g > %g", worst, latticeWideTol)
	}
}

// latticeWideTol bounds TestLatticeWideNumerics's logit deviation
// (absolute; the logits of this model are within +-5; measured 2.5e-3,
// with one near-tie flip in 64 passes).
const latticeWideTol = 1e-2
