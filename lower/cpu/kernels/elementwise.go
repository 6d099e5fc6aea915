package kernels

import (
	"fmt"
	"math"
)

// expf returns e**x in float32 with a fixed sequence of float32 operations
// (no FMA: every product is rounded before it is added), so it gives the
// same bits on every platform; the vector version (EXPF in dot_amd64.s)
// performs the same operations. Relative error is within ~2 ulp; x below
// -87.33654 gives 0, x at or above 88.72283 gives +Inf, NaN gives NaN.
//
// Method (Cephes expf): n = round(x*log2(e)) (round-half-even, via the
// 1.5*2^23 trick), r = (x - n*C1) - n*C2 with ln2 = C1 + C2, a degree-6
// polynomial p(r) ~ (e**r - 1 - r)/r^2, e**r = (p*r^2 + r) + 1, times 2**n.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		magic = 12582912 // 1.5 * 2^23
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	if !(x < 88.72283) { // also NaN
		if x != x {
			return x
		}
		return float32(math.Inf(1))
	}
	if x < -87.33654 {
		return 0
	}
	t := float32(x*log2e) + magic
	n := t - magic
	r := float32(x-float32(n*c1)) - float32(n*c2)
	z := float32(r * r)
	p := float32(1.9875691500e-4)
	p = float32(p*r) + 1.3981999507e-3
	p = float32(p*r) + 8.3334519073e-3
	p = float32(p*r) + 4.1665795894e-2
	p = float32(p*r) + 1.6666665459e-1
	p = float32(p*r) + 5.0000001201e-1
	e := float32(float32(p*z)+r) + 1
	ni := int32(n)
	if ni > 127 {
		return float32(e*2) * math.Float32frombits(uint32(ni-1+127)<<23)
	}
	if ni < -126 {
		return float32(e*0.5) * math.Float32frombits(uint32(ni+1+127)<<23)
	}
	return e * math.Float32frombits(uint32(ni+127)<<23)
}

// silu(x) = x / (1 + e**-x) in float32 (as PyTorch computes it).
func silu(x float32) float32 {
	return x / (1 + expf(-x))
}

// Elementwise work split: chunks of ewChunk elements per task.
const ewChunk = 16 << 10

const (
	ewSiLU = iota
	ewMul
	ewAdd
	ewSwiGLU
)

type ewJob struct {
	op      int
	y, a, b []float32
}

func (j *ewJob) do(_ *Ctx, task, _ int) {
	i0 := task * ewChunk
	i1 := min(i0+ewChunk, len(j.y))
	var b []float32
	if j.b != nil {
		b = j.b[i0:i1]
	}
	ewRange(j.op, j.y[i0:i1], j.a[i0:i1], b)
}

func ewRange(op int, y, a, b []float32) {
	a = a[:len(y)]
	switch op {
	case ewSiLU:
		nv := vecPrefix(len(y))
		if nv > 0 {
			siluVec(y, a, nil, nv)
		}
		for i := nv; i < len(y); i++ {
			y[i] = silu(a[i])
		}
	case ewMul:
		if b == nil {
			return
		}
		b = b[:len(y)]
		for i := range y {
			y[i] = a[i] * b[i]
		}
	case ewAdd:
		if b == nil {
			return
		}
		b = b[:len(y)]
		for i := range y {
			y[i] = a[i] + b[i]
		}
	case ewSwiGLU:
		if b == nil {
			return
		}
		b = b[:len(y)]
		nv := vecPrefix(len(y))
		if nv > 0 {
			siluVec(y, a, b, nv)
		}
		for i := nv; i < len(y); i++ {
			y[i] = silu(a[i]) * b[i]
		}
	}
}

func (c *Ctx) elementwise(name string, op int, y, a, b []float32) {
	if len(a) != len(y) || (b != nil && len(b) != len(y)) {
		panic(fmt.Sprintf("kernels: %s: length mismatch len(y)=%d len(a)=%d len(b)=%d", name, len(y), len(a), len(b)))
	}
	n := len(y)
	if n <= ewChunk {
		ewRange(op, y, a, b)
		return
	}
	j := &c.ew
	j.op, j.y, j.a, j.b = op, y, a, b
	c.run(j, (n+ewChunk-1)/ewChunk)
	j.y, j.a, j.b = nil, nil, nil
}

// SiLU sets y = x * sigmoid(x) = x / (1 + expf(-x)) elementwise (float32;
// expf is documented at the package level). y may alias x. len(y) must equal
// len(x).
func (c *Ctx) SiLU(y, x []float32) { c.elementwise("SiLU", ewSiLU, y, x, nil) }

// Mul sets y = a * b elementwise. y may alias a or b (same offset).
func (c *Ctx) Mul(y, a, b []float32) { c.elementwise("Mul", ewMul, y, a, b) }

// Add sets y = a + b elementwise. y may alias a or b (same offset).
func (c *Ctx) Add(y, a, b []float32) { c.elementwise("Add", ewAdd, y, a, b) }

// SwiGLU sets y = silu(gate) * up elementwise (silu rounded to float32
// first, as HF computes act_fn(gate) * up). y may alias gate or up.
func (c *Ctx) SwiGLU(y, gate, up []float32) { c.elementwise("SwiGLU", ewSwiGLU, y, gate, up) }

// sliceJob copies the column window of whole rows, per rows a task.
type sliceJob struct {
	y, x                        []float32
	rows, src, start, cols, per int
}

func (j *sliceJob) do(_ *Ctx, task, _ int) {
	r0 := task * j.per
	for r := r0; r < min(r0+j.per, j.rows); r++ {
		copy(j.y[r*j.cols:(r+1)*j.cols], j.x[r*j.src+j.start:r*j.src+j.start+j.cols])
	}
}

// SliceCols sets y (rows x cols) to columns start..start+cols-1 of x (rows
// x src): a fused stack's output split into its parts. A prefill's parts
// are megabytes a layer, so the rows are copied by every worker (about
// ewChunk values a task); a copy, so the bits do not depend on the split.
// Shorter slices or a window past src panic (a programming error).
func (c *Ctx) SliceCols(y, x []float32, rows, src, start, cols int) {
	if rows < 0 || cols < 0 || start < 0 || start+cols > src || len(y) < rows*cols || len(x) < rows*src {
		panic(fmt.Sprintf("kernels: SliceCols: bad shapes rows=%d src=%d start=%d cols=%d len(y)=%d len(x)=%d",
			rows, src, start, cols, len(y), len(x)))
	}
	j := &c.sl
	j.y, j.x, j.rows, j.src, j.start, j.cols = y, x, rows, src, start, cols
	j.per = max(1, ewChunk/max(cols, 1))
	if tasks := (rows + j.per - 1) / j.per; tasks > 1 {
		c.run(j, tasks)
	} else {
		for t := range tasks {
			j.do(c, t, 0)
		}
	}
	j.y, j.x = nil, nil
}
