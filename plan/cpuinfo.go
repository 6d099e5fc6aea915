package plan

import (
	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/lower/cpu/kernels"
)

// Traffic counts what a cpu engine's programs send the device and the
// bytes each way (EngineOptions.Traffic): what the user is told crossed.
type Traffic = cpu.Traffic

// HasBF16Dot reports whether this CPU has the bf16 dot product
// instruction that --weights bf16dot is a speed mode of (elsewhere the
// portable version gives the same bits, far slower).
func HasBF16Dot() bool { return kernels.HasBF16Dot() }

// BindShieldDims returns bind plus each shielded row dim of g (S_n, ...)
// as the cpu engine sizes it from its data rows and the family's shield
// rule: the bindings a memory plan of a protected graph needs.
func BindShieldDims(g *ir.Graph, bind map[string]int) (map[string]int, error) {
	return cpu.BindShieldDims(g, bind)
}
