package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
)

// int8RowScale is the bytes of a row's float32 scale after its int8
// values (ir.RowScaleBytes; kernels imports no ir).
const int8RowScale = 4

// int8TaskRows is the weight rows of one task of MatMulTInt8: about
// 256 KiB of int8 weights a task at k = 1024, so a task's rows stay in L2
// while every input row of a prefill passes over them.
const int8TaskRows = 256

// MatMulTInt8 is MatMulT with the weights in the per-output-channel int8
// layout (wire.Int8): weight row j is k int8 values W_q[j, i] followed by
// its scale s_w[j], a little-endian float32 (k + 4 bytes a row). It sets
//
//	y[r, j] = s_w[j] * dotInt8(x_r, W_q[j]) (+ bias[j])
//
// over the f32 input rows as they are (no rounding of the input). Each
// product W_q[j, i] * x[r, i] is computed in float32 and rounded (an int8
// widens to float32 exactly; no fused multiply-add), accumulated in the
// order of dotInt8, then multiplied by the scale and the bias added, each
// rounded once. Every y element is one such dot product, so y does not
// depend on m, the split or the worker count: a TEE-local product and the
// local device's give the same bits, fused or not.
func (c *Ctx) MatMulTInt8(y, x []float32, w []byte, m, k, n int, bias []float32) {
	if m < 0 || k <= 0 || n < 0 || len(x) < m*k || len(w) < n*(k+int8RowScale) || len(y) < m*n || (bias != nil && len(bias) < n) {
		panic(fmt.Sprintf("kernels: MatMulTInt8: bad shapes m=%d k=%d n=%d len(y)=%d len(x)=%d len(w)=%d len(bias)=%d",
			m, k, n, len(y), len(x), len(w), len(bias)))
	}
	if m == 0 || n == 0 {
		return
	}
	j := &c.i8
	j.y, j.x, j.w, j.bias, j.m, j.k, j.n = y, x, w, bias, m, k, n
	// One row (decode) streams the weights once: MatMulT's task count
	// for that many bytes (decodeTasks: a small matrix is one task, run
	// without waking the pool). More rows: tasks of at most int8TaskRows
	// weight rows, enough for every worker.
	tasks := decodeTasks(n, k+int8RowScale, c.workers)
	if m > 1 {
		tasks = max(4*c.workers, (n+int8TaskRows-1)/int8TaskRows)
	}
	j.per = (n + tasks - 1) / tasks
	c.run(j, (n+j.per-1)/j.per)
	j.y, j.x, j.w, j.bias = nil, nil, nil, nil
}

// int8Job is one MatMulTInt8: task t computes weight rows [t*per,
// (t+1)*per) for every input row.
type int8Job struct {
	y, x, bias []float32
	w          []byte
	m, k, n    int
	per        int
}

func (j *int8Job) do(_ *Ctx, task, _ int) {
	k, n, rb := j.k, j.n, j.k+int8RowScale
	j0, j1 := task*j.per, min(n, (task+1)*j.per)
	k8 := k &^ 7
	var acc [32]float32
	for r := range j.m {
		x, y := j.x[r*k:(r+1)*k:(r+1)*k], j.y[r*n:(r+1)*n]
		c := j0
		if useAsm && k8 > 0 {
			// Four rows at a time in AVX2 (the lanes of dotInt8's order,
			// bit for bit), summed here as dotInt8 sums them.
			for ; c+4 <= j1; c += 4 {
				int8Lanes4(x, j.w[c*rb:], rb, k8, &acc)
				for q := range 4 {
					row := j.w[(c+q)*rb : (c+q+1)*rb : (c+q+1)*rb]
					y[c+q] = j.finish(c+q, row, tailInt8(sumLanes((*[8]float32)(acc[8*q:8*q+8])), x, row[:k], k8))
				}
			}
		}
		for ; c < j1; c++ {
			row := j.w[c*rb : (c+1)*rb : (c+1)*rb]
			y[c] = j.finish(c, row, dotInt8(x, row[:k:k]))
		}
	}
}

// finish scales weight row c's dot product by its scale and adds its bias.
func (j *int8Job) finish(c int, row []byte, dot float32) float32 {
	s := math.Float32frombits(binary.LittleEndian.Uint32(row[j.k:]))
	v := s * dot
	if j.bias != nil {
		v += j.bias[c]
	}
	return v
}

// dotInt8 returns sum_i q[i] * x[i] (len(q) == len(x)) in the canonical
// order: eight float32 lanes, lane l accumulating the products of i = l
// mod 8 over the whole 8-value groups in increasing i, the lanes summed
// ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)) (the AVX halving order, sumLanes),
// then the tail values added one by one (tailInt8). Each product is
// rounded to float32 before it is added (the explicit conversions forbid
// a fused multiply-add). int8Lanes4 computes the same lanes in AVX2.
func dotInt8(x []float32, q []byte) float32 {
	k := len(q)
	x = x[:k:k]
	var a [8]float32
	k8 := k &^ 7
	for i := 0; i < k8; i += 8 {
		qq, xx := q[i:i+8:i+8], x[i:i+8:i+8]
		a[0] += float32(float32(int8(qq[0])) * xx[0])
		a[1] += float32(float32(int8(qq[1])) * xx[1])
		a[2] += float32(float32(int8(qq[2])) * xx[2])
		a[3] += float32(float32(int8(qq[3])) * xx[3])
		a[4] += float32(float32(int8(qq[4])) * xx[4])
		a[5] += float32(float32(int8(qq[5])) * xx[5])
		a[6] += float32(float32(int8(qq[6])) * xx[6])
		a[7] += float32(float32(int8(qq[7])) * xx[7])
	}
	return tailInt8(sumLanes(&a), x, q, k8)
}

// sumLanes is dotInt8's lane sum.
func sumLanes(a *[8]float32) float32 {
	return float32(float32(a[0]+a[4])+float32(a[2]+a[6])) + float32(float32(a[1]+a[5])+float32(a[3]+a[7]))
}

// tailInt8 adds the products of i >= k8 to s one by one.
func tailInt8(s float32, x []float32, q []byte, k8 int) float32 {
	for i := k8; i < len(q); i++ {
		s += float32(float32(int8(q[i])) * x[i])
	}
	return s
}
