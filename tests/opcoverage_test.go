package tests

import (
	"slices"
	"testing"

	"gelo/formats"
	"gelo/ir"
	"gelo/lower"
	"gelo/lower/cpu"
	"gelo/lower/gomlx"
	"gelo/lower/vulkan/vulkantest"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// opTables lists every backend's record whose op table this build
// lowers; the vulkan one is added by opcoverage_vulkan_test.go where
// lower/vulkan is built with cgo. A new backend adds one line here.
var opTables = []lower.Capabilities{cpu.Capabilities(), gomlx.Capabilities()}

// Every registered op is either lowered or explicitly declined (with a
// reason) by every backend, so a new op cannot reach a backend that has
// silently never heard of it; and every op a record names is registered.
func TestEveryOpHasAKernelOrARefusal(t *testing.T) {
	for _, c := range opTables {
		if err := c.Check(); err != nil {
			t.Error(err)
		}
		for _, op := range ir.Ops() {
			_, declined := c.Declined(op)
			if !c.Lowered(op) && !declined {
				t.Errorf("backend %s: op %s is neither lowered nor declined", c.Backend, op)
			}
		}
		for _, op := range c.Lowers {
			if ir.Op(op) == nil {
				t.Errorf("backend %s lowers op %s, which is not registered", c.Backend, op)
			}
		}
		for op := range c.Declines {
			if ir.Op(op) == nil {
				t.Errorf("backend %s declines op %s, which is not registered", c.Backend, op)
			}
		}
	}
}

// TestRecordsNameWhatTheEngineTakes: every backend NewEngine knows has a
// consistent record, and every weight format, KV dtype and device it
// declares is one the compiler and the engine take: a record cannot
// promise a --weights or --kv-dtype the flags refuse.
func TestRecordsNameWhatTheEngineTakes(t *testing.T) {
	var kv []string
	for _, dt := range models.KVDTypes {
		kv = append(kv, dt.String())
	}
	seen := map[string]bool{}
	for _, c := range plan.Backends() {
		if err := c.Check(); err != nil {
			t.Error(err)
		}
		if seen[c.Backend] {
			t.Errorf("backend %s has two records", c.Backend)
		}
		seen[c.Backend] = true
		for _, tc := range []struct {
			what      string
			got, want []string
		}{
			{"weight format", c.Weights, formats.PlanNames()},
			{"KV dtype", c.KVDTypes, kv},
			{"device weight format", c.Device.Weights, formats.PlanNames()},
		} {
			for _, x := range tc.got {
				if !slices.Contains(tc.want, x) {
					t.Errorf("backend %s declares %s %q; the compiler takes %v", c.Backend, tc.what, x, tc.want)
				}
			}
		}
		for _, d := range c.Device.Names {
			if !c.Device.Matches(d) {
				t.Errorf("backend %s: device name %q is not of its family %q", c.Backend, d, c.Device.Family)
			}
		}
	}
	for _, b := range []string{"cpu", "gomlx", "vulkan"} {
		if !seen[b] {
			t.Errorf("NewEngine has no record of backend %s", b)
		}
	}
}

// TestRecordsHold: what a record says its engine and its device take,
// they run. Every weight format and KV dtype of its engine runs a prefill
// and a decode step of a mask-none plan on it; every weight format of its
// device runs them under the cpu backend for a gelo-8x4 plan with every
// linear op offloaded. (TestNewEngineRefusesWhatTheRecordsDecline in plan
// checks the other side: what a record leaves out is refused.)
func TestRecordsHold(t *testing.T) {
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	// Rows of whole q4_k blocks (256 values): qwen3-tiny's 64 would make
	// every q4_k weight its q8_0 fallback.
	cfg.HiddenSize, cfg.IntermediateSize, cfg.HeadDim, cfg.NumHiddenLayers = 256, 256, 64, 1
	w, err := models.SynthesizeAs(cfg, 21, "f32")
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, eo plan.EngineOptions, o plan.Options) {
		m, err := plan.Compile(models.Source{}, cfg, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, done, err := plan.NewSession(eo, w, testKey, m, runtime.Options{MaxContext: 16})
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		if _, err := s.Prefill(testPrompt(5, cfg.VocabSize)); err != nil {
			t.Fatalf("prefill: %v", err)
		}
		if _, err := s.Decode(1); err != nil {
			t.Fatalf("decode: %v", err)
		}
	}
	for _, c := range plan.Backends() {
		gate := func(t *testing.T) {
			if c.Device.Family == "vulkan" {
				vulkantest.Open(t) // skips without a driver
			}
		}
		for _, f := range c.Weights {
			for _, kv := range c.KVDTypes {
				t.Run(c.Backend+"/engine/"+f+"/kv-"+kv, func(t *testing.T) {
					gate(t)
					dt, err := plan.ParseKVDType(kv)
					if err != nil {
						t.Fatal(err)
					}
					o := plan.Level(passes.LevelNone)
					o.Weights, o.Trace.KVDType = f, dt
					run(t, plan.EngineOptions{Backend: c.Backend, GomlxBackend: "go"}, o)
				})
			}
		}
		for _, f := range c.Device.Weights {
			t.Run(c.Backend+"/device/"+f, func(t *testing.T) {
				gate(t)
				o := plan.Level(passes.Level8x4)
				o.Weights, o.OffloadAll = f, true
				run(t, plan.EngineOptions{Device: c.Device.Names[0]}, o)
			})
		}
	}
}
