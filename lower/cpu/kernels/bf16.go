package kernels

import (
	"fmt"
	"math"
)

// MatMulTBF16 is MatMulT with the weights held as bfloat16: w[n*k] are
// the upper halves of float32s (the layout of a bf16 safetensors tensor).
// A bfloat16 widens to float32 exactly, and every dot product runs in the
// canonical order on the widened values, so y is bit-identical to MatMulT
// on the widened weights, whatever m, the split or the worker count: a
// bf16 checkpoint computes the same bits from half the weight bytes.
//
// Decode (m < 4, k a multiple of 8, assembly available) widens in the
// matvec's registers and reads each weight once from memory. Otherwise
// each task first widens its panel of w into per-worker scratch (the
// panel is sized for L2) and runs the f32 micro-kernels on it.
func (c *Ctx) MatMulTBF16(y, x []float32, w []uint16, m, k, n int, bias []float32) {
	if m < 0 || k < 0 || n < 0 || len(x) < m*k || len(w) < n*k || len(y) < m*n || (bias != nil && len(bias) < n) {
		panic(fmt.Sprintf("kernels: MatMulTBF16: bad shapes m=%d k=%d n=%d len(y)=%d len(x)=%d len(w)=%d len(bias)=%d",
			m, k, n, len(y), len(x), len(w), len(bias)))
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		c.MatMulT(y, x, nil, m, k, n, bias)
		return
	}
	c.matmul(y, x, nil, w, m, k, n, bias)
}

// widenPanel widens src into worker's scratch and returns it.
func (c *Ctx) widenPanel(worker int, src []uint16) []float32 {
	if cap(c.wide[worker]) < len(src) {
		c.wide[worker] = make([]float32, len(src))
	}
	dst := c.wide[worker][:len(src)]
	widenBF16(dst, src)
	return dst
}

// widenBF16 sets dst[i] to the float32 whose upper half is src[i].
func widenBF16(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	v := 0
	if useAsm {
		if v = len(src) &^ 7; v > 0 {
			widenBF16AVX2(&dst[0], &src[0], v)
		}
	}
	for i := v; i < len(src); i++ {
		dst[i] = math.Float32frombits(uint32(src[i]) << 16)
	}
}

// matvecRangeBF16 is matvecRange on bf16 weights widened in registers
// (useAsm, k%8 == 0, j1-j0 >= 8).
func matvecRangeBF16(y, x []float32, w []uint16, k, j0, j1 int, bias []float32) {
	full := (j1 - j0) / 8
	gemv1x8BF16(x, w[j0*k:], k, k, full, y[j0:])
	if j0+8*full < j1 {
		gemv1x8BF16(x, w[(j1-8)*k:], k, k, 1, y[j1-8:])
	}
	if bias != nil {
		addBias(y[j0:j1], bias[j0:j1])
	}
}
