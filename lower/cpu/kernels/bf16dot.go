package kernels

import (
	"fmt"
	"math"

	"gelo/models/safetensors"
)

// The bf16 dot product: the speed mode of a bf16 plan (weights "bf16dot").
// The input rows are rounded to bfloat16 (nearest even) and multiplied by
// the bf16 weights with the CPU's pair dot product (AVX512_BF16
// VDPBF16PS), twice the multiply-adds per instruction of the f32 FMA and
// no widening of the weights. It is not MatMulTBF16: rounding the inputs
// changes the result by up to a bf16 unit roundoff (2^-8) per input value,
// so it is an explicit mode, never what a bf16 checkpoint runs by default.
//
// Its canonical order, per output (x a row of k values, w a weight row,
// both bf16, k padded with zeros to a multiple of 32), is VDPBF16PS's:
//
//	acc[l] = +0 for the 16 lanes l
//	for each chunk c of 32 values, in increasing order, for every lane l:
//	    acc[l] = ftz(fl32(acc[l] + x[32c+2l+1]*w[32c+2l+1]))   // odd first
//	    acc[l] = ftz(fl32(acc[l] + x[32c+2l]*w[32c+2l]))
//	s8[i] = acc[i] + acc[i+8]; s4[i] = s8[i] + s8[i+4]
//	s2[i] = s4[i] + s4[i+2]; y = s2[0] + s2[1]        (+ bias, one rounding)
//
// where a bf16 product is exact in float32 (8-bit significands), bf16
// subnormal inputs count as zero and a subnormal sum flushes to zero (the
// instruction's DAZ and FTZ). Every output is computed by one task in this
// order whatever m, the tiling or the worker count, so row i of a batch is
// bit-identical to row i alone, and the portable code is bit-identical to
// the assembly (the portable one is what runs without AVX512_BF16).

// HasBF16Dot reports whether MatMulTBF16Dot runs the CPU's bf16 dot
// product here. Without it the portable code computes the same bits tens
// of times slower than the exact bf16 path (MatMulTBF16), so a bf16dot
// plan is then slower, not faster.
func HasBF16Dot() bool { return useBF16Dot }

// bf16DotChunk is the k-values one lane group consumes per step.
const bf16DotChunk = 32

// MatMulTBF16Dot computes y[m,n] = bf16(x)[m,k] · w[n,k]^T (+ bias) in
// the bf16 dot product's canonical order (see above). w is bf16 [out, in]
// as MatMulTBF16's. Shorter slices panic (a programming error).
func (c *Ctx) MatMulTBF16Dot(y, x []float32, w []uint16, m, k, n int, bias []float32) {
	if m < 0 || k < 0 || n < 0 || len(x) < m*k || len(w) < n*k || len(y) < m*n || (bias != nil && len(bias) < n) {
		panic(fmt.Sprintf("kernels: MatMulTBF16Dot: bad shapes m=%d k=%d n=%d len(y)=%d len(x)=%d len(w)=%d len(bias)=%d",
			m, k, n, len(y), len(x), len(w), len(bias)))
	}
	if m == 0 || n == 0 {
		return
	}
	j := &c.bd
	if need := m * k; cap(c.xb16) < need {
		c.xb16 = make([]uint16, need)
	}
	j.xb = c.xb16[:m*k]
	r := &c.rb
	r.dst, r.src = j.xb, x[:m*k]
	c.run(r, (m*k+roundTaskValues-1)/roundTaskValues)
	r.dst, r.src = nil, nil
	j.y, j.w, j.bias = y, w, bias
	j.m, j.k, j.n = m, k, n
	if m == 1 {
		c.warm.Reset(c.pool, nil) // a later warming of w starts over
		j.colsPer, j.colTasks = 0, decodeTasks(n, 2*k, c.workers)
		j.rowsPer, j.rowTasks = 1, 1
	} else if m < 4 {
		per := max(8, (gemvTaskFloats*2/max(k, 1))&^7) // 128 KiB of weights a task
		j.colsPer, j.colTasks = per, max(1, n/per)
		j.rowsPer, j.rowTasks = m, 1
	} else {
		per := max(24, (gemmPanelFloats*2/max(k, 1))/24*24) // whole 4x6 tiles
		j.colsPer, j.colTasks = per, max(1, n/per)
		j.rowsPer, j.rowTasks = gemmRowBlock, max(1, m/gemmRowBlock)
	}
	c.run(j, j.colTasks*j.rowTasks)
	j.y, j.w, j.bias, j.xb = nil, nil, nil, nil
}

