package tests

import (
	"testing"

	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/lower/gomlx"
)

// opTables lists every backend's declared op table: whether it lowers an
// op, and why it declines one it refuses by name. A new backend adds one
// line here.
var opTables = []struct {
	backend  string
	supports func(op string) bool
	declines func(op string) (string, bool)
}{
	{"cpu", cpu.Supports, func(string) (string, bool) { return "", false }},
	{"gomlx forward", gomlx.ForwardSupports, gomlx.ForwardDeclines},
}

// Every registered op is either lowered or explicitly declined (with a
// reason) by every backend, so a new op cannot reach a backend that has
// silently never heard of it.
func TestEveryOpHasAKernelOrARefusal(t *testing.T) {
	for _, bt := range opTables {
		for _, op := range ir.Ops() {
			reason, declined := bt.declines(op)
			switch lowered := bt.supports(op); {
			case lowered && declined:
				t.Errorf("backend %s: op %s is both lowered and declined (%s)", bt.backend, op, reason)
			case !lowered && !declined:
				t.Errorf("backend %s: op %s is neither lowered nor declined", bt.backend, op)
			case declined && reason == "":
				t.Errorf("backend %s: op %s is declined without a reason", bt.backend, op)
			}
		}
	}
}
