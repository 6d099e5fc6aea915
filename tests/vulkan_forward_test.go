package tests

import (
	"math"
	"os"
	"testing"

	"gelo/formats"
	"gelo/lower/vulkan"
	"gelo/lower/vulkan/vulkantest"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// vulkanForwardTolerance bounds the logit deviation of the whole-forward
// Vulkan engine from the cpu backend, relative to the largest |logit|.
// Both compute in float32; the shaders sum dot products, norms and
// softmax in their own order (and the driver may contract to FMA), so the
// logits differ by round-off carried through the layers. Measured on
// lavapipe (Mesa 22.3.6) over 64 steps of qwen3-tiny: at most 1.0e-6 for
// f32 and bf16, 3.1e-7 for q8_0 and q4_0; 1e-4 is the bound the gomlx whole-forward parity uses and still catches a wrong
// RoPE, GQA mapping, mask or cache slot (order 1e-2 or more).
const vulkanForwardTolerance = 1e-4

// vulkanQuantTolerance bounds the q8_0/q4_0 deviation, teacher-forced
// (both engines decode the cpu's tokens). The engines quantize each
// activation row to q8 blocks as the cpu does, so an ulp of difference in
// a norm or an exp that lands on a rounding boundary moves one quant by
// one step, and this synthetic model (random weights, no trained
// structure to damp it) carries that step through the layers. Measured
// on lavapipe over 64 steps, seeds 1-12 and 21 of the synthetic
// qwen3-tiny (the tied embedding gathered from the head's blocks): either
// no quant moves (2.6e-7 to 5.3e-7, as f32) or one does in the prefill and
// the cache carries it to every later step (1.6e-3 to 3.2e-2). Before this gate was teacher-forced it compared free-running
// greedy tokens at 1e-4 and passed only on lucky seeds: seeds 1, 2 and 5
// failed it, by a quant step that forks the sequences. 5e-2 still fails a
// mis-wired quantized weight: q4_0 weights uploaded as q8_0 deviate by
// 0.59.
const vulkanQuantTolerance = 5e-2

// openVulkanForward opens the engine under vulkantest's policy (skip
// without a driver, fail under GELO_REQUIRE_VULKAN=1, fail on validation
// errors).
func openVulkanForward(t testing.TB, w *models.Weights) *vulkan.Forward {
	t.Helper()
	return vulkantest.OpenForward(t, w)
}

// TestVulkanForwardWide: the parity of TestVulkanForwardParity on the
// fused 4-layer model at the 0.6B widths (its embedding table spans
// several buffers under lavapipe's 128 MiB binding cap), 16 steps, f32 and
// bf16; slow on lavapipe, so only with GELO_VULKAN_WIDE=1. (q8_0 and q4_0
// are not compared at these widths: the shaders' norms and exp round
// differently from the Go kernels by an ulp, which now and then moves an
// activation quant by one, and this synthetic model amplifies one such
// step to about 1e-2 of the logits within a layer.)
func TestVulkanForwardWide(t *testing.T) {
	if os.Getenv("GELO_VULKAN_WIDE") != "1" {
		t.Skip("GELO_VULKAN_WIDE=1 runs the 0.6B-width model")
	}
	const steps = 16
	cfg := smallWidthConfig(t)
	w, err := models.SynthesizeAs(cfg, 21, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	fw := openVulkanForward(t, w)
	for _, format := range []string{formats.F32, formats.BF16} {
		t.Run(format, func(t *testing.T) {
			po := plain
			po.Weights = format
			m, err := plan.Compile(models.Source{}, cfg, plan.Options{ProtectOptions: po}, nil)
			if err != nil {
				t.Fatal(err)
			}
			prompt := testPrompt(12, cfg.VocabSize)
			maxCtx := len(prompt) + steps
			ref := newSessionOpts(t, m, w, testKey, runtime.Options{MaxContext: maxCtx})
			wantToks, wantLogits := greedyRun(t, ref, prompt, steps)
			s, err := runtime.NewSession(m, runtime.Adapt(fw.Name(), fw.Compile), runtime.Options{MaxContext: maxCtx})
			if err != nil {
				t.Fatal(err)
			}
			toks, logits := greedyRun(t, s, prompt, steps)
			var worst float64
			for i := range logits {
				worst = math.Max(worst, relErr(logits[i], f64(wantLogits[i])))
			}
			t.Logf("%s: max logit deviation from cpu %.2g over %d steps", format, worst, steps)
			if !(worst <= vulkanForwardTolerance) {
				t.Errorf("logits deviate by %.3g relative (tolerance %g)", worst, vulkanForwardTolerance)
			}
			for i := range toks {
				if toks[i] != wantToks[i] {
					t.Fatalf("token %d is %d on vulkan, %d on cpu", i, toks[i], wantToks[i])
				}
			}
		})
	}
}

// TestVulkanForwardParity: a session on the whole-forward Vulkan engine
// of a mask-none qwen3-tiny module gives the cpu backend's greedy tokens
// over 64 steps, with logits within vulkanForwardTolerance and the device
// caches matching the cpu's, for f32, bf16, q8_0 and q4_0 weights and the unfused
// pipeline; each decode step is one submit and, once its kv bucket is
// recorded, records nothing; a second run of the same plan on the same
// device is bit-identical.
func TestVulkanForwardParity(t *testing.T) {
	const steps = 64
	cases := []struct {
		name    string
		weights string
		noFuse  []string
	}{
		{"f32/fused", formats.F32, nil},
		{"bf16/fused", formats.BF16, nil},
		{"f32/unfused", formats.F32, passes.Unfused()},
		{"q8_0/fused", formats.Q8_0, nil},
		{"q4_0/fused", formats.Q4_0, nil},
	}
	cfg := tinyConfig(t)
	w, err := models.SynthesizeAs(cfg, 21, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	fw := openVulkanForward(t, w) // one device, its weights resident once per format
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			po := plain
			po.Weights = tc.weights
			m, err := plan.Compile(models.Source{}, cfg, plan.Options{ProtectOptions: po, NoFuse: tc.noFuse}, nil)
			if err != nil {
				t.Fatal(err)
			}
			prompt := testPrompt(12, cfg.VocabSize)
			maxCtx := len(prompt) + steps
			ref := newSessionOpts(t, m, w, testKey, runtime.Options{MaxContext: maxCtx})
			wantToks, wantLogits := greedyRun(t, ref, prompt, steps)

			quantized := tc.weights == formats.Q8_0 || tc.weights == formats.Q4_0
			run := func() ([]int, [][]float32, *runtime.Session) {
				s, err := runtime.NewSession(m, runtime.Adapt(fw.Name(), fw.Compile), runtime.Options{MaxContext: maxCtx})
				if err != nil {
					t.Fatal(err)
				}
				if quantized {
					logits := forced(t, s, prompt, wantToks)
					toks := make([]int, len(logits))
					for i := range logits {
						toks[i] = runtime.Argmax(logits[i])
					}
					return toks, logits, s
				}
				toks, logits := greedyRun(t, s, prompt, steps)
				return toks, logits, s
			}
			before := fw.Stats()
			toks, logits, s := run()
			st := fw.Stats()
			tol := vulkanForwardTolerance
			if quantized {
				tol = vulkanQuantTolerance
			}
			var worst float64
			for i := range logits {
				worst = math.Max(worst, relErr(logits[i], f64(wantLogits[i])))
			}
			t.Logf("%s on %s: max logit deviation from cpu %.2g (relative to max |logit|) over %d steps", tc.name, fw.Name(), worst, steps)
			if !(worst <= tol) { // NaN fails too
				t.Errorf("logits deviate by %.3g relative (tolerance %g)", worst, tol)
			}
			for i := range toks {
				if toks[i] == wantToks[i] {
					continue
				}
				// Every logit within tol x max|logit| of the cpu's can
				// move the argmax only where the cpu's top two are within
				// twice that.
				if !quantized || margin(wantLogits[i]) > 2*tol*maxAbs(wantLogits[i]) {
					t.Fatalf("token %d is %d on %s, %d on cpu", i, toks[i], fw.Name(), wantToks[i])
				}
			}
			// One prefill and steps-1 decode steps, one submit each; a
			// recording for the prefill and for each kv bucket the decode
			// steps reach (64 and 128 here), none for a replayed step.
			runs := st.Runs - before.Runs
			if runs != steps || st.Submits-before.Submits != runs {
				t.Errorf("%d steps ran with %d submits, want %d and one a step", runs, st.Submits-before.Submits, steps)
			}
			buckets := map[int]bool{}
			for kv := len(prompt) + 1; kv < maxCtx; kv++ {
				buckets[runtime.Bucket(kv, maxCtx)] = true
			}
			if rec := st.Recordings - before.Recordings; rec != int64(1+len(buckets)) {
				t.Errorf("%d recordings, want %d (the prefill and %d kv buckets)", rec, 1+len(buckets), len(buckets))
			}
			t.Logf("%d steps: %d recordings, %d submits, %.1f dispatches a step", runs, st.Recordings-before.Recordings,
				st.Submits-before.Submits, float64(st.Dispatches-before.Dispatches)/float64(runs))
			if err := fw.SyncCaches(); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{models.CacheName('k', 0), models.CacheName('v', cfg.NumHiddenLayers-1)} {
				got, _ := s.Cache(name)
				want, _ := ref.Cache(name)
				want = tokenMajor(want, cfg.NumKeyValueHeads, cfg.HeadDimension(), maxCtx)
				if e := relErr(got, f64(want)); !(e <= tol) {
					t.Errorf("cache %s deviates by %.3g relative", name, e)
				}
			}
			// The same plan again on the same device (fresh session,
			// fresh programs): bit-identical.
			toks2, logits2, _ := run()
			for i := range logits {
				for j := range logits[i] {
					if math.Float32bits(logits[i][j]) != math.Float32bits(logits2[i][j]) {
						t.Fatalf("second run: step %d logit %d is %v, first run %v", i, j, logits2[i][j], logits[i][j])
					}
				}
				if toks2[i] != toks[i] {
					t.Fatalf("second run: token %d differs", i)
				}
			}
		})
	}
}

