package tests

import (
	"slices"
	"testing"

	"gelo/ir"
	"gelo/lower"
	"gelo/lower/cpu"
	"gelo/lower/gomlx"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
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
			{"weight format", c.Weights, passes.WeightFormats},
			{"KV dtype", c.KVDTypes, kv},
			{"device weight format", c.Device.Weights, passes.WeightFormats},
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
