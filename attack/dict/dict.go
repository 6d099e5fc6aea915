// Package dict prepares a token dictionary (V x d rows, one per token) for
// the one heavy step every dictionary attack shares: the products of a few
// rows with all V dictionary rows. At the full vocabulary (V = 151936,
// d = 1024) those products dominate an attack run, so they go through the
// project's float32 multithreaded kernel once per payload instead of a
// float64 GEMM per attack; callers re-score the few best candidates in
// float64 (Dot, Norm2) so rankings at the top are exact.
package dict

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"gelo/lower/cpu/kernels"
)

// chunkRows caps the rows of one product call, so the float32 result
// (rows x V) stays near 80 MB at the full vocabulary.
const chunkRows = 128

// Dict is a dictionary prepared once per run: the float64 rows as given,
// a float32 copy for the kernel and the squared row norms.
type Dict struct {
	// D is the dictionary itself (read only).
	D     *mat.Dense
	V, W  int
	f32   []float32
	norm2 []float64
	ctx   *kernels.Ctx
}

// New prepares D with workers kernel goroutines (0: GOMAXPROCS). Close
// releases them.
func New(D *mat.Dense, workers int) (*Dict, error) {
	if D == nil {
		return nil, errors.New("dict: nil dictionary")
	}
	V, W := D.Dims()
	t := &Dict{D: D, V: V, W: W, f32: make([]float32, V*W), norm2: make([]float64, V)}
	for v := range V {
		row := D.RawRowView(v)
		dst := t.f32[v*W : (v+1)*W]
		s := 0.0
		for j, x := range row {
			dst[j] = float32(x)
			s += x * x
		}
		t.norm2[v] = s
	}
	t.ctx = kernels.NewCtx(workers)
	return t, nil
}

// Close stops the kernel's goroutines.
func (t *Dict) Close() { t.ctx.Close() }

// Norm2 is |D_v|^2 in float64.
func (t *Dict) Norm2(v int) float64 { return t.norm2[v] }

// Dot is x . D_v in float64 (the exact re-score of a candidate).
func (t *Dict) Dot(x []float64, v int) float64 {
	row := t.D.RawRowView(v)
	s := 0.0
	for j, a := range x {
		s += a * row[j]
	}
	return s
}

// Products calls fn for consecutive chunks of X's rows: rows lo..hi-1 and
// y, row-major (hi-lo) x V, y[(i-lo)*V+v] = X_i . D_v in float32. y is
// reused between calls.
func (t *Dict) Products(X *mat.Dense, fn func(lo, hi int, y []float32)) error {
	n, w := X.Dims()
	if w != t.W {
		return fmt.Errorf("dict: rows have %d columns, dictionary %d", w, t.W)
	}
	x := make([]float32, min(n, chunkRows)*w)
	y := make([]float32, min(n, chunkRows)*t.V)
	for lo := 0; lo < n; lo += chunkRows {
		hi := min(lo+chunkRows, n)
		m := hi - lo
		for i := lo; i < hi; i++ {
			dst := x[(i-lo)*w : (i-lo+1)*w]
			for j, a := range X.RawRowView(i) {
				dst[j] = float32(a)
			}
		}
		t.ctx.MatMulT(y[:m*t.V], x[:m*w], t.f32, m, w, t.V, nil)
		fn(lo, hi, y[:m*t.V])
	}
	return nil
}

// Combine returns y = C P, row-major s x V in float32, for C (s x r) and
// P (r x V, row-major): the products of s rows that are combinations of
// r rows whose products P are known (a payload's rows in its row-space
// basis), at r/d of the cost of Products.
func (t *Dict) Combine(C *mat.Dense, P []float32) ([]float32, error) {
	s, r := C.Dims()
	if len(P) != r*t.V {
		return nil, fmt.Errorf("dict: %d products for %d rows of %d", len(P), r, t.V)
	}
	pt := make([]float32, t.V*r)
	for j := range r {
		row := P[j*t.V : (j+1)*t.V]
		for v, p := range row {
			pt[v*r+j] = p
		}
	}
	c := make([]float32, s*r)
	for i := range s {
		for j, a := range C.RawRowView(i) {
			c[i*r+j] = float32(a)
		}
	}
	y := make([]float32, s*t.V)
	t.ctx.MatMulT(y, c, pt, s, r, t.V, nil)
	return y, nil
}
