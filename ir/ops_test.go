package ir

import "testing"

// Every protection op is a registered boundary op that only protect
// inserts: a baseline backend declines these and nothing else of the
// boundary class but the crossings and the probe.
func TestProtectionOps(t *testing.T) {
	for _, op := range ProtectionOps() {
		if info := Op(op); info == nil || info.Class != ClassBoundary {
			t.Errorf("protection op %s: %+v, want a registered boundary op", op, info)
		}
	}
}
