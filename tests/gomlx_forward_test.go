package tests

import (
	"math"
	"os"
	"strings"
	"testing"

	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/lower/gomlx"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// forwardTolerance bounds the logit deviation of the whole-forward gomlx
// program from the cpu backend, relative to the largest |logit|, on the
// unprotected graph. Both compute in float32; gomlx sums dot products,
// norms and softmax in its own order and uses its own exp, so the logits
// differ by round-off carried through the layers. 1e-4 is the bound the
// other gomlx parity tests use and still catches a wrong RoPE, GQA
// mapping, mask or cache slot (order 1e-2 or more).
const forwardTolerance = 1e-4

func tinyConfig(t testing.TB) *models.Config {
	c, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// forwardEngine is the gomlx engine the whole-forward parity test runs
// on: go, or $GELO_GOMLX_FORWARD (xla:cuda on a lent GPU, bench/gpu).
func forwardEngine() string {
	if e := os.Getenv("GELO_GOMLX_FORWARD"); e != "" {
		return e
	}
	return "go"
}

func openForward(t testing.TB, backend string, w *models.Weights) *gomlx.Forward {
	t.Helper()
	fw, err := gomlx.NewForward(backend, w)
	if gomlx.Unavailable(err) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fw.Close(); err != nil {
			t.Error(err)
		}
	})
	return fw
}

// TestGomlxForwardParity: a session on the whole-forward gomlx program of
// a mask-none module gives the cpu backend's greedy tokens over 16 steps,
// with logits within forwardTolerance, for the fused (default) and the
// unfused pipelines on qwen3-tiny and, without -short, the fused 4-layer
// model at the 0.6B widths.
func TestGomlxForwardParity(t *testing.T) {
	const steps = 16
	cases := []struct {
		name   string
		cfg    func(testing.TB) *models.Config
		noFuse []string
		short  bool
	}{
		{"qwen3-tiny/fused", tinyConfig, nil, true},
		{"qwen3-tiny/unfused", tinyConfig, passes.Unfused(), true},
		// swiglu over separate gate and up products
		{"qwen3-tiny/no-concat_proj", tinyConfig, []string{"concat_proj"}, true},
		{"0.6b-widths-4-layers/fused", smallWidthConfig, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && !tc.short {
				t.Skip("-short: the 0.6B-width model on simplego takes a while")
			}
			cfg := tc.cfg(t)
			w, err := models.SynthesizeAs(cfg, 21, "bf16")
			if err != nil {
				t.Fatal(err)
			}
			m, err := plan.Compile(models.Source{}, cfg, plan.Options{ProtectOptions: plain, NoFuse: tc.noFuse}, nil)
			if err != nil {
				t.Fatal(err)
			}
			prompt := testPrompt(12, cfg.VocabSize)
			maxCtx := len(prompt) + steps

			ref := newSessionOpts(t, m, w, testKey, runtime.Options{MaxContext: maxCtx})
			wantToks, wantLogits := greedyRun(t, ref, prompt, steps)

			fw := openForward(t, forwardEngine(), w)
			s, err := runtime.NewSession(m, runtime.Adapt(fw.Name(), fw.Compile), runtime.Options{MaxContext: maxCtx})
			if err != nil {
				t.Fatal(err)
			}
			toks, logits := greedyRun(t, s, prompt, steps)
			var worst float64
			for i := range logits {
				worst = math.Max(worst, relErr(logits[i], f64(wantLogits[i])))
			}
			t.Logf("%s on %s: max logit deviation from cpu %.2g (relative to max |logit|) over %d steps", tc.name, fw.Name(), worst, steps)
			if !(worst <= forwardTolerance) { // NaN fails too
				t.Errorf("logits deviate by %.3g relative (tolerance %g)", worst, forwardTolerance)
			}
			for i := range toks {
				if toks[i] != wantToks[i] {
					t.Fatalf("token %d is %d on %s, %d on cpu", i, toks[i], fw.Name(), wantToks[i])
				}
			}
			// The caches the session holds were updated in place.
			for _, name := range []string{models.CacheName('k', 0), models.CacheName('v', cfg.NumHiddenLayers-1)} {
				got, _ := s.Cache(name)
				want, _ := ref.Cache(name)
				want = tokenMajor(want, cfg.NumKeyValueHeads, cfg.HeadDimension(), maxCtx)
				if e := relErr(got, f64(want)); !(e <= forwardTolerance) {
					t.Errorf("cache %s deviates by %.3g relative", name, e)
				}
			}
		})
	}
}

