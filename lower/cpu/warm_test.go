package cpu

import (
	"testing"

	"gelo/device/wire"
	"gelo/ir"
)

// Each instruction warms the next matvec after it, cyclically (the last
// ones the first, which the next step runs); matvecs and attention warm
// nothing.
func TestWarmTargets(t *testing.T) {
	a, b := &wire.Matrix{}, &wire.Matrix{}
	ops := []string{ir.OpRMSNorm, ir.OpMatMul, ir.OpNormRope, ir.OpAttention, ir.OpMatMul, ir.OpAdd, ir.OpLMHead, ir.OpLastRow}
	mv := []*wire.Matrix{nil, a, nil, nil, b, nil, a, nil}
	want := []*wire.Matrix{a, nil, b, nil, nil, a, nil, a}
	got := warmTargets(mv, ops)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("instruction %d (%s): warms %p, want %p", i, ops[i], got[i], want[i])
		}
	}
	for i, w := range warmTargets([]*wire.Matrix{nil, nil}, []string{ir.OpAdd, ir.OpAdd}) {
		if w != nil {
			t.Errorf("no matvecs: instruction %d warms %p", i, w)
		}
	}
}
