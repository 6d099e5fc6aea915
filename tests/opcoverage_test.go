package tests

import (
	"testing"

	"gelo/ir"
	"gelo/lower"
	"gelo/lower/cpu"
	"gelo/lower/gomlx"
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
