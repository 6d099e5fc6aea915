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
// With k a multiple of 8, weights are widened in registers and read
// straight from w: by the AVX2 matvec for decode (m < 4, assembly
// available), and by the AVX-512 6x8 GEMM tile for m >= 4 (blocks of at
// least 6 rows and 8 columns). Otherwise each task first widens its panel
// of w into per-worker scratch (the panel is sized for L2) and runs the
// f32 micro-kernels on it.
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

// gemmBlockBF16 is gemmBlock's AVX-512 case on bf16 weights widened in
// registers (useAVX512, k%8 == 0, i1-i0 >= 6, j1-j0 >= 8): 6x8 tiles, the
// last row group and the column tail tile shifted back inside the block
// (recomputing some elements bit-identically), the bias added after.
func gemmBlockBF16(j *matmulJob, i0, i1, j0, j1 int) {
	y, x, w, bias, k, n := j.y, j.x, j.wb, j.bias, j.k, j.n
	full := (j1 - j0) / 8
	for g := i0; g < i1; g += 6 {
		r := min(g, i1-6)
		gemm6x8BF16(x[r*k:], k, w[j0*k:], k, k, full, y[r*n+j0:], n)
		if j0+8*full < j1 {
			jt := j1 - 8
			gemm6x8BF16(x[r*k:], k, w[jt*k:], k, k, 1, y[r*n+jt:], n)
		}
		if bias != nil {
			for i := r; i < r+6; i++ {
				addBias(y[i*n+j0:i*n+j1], bias[j0:j1])
			}
		}
	}
}