// TestGomlxForwardRefusesProtected: a protected (hd3) graph is refused at
// compile, naming the protection op; so is an op it has no lowering for.
func TestGomlxForwardRefusesProtected(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	w, err := models.SynthesizeAs(cfg, 21, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	fw := openForward(t, "go", w)
	hd3 := passes.ProtectOptions{Mask: passes.MaskHD3, Cadence: passes.PerForward, ShieldK: 8, ShieldEnergy: 4, Center: true}
	m := compileModule(t, cfg, models.TraceOptions{}, hd3)
	_, err = fw.Compile(m.Graph("decode"), map[string]int{"B": 1, "T": 32, "L": 32})
	if err == nil || !strings.Contains(err.Error(), "protected graphs are not supported") {
		t.Fatalf("hd3 decode graph: got %v, want a refusal of the protected graph", err)
	}
	t.Log(err)

	g := &ir.Graph{Name: "odd", Params: []string{"n"}}
	x, err := g.AddDeclared("input", ir.Attrs{"name": "x"}, ir.T(ir.F32, "n", 4))
	if err != nil {
		t.Fatal(err)
	}
	y, err := g.Add("mean_rows", nil, x)
	if err != nil {
		t.Fatal(err)
	}
	g.Outputs = []ir.Output{{Name: "y", Value: y}}
	if _, err := fw.Compile(g, map[string]int{"n": 2}); err == nil || !strings.Contains(err.Error(), "mean_rows") {
		t.Fatalf("got %v, want an error naming mean_rows", err)
	}
}

// TestGomlxForwardBatch: batched decode (B = 3 sequences of different
// lengths, each prefilled into its slot of one [B, T, kv] cache) on the
// whole-forward program matches the cpu backend's batch: the attention
// path that gathers each row's own cache, and the cache write at (seq, pos).
func TestGomlxForwardBatch(t *testing.T) {
	cfg := tinyConfig(t)
	w, err := models.SynthesizeAs(cfg, 9, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	m := compileModule(t, cfg, models.TraceOptions{}, plain)
	prompts := [][]int32{testPrompt(5, cfg.VocabSize), {7, 8}, testPrompt(9, cfg.VocabSize)[3:]}
	const maxCtx, steps = 32, 6
	run := func(be runtime.Backend) [][]float32 {
		bt, err := runtime.NewBatch(m, be, len(prompts), runtime.Options{MaxContext: maxCtx})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range prompts {
			if _, err := bt.Prefill(i, p); err != nil {
				t.Fatal(err)
			}
		}
		toks := []int32{11, 12, 13}
		var all [][]float32
		for s := 0; s < steps; s++ {
			l, err := bt.Decode(toks)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, append([]float32(nil), l...))
			v := cfg.VocabSize
			for i := range toks {
				toks[i] = int32(runtime.Argmax(l[i*v : (i+1)*v]))
			}
		}
		return all
	}
	cpuBe := cpuBackend(t, w)
	want := run(cpuBe)
	fw := openForward(t, "go", w)
	got := run(runtime.Adapt(fw.Name(), fw.Compile))
	var worst float64
	v := cfg.VocabSize
	for s := range want {
		for i := range prompts {
			worst = math.Max(worst, relErr(got[s][i*v:(i+1)*v], f64(want[s][i*v:(i+1)*v])))
			if a, b := runtime.Argmax(got[s][i*v:(i+1)*v]), runtime.Argmax(want[s][i*v:(i+1)*v]); a != b {
				t.Fatalf("step %d sequence %d: token %d on %s, %d on cpu", s, i, a, fw.Name(), b)
			}
		}
	}
	t.Logf("batched decode B=%d on %s: max logit deviation from cpu %.2g over %d steps", len(prompts), fw.Name(), worst, steps)
	if !(worst <= forwardTolerance) {
		t.Errorf("logits deviate by %.3g relative (tolerance %g)", worst, forwardTolerance)
	}
}

func cpuBackend(t testing.TB, w *models.Weights) runtime.Backend {
	be := cpu.New(w, cpu.Options{SessionKey: testKey})
	t.Cleanup(be.Close)
	return runtime.Adapt(be.Name(), be.Compile)
}

// BenchmarkGomlxForwardDecode times one decode step of the 4-layer
// 0.6B-width model (mask none) at a 64-token context: the whole forward
// on gomlx (simplego unless $GOMLX_BACKEND says otherwise) against the
// cpu backend.
func BenchmarkGomlxForwardDecode(b *testing.B) {
	cfg := smallWidthConfig(b)
	w, err := models.SynthesizeAs(cfg, 21, "bf16")
	if err != nil {
		b.Fatal(err)
	}
	m := compileModule(b, cfg, models.TraceOptions{}, plain)
	fw := openForward(b, "", w)
	for _, be := range []runtime.Backend{cpuBackend(b, w), runtime.Adapt(fw.Name(), fw.Compile)} {
		b.Run(be.Name(), func(b *testing.B) {
			s, err := runtime.NewSession(m, be, runtime.Options{MaxContext: 64})
			if err != nil {
				b.Fatal(err)
			}
			prompt := testPrompt(16, cfg.VocabSize)
			for b.Loop() {
				if s.Pos()+1 >= s.MaxContext() || s.Pos() == 0 {
					s.Reset()
					if _, err := s.Prefill(prompt); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := s.Decode(5); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
