package cpu

import (
	"testing"

	"gelo/ir"
	"gelo/lower/cpu/quant"
)

// The block formats the kernels implement have the sizes ir's dtype record
// states, so the summary, the memory plan and the kernels agree on bytes.
func TestQuantFormatsMatchDTypeRecord(t *testing.T) {
	for d, f := range map[ir.DType]quant.Format{ir.Q8_0: quant.Q8_0, ir.Q4_0: quant.Q4_0} {
		info := d.Info()
		if !info.Quantized || info.Block != quant.QK || info.BlockBytes != f.BlockBytes() || info.Name != f.String() {
			t.Errorf("%v: record %+v, kernels' format %v has %d values in %d bytes", d, info, f, quant.QK, f.BlockBytes())
		}
	}
}
