package passes

import (
	"testing"

	"gelo/formats"
	"gelo/ir"
)

// The weight bytes of a plan follow its weight format: q8_0 blocks are 34
// bytes per 32 weights, q4_0 18 (the summary once counted them as f32).
// qwen3-tiny ties its embedding: the TEE gathers from the LM head's
// converted table, so it is counted once, in the plan's format.
func TestSummaryWeightBytes(t *testing.T) {
	for _, tc := range []struct {
		weights string
		bytes   int64
	}{
		{formats.F32, 525824},
		{formats.BF16, 263680},
		{formats.Q8_0, 140800},
		{formats.Q4_0, 75264},
		{formats.Int8, 139776}, // 1792 rows of int8 matrices, 4 bytes of scale each
	} {
		m := traced(t)
		o := DefaultProtect()
		o.Weights = tc.weights
		if err := Pipeline(o).Run(m); err != nil {
			t.Fatal(err)
		}
		s := Summarize(m)
		// The same count from first principles: each distinct weight's
		// elements at its declared dtype's block size.
		var want int64
		seen := map[string]bool{}
		for _, g := range m.Graphs {
			for _, n := range g.Nodes {
				name, _ := n.Attrs.Str("name")
				if n.Op != ir.OpWeight || seen[name] {
					continue
				}
				seen[name] = true
				e, _ := n.Type.Elems(nil)
				switch n.Type.DType {
				case ir.F32:
					want += int64(4 * e)
				case ir.BF16:
					want += int64(2 * e)
				case ir.Q8_0:
					want += int64(e / 32 * 34)
				case ir.Q4_0:
					want += int64(e / 32 * 18)
				case ir.I8:
					cols := n.Type.Shape[1].Size
					want += int64(e + 4*e/cols)
				}
			}
		}
		if s.ParamBytes != want || (tc.bytes != 0 && s.ParamBytes != tc.bytes) {
			t.Errorf("--weights %s: summary says %d weight bytes, want %d (%d)", tc.weights, s.ParamBytes, want, tc.bytes)
		}
	}
}
