package tests

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	"gelo/device"
	"gelo/formats"
	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/lower/gomlx"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

// deviceSession builds a session whose device-placed matmuls go to dev,
// wrapped in a spy.
func deviceSession(t testing.TB, m *ir.Module, w *models.Weights, dev device.Device, maxCtx int) (*runtime.Session, *device.SpyDevice) {
	t.Helper()
	spy := device.NewSpy(dev)
	be := cpu.New(w, cpu.Options{Device: spy, SessionKey: testKey})
	t.Cleanup(be.Close)
	s, err := runtime.NewSession(m, runtime.Adapt(be.Name(), be.Compile), runtime.Options{MaxContext: maxCtx})
	if err != nil {
		t.Fatal(err)
	}
	return s, spy
}

// openGomlx opens a gomlx device, skipping the test when the backend is
// not available here (XLA without a PJRT plugin, or not linked).
func openGomlx(t testing.TB, backend string) *gomlx.Device {
	t.Helper()
	dev, err := gomlx.New(backend)
	if gomlx.Unavailable(err) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dev.Close(); err != nil {
			t.Error(err)
		}
	})
	return dev
}

// gomlxTolerance bounds the logit deviation between the local device and
// a gomlx device, relative to the largest |logit|, under the same mask
// and session key. The only difference is the summation order of each
// device matmul (about 1e-7 to 6e-7 relative per product, see
// lower/gomlx's matmulTolerance), carried through the layers and, under
// HD3, through the mask transforms. Measured: qwen3-tiny over 32 steps
// 1.1e-6 (none) and 4.5e-6 to 8e-6 (hd3); the 1.7B widths over 6 steps
// 2.2e-6 (none) and 1.1e-5 to 1.2e-5 (hd3). 1e-4 is the bound the mask
// parity tests use: 8x margin, and still catches a wrong transpose or
// block mapping (order 1).
const gomlxTolerance = 1e-4

// gomlxQ8Tolerance is the bound for a q8_0 plan. There the TEE rounds
// every masked row to q8_0 before it crosses, so a float32 rounding
// difference in an earlier product can move one value across a rounding
// boundary: one quantum (1/127 of its block's max) in one element, which
// the synthetic model's i.i.d. weights amplify (see TestQuantizedLogits).
// Measured on qwen3-tiny over 32 steps: 5e-7 to 8e-7 until the first such
// flip, then 2.1e-2 at the flip's step and up to 1.3e-2 at some later
// steps (the flipped value stays in the K/V cache); the steps without a
// flip stay under 1.3e-5. Since the embedding is gathered from the q8_0
// table (the plan holds it once), the first flip comes at step 4: 7e-7 to
// 9e-7 before it, 1.5e-2 at it, and 14 of the 32 steps stay under 1.1e-5.
// So: every step under 5e-2, a quarter of the steps under gomlxTolerance
// (an error in every step, such as a wrong rounding, fails it; flips touch
// only the steps after them), tokens identical. A wrong dequantization or
// block stride moves every step by order 1.
const gomlxQ8Tolerance = 5e-2

