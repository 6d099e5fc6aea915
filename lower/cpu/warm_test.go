package cpu

import (
	"slices"
	"testing"

	"gelo/ir"
)

// Each instruction warms the next matvec after it, cyclically (the last
// ones the first, which the next step runs); matvecs and attention warm
// nothing.
func TestWarmTargets(t *testing.T) {
	mv := func() {}
	ops := []string{ir.OpRMSNorm, ir.OpMatMul, ir.OpNormRope, ir.OpAttention, ir.OpMatMul, ir.OpAdd, ir.OpLMHead, ir.OpLastRow}
	warms := []func(){nil, mv, nil, nil, mv, nil, mv, nil}
	if got, want := warmTargets(warms, ops), []int{1, -1, 4, -1, -1, 6, -1, 1}; !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	if got := warmTargets([]func(){nil, nil}, []string{ir.OpAdd, ir.OpAdd}); !slices.Equal(got, []int{-1, -1}) {
		t.Errorf("no matvecs: targets %v", got)
	}
}
