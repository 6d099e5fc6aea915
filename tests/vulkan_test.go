package tests

import (
	"cmp"
	"math"
	"os"
	"testing"

	"gelo/device"
	"gelo/formats"
	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/lower/vulkan/vulkantest"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

// vulkanTolerance bounds the logit deviation (relative to max |logit|)
// between lavapipe and the local device for f32 and bf16 weights, where
// only the summation order of each device product differs (on lavapipe
// each lane walks its weight row four products at a time, on a GPU lanes
// stride and subgroupAdd reduces; the Go kernels sum in their blocked
// order). Measured over 64 steps on lavapipe (Mesa 22.3.6): qwen3-tiny
// 1.3e-6 (f32) and 7.4e-7 (bf16) under none, 2.6e-6 and 2.3e-6 under
// exact; the 0.6B widths 2.2e-6 and 2.0e-6 under none. 1e-4 is the bound
// the other device parity tests use (40x margin), and still catches a
// wrong stride or part offset (order 1). q8_0 and q4_0 products are the
// Go kernels' bit for bit (the shaders keep their canonical order), so
// there the logits must be identical, and are.
const vulkanTolerance = 1e-4

// TestVulkanParity: greedy tokens identical over 64 steps between lavapipe
// (or any Vulkan device) and the local device, for f32, bf16, q8_0 and
// q4_0 weights, under --security none on qwen3-tiny and (with
// GELO_VULKAN_WIDE=1: minutes on lavapipe) the 4-layer model at the
// Qwen3-0.6B widths, and under the default level (exact, with every
// linear op offloaded: by default exact keeps them all in the TEE and
// nothing would cross) on qwen3-tiny; its full-span stacks (s >= n + d
// rows a crossing) make each step at the 0.6B widths too slow for
// lavapipe. Logits within vulkanTolerance (f32, bf16) or bit-identical
// (q8_0, q4_0).
func TestVulkanParity(t *testing.T) {
	dev := vulkantest.Open(t)
	exact, ok := passes.LookupLevel(passes.LevelExact)
	if !ok {
		t.Fatal("no exact level")
	}
	cases := []struct {
		name   string
		cfg    func(testing.TB) *models.Config
		levels []string
	}{
		{"qwen3-tiny", func(testing.TB) *models.Config { c, _ := models.Variant("qwen3-tiny"); return c }, []string{passes.LevelNone, passes.LevelExact}},
		{"qwen3-0.6b-widths-4-layers", smallWidthConfig, []string{passes.LevelNone}},
	}
	const steps = 64
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "qwen3-tiny" && os.Getenv("GELO_VULKAN_WIDE") != "1" {
				t.Skip("the 0.6B widths take about 6 minutes on lavapipe (2 cores): set GELO_VULKAN_WIDE=1 to run them")
			}
			cfg := tc.cfg(t)
			w, err := models.SynthesizeAs(cfg, 21, "bf16")
			if err != nil {
				t.Fatal(err)
			}
			prompt := testPrompt(16, cfg.VocabSize)
			for _, level := range tc.levels {
				for _, format := range []string{formats.F32, formats.BF16, formats.Q8_0, formats.Q4_0} {
					t.Run(level+"/"+format, func(t *testing.T) {
						po := plain
						if level == passes.LevelExact {
							po = exact.Options(passes.DefaultProtect())
							po.OffloadAll = true
						}
						po.Weights = format
						m := compileModule(t, cfg, models.TraceOptions{}, po)
						ls, lspy := spySession(t, m, w, testKey, 16+steps)
						wantToks, wantLogits := greedyRun(t, ls, prompt, steps)
						before := dev.Stats()
						vs, vspy := deviceSession(t, m, w, dev, 16+steps)
						toks, logits := greedyRun(t, vs, prompt, steps)
						after := dev.Stats()
						var worst float64
						identical := true
						for i := range logits {
							worst = math.Max(worst, relErr(logits[i], f64(wantLogits[i])))
							for j := range logits[i] {
								identical = identical && math.Float32bits(logits[i][j]) == math.Float32bits(wantLogits[i][j])
							}
						}
						calls := after.Calls - before.Calls
						t.Logf("%s %s: max logit deviation %.2g relative, bit-identical %v; %d crossings, %d submits, %d dispatches, %d recordings",
							level, cmp.Or(format, "f32"), worst, identical, calls, after.Submits-before.Submits,
							after.Dispatches-before.Dispatches, after.Recordings-before.Recordings)
						if calls == 0 {
							t.Fatal("nothing crossed to the Vulkan device")
						}
						if format == formats.Q8_0 || format == formats.Q4_0 {
							if !identical {
								t.Errorf("%s logits differ from the local device's (max %.3g): the quantized shaders lost the canonical order", format, worst)
							}
						} else if worst > vulkanTolerance {
							t.Errorf("logits deviate by %.3g relative (tolerance %g)", worst, vulkanTolerance)
						}
						for i := range toks {
							if toks[i] != wantToks[i] {
								t.Fatalf("token %d is %d on Vulkan, %d on the local device", i, toks[i], wantToks[i])
							}
						}
						if lr, vr := lspy.Record(), vspy.Record(); len(lr) != len(vr) {
							t.Errorf("%d crossings on Vulkan, %d on the local device", len(vr), len(lr))
						}
					})
				}
			}
		})
	}
}

