package bss

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"gelo/attack/rowspace"
)

// Haar returns an n x n orthogonal matrix drawn from the Haar measure (QR of
// a Gaussian matrix with the signs of R's diagonal folded into Q), the mask
// gelo's dense mode draws. For calibrating attacks on synthetic payloads.
func Haar(n int, seed uint64) (*mat.Dense, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: Haar size %d", ErrShape, n)
	}
	return rowspace.HaarOf(gaussian(n, n, seed)), nil
}

// FullSpanShield returns S = (I - H^T H)^{1/2} (d x d) for H (n x d) with top
// singular value below 1, so X = [H; S] has X^T X = I: whatever H is, the
// payload A X under a Haar A is a Haar-random isometry, independent of H. It
// is the ideal shield, the one every attack here must fail against.
func FullSpanShield(h mat.Matrix) (*mat.Dense, error) {
	_, d := h.Dims()
	g := mat.NewSymDense(d, nil)
	g.SymOuterK(1, h.T())
	var eig mat.EigenSym
	if !eig.Factorize(g, true) {
		return nil, fmt.Errorf("bss: eigendecomposition of H^T H failed")
	}
	vals := eig.Values(nil)
	if vals[d-1] >= 1 {
		return nil, fmt.Errorf("%w: H's top singular value %.4g is not below 1", ErrShape, math.Sqrt(vals[d-1]))
	}
	var e mat.Dense
	eig.VectorsTo(&e)
	ed := mat.DenseCopyOf(&e)
	for j, l := range vals {
		s := math.Sqrt(math.Max(1-l, 0))
		for i := 0; i < d; i++ {
			ed.Set(i, j, ed.At(i, j)*s)
		}
	}
	var s mat.Dense
	s.Mul(ed, e.T())
	return &s, nil
}