// TestVulkanForwardBatch: four sequences decoded together on the Vulkan
// engine (prefill binds each sequence's slot of the cache storage, decode
// the whole storage or a prefix of it: one device cache that takes the
// slots over) give the cpu backend's batched tokens.
func TestVulkanForwardBatch(t *testing.T) {
	const steps = 16
	cfg := tinyConfig(t)
	w, err := models.SynthesizeAs(cfg, 9, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	fw := openVulkanForward(t, w)
	prompts := [][]int32{testPrompt(3, cfg.VocabSize), testPrompt(11, cfg.VocabSize)[4:], testPrompt(7, cfg.VocabSize), {42}}
	want, err := newBatch(t, cfg, w, plain, len(prompts), 64).Generate(prompts, runtime.GenerateOptions{MaxTokens: steps}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := compileModule(t, cfg, models.TraceOptions{}, plain)
	bt, err := runtime.NewBatch(m, runtime.Adapt(fw.Name(), fw.Compile), len(prompts), runtime.Options{MaxContext: 64})
	if err != nil {
		t.Fatal(err)
	}
	got, err := bt.Generate(prompts, runtime.GenerateOptions{MaxTokens: steps}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("sequence %d: %d tokens on vulkan, %d on cpu", i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("sequence %d token %d: vulkan %d, cpu %d", i, j, got[i][j], want[i][j])
			}
		}
	}
	st := fw.Stats()
	t.Logf("%d steps: %d recordings, %d submits (the two 7-token prompts share one prefill recording)", st.Runs, st.Recordings, st.Submits)

	// The last slot first: its binding covers only itself, so the first
	// slot's later binding takes its device cache over (contents and all).
	cpuBt := newBatch(t, cfg, w, plain, 2, 64)
	vkBt, err := runtime.NewBatch(m, runtime.Adapt(fw.Name(), fw.Compile), 2, runtime.Options{MaxContext: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, bt := range []*runtime.Batch{cpuBt, vkBt} {
		for _, i := range []int{1, 0} {
			if _, err := bt.Prefill(i, prompts[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantL, err := cpuBt.Decode([]int32{5, 6})
	if err != nil {
		t.Fatal(err)
	}
	gotL, err := vkBt.Decode([]int32{5, 6})
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(gotL, f64(wantL)); !(e <= vulkanForwardTolerance) {
		t.Errorf("slots prefilled last-first: decode logits deviate by %.3g relative", e)
	}
}