func gomlxParity(t *testing.T, backend string) {
	cases := []struct {
		name  string
		cfg   func(testing.TB) *models.Config
		steps int
	}{
		{"qwen3-tiny", func(testing.TB) *models.Config { c, _ := models.Variant("qwen3-tiny"); return c }, 32},
		{"qwen3-1.7b-widths-4-layers", width17, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name != "qwen3-tiny" {
				t.Skip("-short: the 1.7B-width model on the gomlx device takes tens of seconds")
			}
			dev := openGomlx(t, backend)
			cfg := tc.cfg(t)
			w, err := models.SynthesizeAs(cfg, 21, "bf16")
			if err != nil {
				t.Fatal(err)
			}
			prompt := testPrompt(16, cfg.VocabSize)
			hd3 := passes.ProtectOptions{Mask: passes.MaskHD3, Cadence: passes.PerForward, ShieldK: 8, ShieldEnergy: 4, Center: true}
			q8 := hd3
			q8.Weights = formats.Q8_0
			bf16 := hd3
			bf16.Weights = formats.BF16
			// int8 rows expand to f32 at UploadQ and multiply f32 rows
			// (MatMul): within gomlxTolerance, unprotected and masked.
			i8, i8hd3 := plain, hd3
			i8.Weights, i8hd3.Weights = formats.Int8, formats.Int8
			pos := []passes.ProtectOptions{plain, hd3}
			if tc.name == "qwen3-tiny" {
				pos = append(pos, q8, bf16, i8, i8hd3) // UploadQ/MatMulQ: q8_0 rows and weights; UploadBF16; UploadQ of int8, MatMul
			}
			for _, po := range pos {
				label := po.Mask
				if po.Weights != "" {
					label += "-" + po.Weights
				}
				t.Run(label, func(t *testing.T) {
					m := compileModule(t, cfg, models.TraceOptions{}, po)
					ls, lspy := spySession(t, m, w, testKey, 16+tc.steps)
					wantToks, wantLogits := greedyRun(t, ls, prompt, tc.steps)
					gs, gspy := deviceSession(t, m, w, dev, 16+tc.steps)
					toks, logits := greedyRun(t, gs, prompt, tc.steps)
					var worst float64
					errs := make([]float64, len(logits))
					for i := range logits {
						errs[i] = relErr(logits[i], f64(wantLogits[i]))
						worst = math.Max(worst, errs[i])
					}
					slices.Sort(errs)
					tol := gomlxTolerance
					if po.Weights == formats.Q8_0 {
						tol = gomlxQ8Tolerance
						if q := errs[len(errs)/4]; q > gomlxTolerance {
							t.Errorf("a quarter of the steps deviate by %.3g relative or more (tolerance %g): more than q8_0 rounding flips", q, gomlxTolerance)
						}
					}
					t.Logf("%s (%s weights) on %s: max logit deviation from the local device %.2g (relative to max |logit|) over %d steps",
						name(po), cmp.Or(po.Weights, "f32"), dev.Name(), worst, tc.steps)
					if worst > tol {
						t.Errorf("logits deviate by %.3g relative (tolerance %g)", worst, tol)
					}
					for i := range toks {
						if toks[i] != wantToks[i] {
							t.Fatalf("token %d is %d on %s, %d on the local device", i, toks[i], dev.Name(), wantToks[i])
						}
					}
					// The same payloads crossed, in the same order and shapes.
					lr, gr := lspy.Record(), gspy.Record()
					if len(lr) != len(gr) {
						t.Fatalf("%d crossings on %s, %d on the local device", len(gr), dev.Name(), len(lr))
					}
					for i := range lr {
						a, b := lr[i], gr[i]
						if a.Dir != b.Dir || a.Op != b.Op || a.Weight != b.Weight || a.Rows != b.Rows || a.Cols != b.Cols {
							t.Fatalf("crossing %d: %s %s %q [%d, %d] on %s, %s %s %q [%d, %d] locally",
								i, b.Dir, b.Op, b.Weight, b.Rows, b.Cols, dev.Name(), a.Dir, a.Op, a.Weight, a.Rows, a.Cols)
						}
					}
				})
			}
		})
	}
}

// TestGomlxParity: greedy tokens identical, logits within gomlxTolerance
// and the same sequence of crossings (direction, op, weight, shape)
// between the local device and gomlx's pure-Go backend, for qwen3-tiny
// (mask none, hd3, hd3 with q8_0 weights and rows: gomlxQ8Tolerance,
// hd3 with bf16 weights, and none and hd3 with int8 weights:
// gomlxTolerance) and, without -short, the
// 4-layer model at the Qwen3-1.7B widths (none and hd3).
func TestGomlxParity(t *testing.T) { gomlxParity(t, "go") }

// TestGomlxXLAParity is the same on XLA's CPU plugin; it skips, saying
// why, where the binary lacks XLA (-tags xla) or no plugin is installed.
func TestGomlxXLAParity(t *testing.T) { gomlxParity(t, "xla:cpu") }