// TestVulkanReplayBitIdenticalToEager decodes 128 steps eagerly and with
// capture/replay on one Vulkan device, across kv-length buckets, demands
// identical bits at every step, and checks that once each row bucket has
// been recorded a replayed step records no command buffer: unprotected,
// and under gelo-8x4 with every op offloaded (9-row stacks: the shaders'
// multi-row path; exact's full-span stacks are in TestVulkanParity).
func TestVulkanReplayBitIdenticalToEager(t *testing.T) {
	dev := vulkantest.Open(t)
	cfg, _ := models.Variant("qwen3-tiny")
	w, err := models.SynthesizeAs(cfg, 1, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	const promptLen, steps = 8, 128
	lv, _ := passes.LookupLevel(passes.Level8x4)
	shielded := lv.Options(passes.DefaultProtect())
	shielded.OffloadAll = true
	for _, po := range []passes.ProtectOptions{plain, shielded} {
		t.Run(po.Mask, func(t *testing.T) {
			m := compileModule(t, cfg, models.TraceOptions{}, po)
			eager, _ := deviceSessionOpts(t, m, w, dev, runtime.Options{MaxContext: promptLen + steps + 1, Eager: true})
			replay, _ := deviceSessionOpts(t, m, w, dev, runtime.Options{MaxContext: promptLen + steps + 1})
			prompt := testPrompt(promptLen, cfg.VocabSize)
			a, err := eager.Prefill(prompt)
			if err != nil {
				t.Fatal(err)
			}
			b, err := replay.Prefill(prompt)
			if err != nil {
				t.Fatal(err)
			}
			var rec int64
			for step := 0; step < steps; step++ {
				for i := range a {
					if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
						t.Fatalf("step %d logit %d: eager %v, replay %v", step, i, a[i], b[i])
					}
				}
				if step == 1 {
					rec = dev.Stats().Recordings
				}
				tok := int32(runtime.Argmax(a))
				if a, err = eager.Decode(tok); err != nil {
					t.Fatal(err)
				}
				if b, err = replay.Decode(tok); err != nil {
					t.Fatal(err)
				}
			}
			if got := dev.Stats().Recordings - rec; got != 0 {
				t.Errorf("%d command buffers recorded after the first decode step, want 0", got)
			}
			if got := replay.Captured(); len(got) < 2 {
				t.Errorf("replay captured buckets %v: the run should cross at least two", got)
			} else {
				t.Logf("captured kv buckets %v; %d command buffers recorded in all", got, dev.Stats().Recordings)
			}
		})
	}
}

// deviceSessionOpts is deviceSession with the session's options.
func deviceSessionOpts(t testing.TB, m *ir.Module, w *models.Weights, dev device.Device, opt runtime.Options) (*runtime.Session, *device.SpyDevice) {
	t.Helper()
	spy := device.NewSpy(dev)
	be := cpu.New(w, cpu.Options{Device: spy, SessionKey: testKey})
	t.Cleanup(be.Close)
	s, err := runtime.NewSession(m, runtime.Adapt(be.Name(), be.Compile), opt)
	if err != nil {
		t.Fatal(err)
	}
	return s, spy
}
