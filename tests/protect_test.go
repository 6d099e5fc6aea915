package tests

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gelo/device"
	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

var testKey = []byte("gelo protect test session key 01")

// protections lists every family x cadence the protect pass offers.
func protections() []passes.ProtectOptions {
	var out []passes.ProtectOptions
	for _, m := range []string{passes.MaskNone, passes.MaskHaar, passes.MaskHD3} {
		for _, c := range []string{passes.PerForward, passes.PerOffload} {
			out = append(out, passes.ProtectOptions{Mask: m, Cadence: c, ShieldK: 8, ShieldEnergy: 4, Center: true})
		}
	}
	return out
}

func name(po passes.ProtectOptions) string { return po.Mask + "/" + po.Cadence }

// spySession builds a session whose device is wrapped by a spy.
func spySession(t testing.TB, m *ir.Module, w *models.Weights, key []byte, maxCtx int) (*runtime.Session, *device.SpyDevice) {
	t.Helper()
	be0 := cpu.New(w, cpu.Options{})
	t.Cleanup(be0.Close)
	spy := device.NewSpy(cpu.NewLocalDevice(be0.Kernels()))
	be := cpu.New(w, cpu.Options{Device: spy, SessionKey: key})
	t.Cleanup(be.Close)
	s, err := runtime.NewSession(m, runtime.Adapt(be.Name(), be.Compile), runtime.Options{MaxContext: maxCtx})
	if err != nil {
		t.Fatal(err)
	}
	return s, spy
}

// width17 is a 4-layer model with the Qwen3-1.7B widths (hidden 2048,
// 16/8 heads, intermediate 6144) and a 2048-token vocabulary.
func width17(t testing.TB) *models.Config {
	cfg, err := models.Variant("qwen3-1.7b")
	if err != nil {
		t.Fatal(err)
	}
	cfg.NumHiddenLayers, cfg.VocabSize = 4, 2048
	cfg.BOSTokenID, cfg.EOSTokenIDs = 1, models.TokenIDs{2}
	return cfg
}

