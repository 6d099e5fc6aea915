package kernels

import (
	"fmt"
	"math"
)

// rmsRow sets y = w * (x * r) with r = float32(1 / sqrt(ss/d + eps)), where
// ss = sum of x[i]^2 accumulated in float64 in index order (each square is
// exact in float64). y may alias x.
func rmsRow(y, x, w []float32, eps float32) {
	d := len(x)
	y, w = y[:d], w[:d]
	var ss float64
	for _, v := range x {
		f := float64(v)
		ss += f * f
	}
	rmsScale(y, x, w, ss, eps)
}

// rmsRows applies rmsRow to n consecutive rows of length d (y may alias
// x). Four rows at a time, their sums of squares are accumulated side by
// side (sumSq4), each in index order as rmsRow's: the same bits, with four
// float64 add chains overlapping instead of one waiting on each add.
func rmsRows(y, x, w []float32, n, d int, eps float32) {
	i := 0
	for ; i+4 <= n; i += 4 {
		x0, x1, x2, x3 := x[i*d:(i+1)*d], x[(i+1)*d:(i+2)*d], x[(i+2)*d:(i+3)*d], x[(i+3)*d:(i+4)*d]
		s0, s1, s2, s3 := sumSq4(x0, x1, x2, x3)
		rmsScale(y[i*d:(i+1)*d], x0, w, s0, eps)
		rmsScale(y[(i+1)*d:(i+2)*d], x1, w, s1, eps)
		rmsScale(y[(i+2)*d:(i+3)*d], x2, w, s2, eps)
		rmsScale(y[(i+3)*d:(i+4)*d], x3, w, s3, eps)
	}
	for ; i < n; i++ {
		rmsRow(y[i*d:(i+1)*d], x[i*d:(i+1)*d], w, eps)
	}
}

// sumSq4 returns the sums of squares of a, b, c and d (len(a) values
// each), each accumulated in float64 in index order (each square is exact
// in float64, so a fused multiply-add changes nothing).
func sumSq4(a, b, c, d []float32) (s0, s1, s2, s3 float64) {
	n := len(a)
	b, c, d = b[:n], c[:n], d[:n]
	for i, v := range a {
		f0, f1, f2, f3 := float64(v), float64(b[i]), float64(c[i]), float64(d[i])
		s0 += f0 * f0
		s1 += f1 * f1
		s2 += f2 * f2
		s3 += f3 * f3
	}
	return s0, s1, s2, s3
}

// rmsScale is rmsRow's second half: y = w * (x * r) for the sum of squares
// ss of x.
func rmsScale(y, x, w []float32, ss float64, eps float32) {
	d := len(x)
	y, w = y[:d], w[:d]
	r := float32(1 / math.Sqrt(ss/float64(d)+float64(eps)))
	for i, v := range x {
		y[i] = w[i] * float32(v*r)
	}
}

// normRowsPerTask: rows of RMSNorm per task, ~64K elements.
func normRowsPerTask(d int) int { return max(1, (64<<10)/max(d, 1)) }

type normJob struct {
	y, x, w []float32
	rows, d int // d = row length (hd for head norm)
	per     int
	eps     float32
	heads   int // 0 for RMSNorm; else rows are split into heads of d
}

func (j *normJob) do(_ *Ctx, task, _ int) {
	r0 := task * j.per
	r1 := min(r0+j.per, j.rows)
	j.rowsRange(r0, r1)
}

func (j *normJob) rowsRange(r0, r1 int) {
	d := j.d
	rmsRows(j.y[r0*d:r1*d], j.x[r0*d:r1*d], j.w, r1-r0, d, j.eps)
}

func (c *Ctx) norm(y, x, w []float32, rows, d int, eps float32) {
	j := &c.nrm
	j.y, j.x, j.w, j.rows, j.d, j.eps = y, x, w, rows, d, eps
	j.per = normRowsPerTask(d)
	tasks := (rows + j.per - 1) / j.per
	if tasks <= 1 {
		j.rowsRange(0, rows)
	} else {
		c.run(j, tasks)
	}
	j.y, j.x, j.w = nil, nil, nil
}

// RMSNorm sets, for each of rows rows of length d,
// y = w * (x * float32(1/sqrt(mean(x^2) + eps))), the mean of squares
// accumulated in float64 in index order. This matches HF Qwen3RMSNorm
// (variance in float32, hidden * rsqrt(var + eps), then weight * hidden) up
// to the more accurate variance. y may alias x (same offset).
func (c *Ctx) RMSNorm(y, x, w []float32, rows, d int, eps float32) {
	if rows < 0 || d <= 0 || len(x) < rows*d || len(y) < rows*d || len(w) < d {
		panic(fmt.Sprintf("kernels: RMSNorm: bad shapes rows=%d d=%d len(y)=%d len(x)=%d len(w)=%d", rows, d, len(y), len(x), len(w)))
	}
	c.norm(y, x, w, rows, d, eps)
}

// HeadRMSNorm applies RMSNorm in place to every head_dim slice of x, laid
// out [rows][heads][hd], with the shared weight w[hd] (Qwen3 QK-norm). Same
// arithmetic as RMSNorm with d = hd.
func (c *Ctx) HeadRMSNorm(x, w []float32, rows, heads, hd int, eps float32) {
	if rows < 0 || heads <= 0 || hd <= 0 || len(x) < rows*heads*hd || len(w) < hd {
		panic(fmt.Sprintf("kernels: HeadRMSNorm: bad shapes rows=%d heads=%d hd=%d len(x)=%d len(w)=%d", rows, heads, hd, len(x), len(w)))
	}
	c.norm(x, x, w, rows*heads, hd, eps)
}
