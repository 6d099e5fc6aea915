package mask

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Whiten writes the whitened stack of the exact protection level into
// dst (s x d, row-major, s >= n + d): rows 0..n-1 are H' = H / alpha, rows
// n..n+d-1 are S = (I - H'^T H')^(1/2), the rest are zero. It returns
// alpha, the smallest power of two above H's largest singular value (so
// dividing by it is exact and H'^T H' < I).
//
// Why this hides H exactly: X = [H'; S; 0] has X^T X = H'^T H' + S^2 = I,
// so X has orthonormal columns. For a Haar-distributed orthogonal A
// (s x s) and any two such X, X' there is an orthogonal R with X' = R X
// (both extend to orthogonal bases), and A R has the law of A: U = A X is
// uniform on the Stiefel manifold V_d(R^s) whatever H is. The device's
// payload is independent of the data; only the TEE knows alpha, which the
// shield strip multiplies back (exactly: a power of two).
//
// Cost (float64, in the TEE): for n <= d the thin route, H H^T (n^2 d),
// its eigendecomposition (n^3) and S = I + V C V^T (n d^2); for n > d,
// H^T H (n d^2) and its eigendecomposition (d^3). About as much as the
// matmul the crossing protects: the reference level, not the fast path.
func Whiten(dst, h []float32, n, d, s int) (alpha float32, err error) {
	if n < 1 || d < 1 || s < n+d {
		return 0, fmt.Errorf("mask: whiten: n = %d, d = %d, s = %d: want n, d >= 1 and s >= n + d", n, d, s)
	}
	if len(h) < n*d || len(dst) != s*d {
		return 0, fmt.Errorf("mask: whiten: len(h) = %d, len(dst) = %d, want %d and %d", len(h), len(dst), n*d, s*d)
	}
	H := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			v := float64(h[i*d+j])
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("mask: whiten: row %d col %d is %v", i, j, v)
			}
			H.Set(i, j, v)
		}
	}
	// The eigenpairs of the Gram on the smaller side: lambda_i are the
	// squared singular values, vecs the right singular vectors (d-dim).
	var lambda []float64
	var vecs *mat.Dense // d x r
	var es mat.EigenSym
	if n <= d {
		var g mat.SymDense
		g.SymOuterK(1, H) // H H^T
		if !es.Factorize(&g, true) {
			return 0, fmt.Errorf("mask: whiten: eigendecomposition of H H^T (%dx%d) failed", n, n)
		}
		var u mat.Dense
		es.VectorsTo(&u)
		lambda = es.Values(nil)
		vecs = mat.NewDense(d, n, nil)
		vecs.Mul(H.T(), &u) // column i = sigma_i v_i
		for i, l := range lambda {
			sig := math.Sqrt(math.Max(l, 0))
			for j := 0; j < d; j++ {
				if sig > 0 {
					vecs.Set(j, i, vecs.At(j, i)/sig)
				} else {
					vecs.Set(j, i, 0)
				}
			}
		}
	} else {
		var g mat.SymDense
		g.SymOuterK(1, H.T()) // H^T H
		if !es.Factorize(&g, true) {
			return 0, fmt.Errorf("mask: whiten: eigendecomposition of H^T H (%dx%d) failed", d, d)
		}
		vecs = mat.NewDense(d, d, nil)
		es.VectorsTo(vecs)
		lambda = es.Values(nil)
	}
	maxL := 0.0
	for _, l := range lambda {
		maxL = math.Max(maxL, l)
	}
	// alpha: a power of two strictly above sigma_max with margin, so that
	// 1 - lambda/alpha^2 stays >= 1/4 and S is well conditioned.
	a := 1.0
	if maxL > 0 {
		for a*a < 4*maxL/3 {
			a *= 2
		}
		for (a/2)*(a/2) >= 4*maxL/3 {
			a /= 2
		}
	}
	// S = I + sum_i c_i v_i v_i^T, c_i = sqrt(1 - lambda_i/alpha^2) - 1 (for
	// n > d the v_i are a full basis, so this is Q diag(sqrt(..)) Q^T).
	S := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		S.Set(i, i, 1)
	}
	cv := mat.DenseCopyOf(vecs)
	r := len(lambda)
	for i := 0; i < r; i++ {
		c := math.Sqrt(math.Max(0, 1-lambda[i]/(a*a))) - 1
		for j := 0; j < d; j++ {
			cv.Set(j, i, cv.At(j, i)*c)
		}
	}
	var upd mat.Dense
	upd.Mul(cv, vecs.T())
	S.Add(S, &upd)
	clear(dst)
	inv := 1 / a
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			dst[i*d+j] = float32(float64(h[i*d+j]) * inv)
		}
	}
	for i := 0; i < d; i++ {
		row := dst[(n+i)*d : (n+i+1)*d]
		for j := 0; j < d; j++ {
			row[j] = float32(S.At(i, j))
		}
	}
	return float32(a), nil
}
