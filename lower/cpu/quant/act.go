package quant

import (
	"fmt"
	"math"
)

// Activations holds m rows of k values quantized for MatMulQ: per row, k
// int8 quants (row-major, contiguous), one float32 scale per block of 32
// and the int32 sum of each block's quants. It is produced only by Quantize
// (or Ctx.QuantizeActivations), which guarantees the invariants the kernels
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

// prepare validates the shape and sizes the buffers for m x k.
func (a *Activations) prepare(x []float32, m, k int) error {
	if a == nil {
		return fmt.Errorf("quant: nil Activations")
	}
	if m <= 0 || k <= 0 {
		return fmt.Errorf("quant: quantize activations: bad shape %d x %d", m, k)
	}
	if k%QK != 0 {
		return fmt.Errorf("%w: activation cols k = %d", ErrCols, k)
	}
	if m > maxElems/k {
		return fmt.Errorf("quant: quantize activations: shape %d x %d too large", m, k)
	}
	if len(x) < m*k {
		return fmt.Errorf("quant: quantize activations: len(x) = %d < m*k = %d", len(x), m*k)
	}
	a.grow(m * k)
	a.m, a.k = m, k
	a.q, a.d, a.s = a.q[:m*k], a.d[:m*k/QK], a.s[:m*k/QK]
	return nil
}

// Quantize quantizes the row-major m x k matrix x into a (k a positive
// multiple of 32), serially. See Ctx.QuantizeActivations for the parallel
// version (identical result).
func (a *Activations) Quantize(x []float32, m, k int) error {
	if err := a.prepare(x, m, k); err != nil {
		return err
	}
	a.quantizeRows(x, 0, m)
	return nil
}

// quantizeRows quantizes rows [i0, i1) of x (a already prepared).
func (a *Activations) quantizeRows(x []float32, i0, i1 int) {
	k := a.k
	for b := i0 * k / QK; b < i1*k/QK; b++ {
		a.d[b], a.s[b] = quantizeActBlock(a.q[b*QK:(b+1)*QK], x[b*QK:(b+1)*QK])
	}
}

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