// greedyRun decodes steps tokens greedily and returns every step's logits.
func greedyRun(t testing.TB, s *runtime.Session, prompt []int32, steps int) ([]int, [][]float32) {
	t.Helper()
	logits, err := s.Prefill(prompt)
	if err != nil {
		t.Fatal(err)
	}
	var toks []int
	var all [][]float32
	for i := 0; i < steps; i++ {
		all = append(all, append([]float32(nil), logits...))
		tok := runtime.Argmax(logits)
		toks = append(toks, tok)
		if i+1 < steps {
			if logits, err = s.Decode(int32(tok)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return toks, all
}

// maskTolerance bounds how far protected logits may drift from the
// unprotected ones, relative to the largest |logit|. Masking is exact in
// real arithmetic (A^T A = I); in f32 every crossing adds round-off from
// the transform (HD3: 3 log2(s) butterfly stages; Haar: an s-term dot per
// element) and from the product of rows that mix data with shield rows of
// 4x their norm, so the error relative to a data row is about
// 4 * sqrt(s) * eps_f32 per crossing in the worst case, and the
// crossings of a forward add up. Measured: at most 6.2e-6 on the 1.7B
// widths and 3.5e-6 on qwen3-tiny over 64 steps; 1e-4 leaves more than
// an order of magnitude of margin and still catches a wrong transpose or
// a mismatched shield row (errors of order 1). Tokens must match exactly.
const maskTolerance = 1e-4

func TestProtectedGreedyMatchesPlain(t *testing.T) {
	cases := []struct {
		name  string
		cfg   func(testing.TB) *models.Config
		steps int
	}{
		{"qwen3-tiny", func(testing.TB) *models.Config { c, _ := models.Variant("qwen3-tiny"); return c }, 64},
		{"qwen3-1.7b-widths-4-layers", width17, 64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name != "qwen3-tiny" {
				t.Skip("-short: the 1.7B-width model takes tens of seconds")
			}
			cfg := tc.cfg(t)
			w, err := models.SynthesizeAs(cfg, 21, "bf16")
			if err != nil {
				t.Fatal(err)
			}
			prompt := testPrompt(16, cfg.VocabSize)
			var refToks []int
			var refLogits [][]float32
			for _, po := range protections() {
				m := compileModule(t, cfg, models.TraceOptions{}, po)
				s, _ := spySession(t, m, w, testKey, 16+tc.steps)
				toks, logits := greedyRun(t, s, prompt, tc.steps)
				if refToks == nil {
					refToks, refLogits = toks, logits
					continue
				}
				var worst float64
				for i := range logits {
					worst = math.Max(worst, relErr(logits[i], f64(refLogits[i])))
				}
				t.Logf("%s: max logit deviation from mask none %.2g (relative to max |logit|)", name(po), worst)
				if worst > maskTolerance {
					t.Errorf("%s: logits deviate by %.3g relative (tolerance %g)", name(po), worst, maskTolerance)
				}
				for i := range toks {
					if toks[i] != refToks[i] {
						t.Fatalf("%s: token %d is %d, unprotected gives %d", name(po), i, toks[i], refToks[i])
					}
				}
			}
		})
	}
}

func f64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

func rows(c device.Crossing) [][]float32 {
	out := make([][]float32, c.Rows)
	for i := range out {
		out[i] = c.Data[i*c.Cols : (i+1)*c.Cols]
	}
	return out
}

// passRecord is what the spy saw during one forward pass.
type passRecord []device.Crossing

// recordPasses runs a prefill and decode steps, splitting the spy's
// record at pass boundaries.
func recordPasses(t testing.TB, s *runtime.Session, spy *device.SpyDevice, prompt []int32, steps int) []passRecord {
	t.Helper()
	var passes []passRecord
	mark := spy.Len()
	cut := func() {
		r := spy.Record()
		passes = append(passes, passRecord(r[mark:]))
		mark = len(r)
	}
	logits, err := s.Prefill(prompt)
	if err != nil {
		t.Fatal(err)
	}
	cut()
	for i := 0; i < steps; i++ {
		if logits, err = s.Decode(int32(runtime.Argmax(logits))); err != nil {
			t.Fatal(err)
		}
		cut()
	}
	return passes
}

// TestSpySeesNoPlaintext runs the same prompt unprotected and under each
// mask with the same inputs; the unprotected spy record is exactly the
// plaintext that would cross, so every masked payload row is compared
// with every plaintext row of the same pass, same op and direction.
//
// It runs on the 0.6B widths (rows of 1024 to 3072 values): on qwen3-tiny's
// 32-wide rows two unrelated random rows already reach |cos| > 0.5 by
// chance among thousands of pairs, which would make the 0.5 bound test
// nothing.
func TestSpySeesNoPlaintext(t *testing.T) {
	cfg := smallWidthConfig(t)
	w, err := models.SynthesizeAs(cfg, 4, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	prompt := testPrompt(12, cfg.VocabSize)
	const steps = 6
	plainMod := compileModule(t, cfg, models.TraceOptions{}, plain)
	ps, pspy := spySession(t, plainMod, w, testKey, 32)
	plainPasses := recordPasses(t, ps, pspy, prompt, steps)

	for _, po := range protections() {
		if po.Mask == passes.MaskNone {
			continue
		}
		t.Run(name(po), func(t *testing.T) {
			s, spy := spySession(t, compileModule(t, cfg, models.TraceOptions{}, po), w, testKey, 32)
			got := recordPasses(t, s, spy, prompt, steps)
			var worst float64
			var worstAt string
			for p := range got {
				// Every plaintext row of this pass, whatever crossed.
				var secret [][]float32
				for _, c := range plainPasses[p] {
					secret = append(secret, rows(c)...)
				}
				// The K/V cache rows and logits stay in the TEE too.
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
							cs := math.Abs(cosine(row, sec))
							if cs > worst {
								worst, worstAt = cs, fmt.Sprintf("pass %d, %s %s %q", p, c.Dir, c.Op, c.Weight)
							}
							if cs > 0.5 {
								t.Fatalf("pass %d: %s payload of %s %q is parallel to a plaintext row (|cos| = %.3f)", p, c.Dir, c.Op, c.Weight, cs)
							}
						}
					}
				}
			}
			t.Logf("largest |cos| between a crossing row and a plaintext row of its pass: %.3f (%s)", worst, worstAt)
		})
	}
}

