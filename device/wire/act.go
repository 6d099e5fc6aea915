package wire

import (
	"fmt"
	"math"
)

// Activations holds m rows of k values quantized for a quantized product:
// per row, k int8 quants (row-major, contiguous), one float32 scale per
// block of 32 and the int32 sum of each block's quants: the q8_0 payload
// that crosses to the device. It is produced only by Quantize (or
// Prepare then QuantizeRows, as quant.Ctx does in parallel), which
// guarantees the invariants the kernels
// rely on (quants in [-127, 127], sums consistent). The zero value is an
// empty, usable Activations; its buffers grow on demand and are reused, so
// quantizing repeatedly into the same Activations allocates nothing once it
// is large enough.
//
// Rule per block (ggml's quantize_row_q8_0_ref with a float32 scale):
//
//	amax = max |x|, d = amax/127, id = d ? 1/d : 0, q[j] = roundf(x[j]*id)
//
// A block holding a NaN or an infinity gets d = NaN and zero quants.
type Activations struct {
	m, k int
	q    []int8
	d    []float32
	s    []int32
}

// NewActivations returns an empty Activations with room for m x k values.
func NewActivations(m, k int) *Activations {
	a := &Activations{}
	if m > 0 && k > 0 && k%QK == 0 && m <= maxElems/k {
		a.grow(m * k)
	}
	return a
}

// Rows and Cols return the shape of the last quantized input.
func (a *Activations) Rows() int { return a.m }
func (a *Activations) Cols() int { return a.k }

// Block returns a view of the quants of block b of row i and its scale (nil,
// 0 when out of range). The view must not be modified.
func (a *Activations) Block(i, b int) ([]int8, float32) {
	if i < 0 || i >= a.m || b < 0 || b >= a.k/QK {
		return nil, 0
	}
	o := i*a.k + b*QK
	nb := a.k / QK
	return a.q[o : o+QK : o+QK], a.d[i*nb+b]
}

func (a *Activations) grow(n int) {
	if cap(a.q) < n {
		a.q = make([]int8, n)
		a.d = make([]float32, n/QK)
		a.s = make([]int32, n/QK)
	}
}

// Quants, Scales and Sums are views of the whole payload (k quants a row,
// one scale and one sum per block of 32), for the kernels. They must not be
// modified.
func (a *Activations) Quants() []int8    { return a.q }
func (a *Activations) Scales() []float32 { return a.d }
func (a *Activations) Sums() []int32     { return a.s }

// Dequantize writes the m x k values the payload encodes (q * d, one
// float32 product each) into dst[0:m*k]: what a device without a q8_0
// kernel multiplies, and what the spy records.
func (a *Activations) Dequantize(dst []float32) error {
	if len(dst) < a.m*a.k {
		return fmt.Errorf("wire: dequantize activations: len(dst) = %d < %d", len(dst), a.m*a.k)
	}
	for i := 0; i < a.m; i++ {
		for b := 0; b < a.k/QK; b++ {
			q, d := a.Block(i, b)
			out := dst[i*a.k+b*QK : i*a.k+(b+1)*QK]
			for j, v := range q {
				out[j] = float32(v) * d
			}
		}
	}
	return nil
}

// Prepare validates the shape of x (m x k, k a positive multiple of 32)
// and sizes a for it; QuantizeRows then fills it, in any row order.
func (a *Activations) Prepare(x []float32, m, k int) error {
	if a == nil {
		return fmt.Errorf("wire: nil Activations")
	}
	if m <= 0 || k <= 0 {
		return fmt.Errorf("wire: quantize activations: bad shape %d x %d", m, k)
	}
	if k%QK != 0 {
		return fmt.Errorf("%w: activation cols k = %d", ErrCols, k)
	}
	if m > maxElems/k {
		return fmt.Errorf("wire: quantize activations: shape %d x %d too large", m, k)
	}
	if len(x) < m*k {
		return fmt.Errorf("wire: quantize activations: len(x) = %d < m*k = %d", len(x), m*k)
	}
	a.grow(m * k)
	a.m, a.k = m, k
	a.q, a.d, a.s = a.q[:m*k], a.d[:m*k/QK], a.s[:m*k/QK]
	return nil
}

// Quantize quantizes the row-major m x k matrix x into a (k a positive
// multiple of 32), serially. quant.Ctx.QuantizeActivations is the parallel
// version (identical result).
func (a *Activations) Quantize(x []float32, m, k int) error {
	if err := a.Prepare(x, m, k); err != nil {
		return err
	}
	a.QuantizeRows(x, 0, m)
	return nil
}

// QuantizeRows quantizes rows [i0, i1) of x into a (after Prepare with the
// same x); each row's result depends on that row alone.
func (a *Activations) QuantizeRows(x []float32, i0, i1 int) {
	i0, i1 = max(i0, 0), min(i1, a.m, len(x)/max(a.k, 1))
	k := a.k
	for b := i0 * k / QK; b < i1*k/QK; b++ {
		a.d[b], a.s[b] = quantizeActBlock(a.q[b*QK:(b+1)*QK], x[b*QK:(b+1)*QK])
	}
}

// RowBlocks returns the storage of rows [i0, i1) (clamped to [0, Rows()))
// after Prepare: their quants, one scale and one quant sum a block of QK.
// A faster quantizer fills them as QuantizeActBlock does, block by block;
// QuantizeRows is the reference.
func (a *Activations) RowBlocks(i0, i1 int) (q []int8, d []float32, s []int32) {
	i0, i1 = max(i0, 0), min(i1, a.m)
	if i1 <= i0 {
		return nil, nil, nil
	}
	b0, b1 := i0*a.k/QK, i1*a.k/QK
	return a.q[b0*QK : b1*QK], a.d[b0:b1], a.s[b0:b1]
}

// QuantizeActBlock quantizes one block of QK activations into q (len(q),
// len(src) >= QK) and returns its scale and the sum of its quants: the
// arithmetic of the format, one block.
func QuantizeActBlock(q []int8, src []float32) (float32, int32) { return quantizeActBlock(q, src) }

// quantizeActBlock quantizes one block of 32 activations into q and returns
// its scale and the sum of its quants.
func quantizeActBlock(q []int8, src []float32) (float32, int32) {
	q, src = q[:QK:QK], src[:QK:QK]
	// For non-negative floats the bit patterns order like the values, and
	// every NaN or infinity lies at or above 0x7f800000.
	var mbits uint32
	for _, v := range src {
		mbits = max(mbits, math.Float32bits(v)&^(1<<31))
	}
	if mbits >= 0x7f800000 {
		clear(q)
		return float32(math.NaN()), 0
	}
	d := math.Float32frombits(mbits) / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	if id > math.MaxFloat32 {
		// d is a float32 subnormal and 1/d overflows: every x*id is
		// infinite or NaN, which quantQ8 maps to 0.
		clear(q)
		return d, 0
	}
	// |x*id| <= amax*id < 127.5 (three roundings away from 127), so the
	// rounded quants lie in [-127, 127] without clamping.
	var s int32
	for j, v := range src {
		t := float64(v * id)
		r := int32(t + math.Copysign(0.5, t)) // roundf: half away from zero
		q[j] = int8(r)
		s += r
	}
	return d, s
}