// RoundBF16 sets dst[i] to src[i] rounded to bfloat16 (safetensors'
// F32ToBF16: nearest even, a NaN stays a quiet NaN of its sign).
func RoundBF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	v := vecPrefix(len(src))
	if v > 0 {
		f32ToBF16AVX2(&dst[0], &src[0], v)
	}
	for i := v; i < len(src); i++ {
		dst[i] = safetensors.F32ToBF16(src[i])
	}
}

// roundTaskValues: input values per rounding task.
const roundTaskValues = 16 << 10

// roundJob rounds src to bf16 into dst, roundTaskValues a task (each
// value depends on itself alone).
type roundJob struct {
	dst []uint16
	src []float32
}

func (j *roundJob) do(_ *Ctx, task, _ int) {
	i0 := task * roundTaskValues
	i1 := min(i0+roundTaskValues, len(j.src))
	RoundBF16(j.dst[i0:i1], j.src[i0:i1])
}

// RoundToBF16 rounds v in place to bf16 values (RoundBF16's rounding,
// widened back): the payload of a bf16dot crossing, which the device then
// multiplies exactly as the dot product would.
func RoundToBF16(v []float32) {
	for i, x := range v {
		v[i] = safetensors.BF16ToF32(safetensors.F32ToBF16(x))
	}
}

type bf16DotJob struct {
	y, bias []float32
	xb, w   []uint16
	k       int
	split
}

func (j *bf16DotJob) do(_ *Ctx, task, _ int) {
	i0, i1, j0, j1 := j.split.bounds(task)
	k, n := j.k, j.n
	asm := useBF16Dot && k%bf16DotChunk == 0 && k > 0
	switch {
	case asm && i1-i0 >= 4 && j1-j0 >= 6:
		// 4x6 tiles, the last row group and column tile shifted back
		// (recomputing some outputs bit-identically).
		full := (j1 - j0) / 6
		for g := i0; g < i1; g += 4 {
			r := min(g, i1-4)
			bf16Dot4x6(j.xb[r*k:], k, j.w[j0*k:], k, k, full, j.y[r*n+j0:], n)
			if j0+6*full < j1 {
				bf16Dot4x6(j.xb[r*k:], k, j.w[(j1-6)*k:], k, k, 1, j.y[r*n+j1-6:], n)
			}
		}
	case asm && j1-j0 >= 8:
		full := (j1 - j0) / 8
		for i := i0; i < i1; i++ {
			bf16Dot1x8(j.xb[i*k:], j.w[j0*k:], k, k, full, j.y[i*n+j0:])
			if j0+8*full < j1 {
				bf16Dot1x8(j.xb[i*k:], j.w[(j1-8)*k:], k, k, 1, j.y[i*n+j1-8:])
			}
		}
	default:
		for i := i0; i < i1; i++ {
			for jj := j0; jj < j1; jj++ {
				j.y[i*n+jj] = DotBF16Pairs(j.xb[i*k:(i+1)*k], j.w[jj*k:(jj+1)*k])
			}
		}
	}
	if j.bias != nil {
		for i := i0; i < i1; i++ {
			addBias(j.y[i*n+j0:i*n+j1], j.bias[j0:j1])
		}
	}
}

// bf16Value is the float32 a bf16 input multiplies as: its value, or a
// signed zero for a subnormal (DAZ).
func bf16Value(h uint16) float32 {
	if h&0x7f80 == 0 {
		h &= 0x8000
	}
	return math.Float32frombits(uint32(h) << 16)
}

// ftz flushes a subnormal float32 to a zero of its sign.
func ftz(v float32) float32 {
	if b := math.Float32bits(v); b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return v
}

// DotBF16Pairs is the portable bf16 dot product of x and w (equal
// lengths) in the canonical order of MatMulTBF16Dot.
func DotBF16Pairs(x, w []uint16) float32 {
	w = w[:len(x)]
	var acc [16]float32
	for c := 0; c < len(x); c += bf16DotChunk {
		for l := 0; l < 16; l++ {
			o, e := c+2*l+1, c+2*l
			if o < len(x) {
				acc[l] = ftz(float32(acc[l] + float32(bf16Value(x[o])*bf16Value(w[o]))))
			} else {
				acc[l] = ftz(float32(acc[l] + 0))
			}
			if e < len(x) {
				acc[l] = ftz(float32(acc[l] + float32(bf16Value(x[e])*bf16Value(w[e]))))
			} else {
				acc[l] = ftz(float32(acc[l] + 0))
			}
		}
	}
	var s8 [8]float32
	for i := range s8 {
		s8[i] = acc[i] + acc[i+8]
	}
	var s4 [4]float32
	for i := range s4 {
		s4[i] = s8[i] + s8[i+4]
	}
	return float32(s4[0]+s4[2]) + float32(s4[1]+s4[3])
}