// TestGomlxCUDAParity is the same on XLA's CUDA plugin: it runs on a lent
// GPU (bench/gpu/run.sh) and skips, saying why, everywhere else.
func TestGomlxCUDAParity(t *testing.T) { gomlxParity(t, "xla:cuda") }

// TestGomlxSpySeesNoPlaintext is TestSpySeesNoPlaintext with the gomlx
// go device behind the spy, under HD3 and Haar: every row that crosses
// (to the device and back) is compared with every plaintext row of its
// pass, the unprotected run's payloads and the K/V cache rows, and no
// |cos| may exceed 0.5. It also checks that each weight is uploaded once.
func TestGomlxSpySeesNoPlaintext(t *testing.T) {
	cfg := smallWidthConfig(t)
	w, err := models.SynthesizeAs(cfg, 4, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	dev := openGomlx(t, "go")
	prompt := testPrompt(12, cfg.VocabSize)
	steps := 4
	if testing.Short() {
		steps = 1
	}
	ps, pspy := deviceSession(t, compileModule(t, cfg, models.TraceOptions{}, plain), w, dev, 32)
	plainPasses := recordPasses(t, ps, pspy, prompt, steps)
	seen := map[string]bool{}
	for _, u := range pspy.Uploads() {
		if seen[u] {
			t.Errorf("weight %q uploaded twice by one backend", u)
		}
		seen[u] = true
	}
	for _, po := range []passes.ProtectOptions{
		{Mask: passes.MaskHD3, Cadence: passes.PerForward, ShieldK: 8, ShieldEnergy: 4, Center: true},
		{Mask: passes.MaskHaar, Cadence: passes.PerOffload, ShieldK: 8, ShieldEnergy: 4, Center: true},
	} {
		t.Run(name(po), func(t *testing.T) {
			s, spy := deviceSession(t, compileModule(t, cfg, models.TraceOptions{}, po), w, dev, 32)
			got := recordPasses(t, s, spy, prompt, steps)
			worst, at := worstCosine(t, cfg, s, plainPasses, got)
			t.Logf("largest |cos| between a crossing row and a plaintext row of its pass: %.3f (%s)", worst, at)
			if worst > 0.5 {
				t.Errorf("a payload at %s is parallel to a plaintext row (|cos| = %.3f)", at, worst)
			}
		})
	}
}

// worstCosine returns the largest |cos| between a row that crossed in got
// and a plaintext row of the same pass (what crossed unprotected, and the
// K/V cache), and where it was.
func worstCosine(t *testing.T, cfg *models.Config, s *runtime.Session, plainPasses, got []passRecord) (float64, string) {
	t.Helper()
	if len(got) != len(plainPasses) {
		t.Fatalf("%d passes recorded, %d unprotected", len(got), len(plainPasses))
	}
	var worst float64
	var worstAt string
	for p := range got {
		var secret [][]float32
		for _, c := range plainPasses[p] {
			secret = append(secret, rows(c)...)
		}
		for l := 0; l < cfg.NumHiddenLayers; l++ {
			for _, kind := range []byte{'k', 'v'} {
				cache, _ := s.Cache(models.CacheName(kind, l))
				secret = append(secret, cacheRows(cache, s.Pos(), cfg.NumKeyValueHeads, cfg.HeadDimension(), s.MaxContext())...)
			}
		}
		for _, c := range got[p] {
			if c.Rows < 9 {
				t.Errorf("pass %d: %s %s %q crosses %d rows: fewer than data rows + 8 shield rows", p, c.Dir, c.Op, c.Weight, c.Rows)
			}
			for _, row := range rows(c) {
				for _, sec := range secret {
					if len(sec) != len(row) {
						continue
					}
					if cs := math.Abs(cosine(row, sec)); cs > worst {
						worst, worstAt = cs, fmt.Sprintf("pass %d, %s %s %q", p, c.Dir, c.Op, c.Weight)
					}
				}
			}
		}
	}
	return worst, worstAt
}
