package cpu

import (
	"testing"

	"gelo/device/wire"
	"gelo/ir"
)

// The block formats the kernels implement (device/wire) have the sizes ir's dtype record
// states, so the summary, the memory plan and the kernels agree on bytes.
func TestQuantFormatsMatchDTypeRecord(t *testing.T) {
	for d, f := range map[ir.DType]wire.Format{ir.Q8_0: wire.Q8_0, ir.Q4_0: wire.Q4_0} {
		info := d.Info()
		if !info.Quantized || info.Block != wire.QK || info.BlockBytes != f.BlockBytes() || info.Name != f.String() {
			t.Errorf("%v: record %+v, kernels' format %v has %d values in %d bytes", d, info, f, wire.QK, f.BlockBytes())
		}
	}
}
