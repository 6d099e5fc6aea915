package main

import (
	"strings"
	"testing"

	"gelo/lower/cpu/kernels"
)

// TestBF16DotWarnsWithoutTheInstruction: --weights bf16dot on a CPU
// without AVX512_BF16 still runs (the portable kernel, the same bits) but
// says it is slower than --weights bf16; where the instruction is, nothing
// is said.
func TestBF16DotWarnsWithoutTheInstruction(t *testing.T) {
	_, errs, code := gelo(t, "generate", "--weights", "bf16dot", "--max-tokens", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if warned := strings.Contains(errs, "no AVX512_BF16"); warned == kernels.HasBF16Dot() {
		t.Errorf("HasBF16Dot %v, warned %v; stderr:\n%s", kernels.HasBF16Dot(), warned, errs)
	}
	if _, errs, _ := gelo(t, "generate", "--weights", "bf16", "--max-tokens", "1"); strings.Contains(errs, "AVX512_BF16") {
		t.Errorf("--weights bf16 warned: %s", errs)
	}
}