// TestMasksAreFreshAndReproducible: the same inputs under two different
// passes are masked differently; the same session key and inputs give the
// same bits.
func TestMasksAreFreshAndReproducible(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, err := models.SynthesizeAs(cfg, 4, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	m := compileModule(t, cfg, models.TraceOptions{}, passes.DefaultProtect())
	prompt := testPrompt(10, cfg.VocabSize)
	s, spy := spySession(t, m, w, testKey, 32)
	a := recordPasses(t, s, spy, prompt, 0)[0]
	s.Reset()
	b := recordPasses(t, s, spy, prompt, 0)[0]
	if len(a) != len(b) {
		t.Fatalf("two prefills of the same prompt crossed %d and %d times", len(a), len(b))
	}
	first := a[0]
	if cs := math.Abs(cosine(first.Data, b[0].Data)); cs > 0.5 || fmt.Sprint(first.Data) == fmt.Sprint(b[0].Data) {
		t.Errorf("two passes over the same rows sent payloads with |cos| %.3f: the mask was not fresh", cs)
	}
	s2, spy2 := spySession(t, m, w, testKey, 32)
	c := recordPasses(t, s2, spy2, prompt, 0)[0]
	for i := range a {
		for j := range a[i].Data {
			if math.Float32bits(a[i].Data[j]) != math.Float32bits(c[i].Data[j]) {
				t.Fatalf("same key and inputs: crossing %d value %d differs", i, j)
			}
		}
	}
	s3, spy3 := spySession(t, m, w, []byte("another session key, 32 bytes.."), 32)
	d := recordPasses(t, s3, spy3, prompt, 0)[0]
	if cs := math.Abs(cosine(a[0].Data, d[0].Data)); cs > 0.5 {
		t.Errorf("different session keys sent payloads with |cos| %.3f", cs)
	}
}

// TestNoTokenOrCacheCrosses checks the record's shape: only matmul and
// lm_head payloads cross, every one of them float rows, every crossing
// carries the shielded row count, the embedding gather never happens on
// the device, and no plaintext logits come back.
func TestNoTokenOrCacheCrosses(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, _ := models.SynthesizeAs(cfg, 4, "bf16")
	m := compileModule(t, cfg, models.TraceOptions{}, passes.DefaultProtect())
	s, spy := spySession(t, m, w, testKey, 32)
	prompt := testPrompt(5, cfg.VocabSize)
	got := recordPasses(t, s, spy, prompt, 3)
	// Plain logits of the same run, for comparison with what came back.
	ps, _ := spySession(t, compileModule(t, cfg, models.TraceOptions{}, plain), w, testKey, 32)
	_, plainLogits := greedyRun(t, ps, prompt, 4)
	for p, rec := range got {
		for _, c := range rec {
			if c.Op != "matmul" && c.Op != "lm_head" {
				t.Errorf("pass %d: op %s crossed", p, c.Op)
			}
			if c.Rows != 16 { // HD3: next_pow2(5 + 8) = 16 and next_pow2(1 + 8) = 16
				t.Errorf("pass %d: %s crossed %d rows, want 16", p, c.Op, c.Rows)
			}
			if c.Op == "lm_head" && c.Dir == device.ToTEE {
				for _, row := range rows(c) {
					if cs := math.Abs(cosine(row, plainLogits[p])); cs > 0.5 {
						t.Errorf("pass %d: masked logits row parallel to the plain logits (|cos| %.3f)", p, cs)
					}
				}
			}
		}
	}
	for _, u := range spy.Uploads() {
		if u == "" {
			t.Error("an unnamed weight was uploaded")
		}
	}
}

// TestPassNumberNeverRepeats: the mask stream is keyed by the pass
// counter slot, so running a protected program twice with the same pass
// number under one session key is refused.
func TestPassNumberNeverRepeats(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, _ := models.SynthesizeAs(cfg, 4, "bf16")
	m := compileModule(t, cfg, models.TraceOptions{}, passes.DefaultProtect())
	be := cpu.New(w, cpu.Options{SessionKey: testKey})
	defer be.Close()
	p, err := be.Compile(m.Graph("decode"), map[string]int{"B": 1, "T": 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"k.0", "v.0", "k.1", "v.1"} {
		n, _ := p.Elems(name)
		if err := p.BindFloat32(name, make([]float32, n)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := p.Int32("pass")
	if err != nil {
		t.Fatal(err)
	}
	c[0] = 5
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	err = p.Run()
	if err == nil || !strings.Contains(err.Error(), "pass number 5 was already used") {
		t.Fatalf("second run with pass 5: %v", err)
	}
}
