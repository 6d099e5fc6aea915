package bss

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// DefaultMaxComponents caps PCA whitening, as the seed's harness did (PCA to
// at most 64 components before ICA): the cost of JADE grows as m^4.
const DefaultMaxComponents = 64

// rankTol drops whitening directions whose variance is below rankTol times the
// largest: they are rank deficiency (for instance s > d payloads), not signal.
const rankTol = 1e-10

// ErrShape reports a dimension mismatch or an input too small to use.
var ErrShape = errors.New("bss: bad shape")

// whitening is the PCA whitening of one observation set: Z = K (U - mean 1^T)
// has identity sample covariance.
type whitening struct {
	K    *mat.Dense // k x m
	Mean []float64  // per-row mean of U (length m)
	Z    *mat.Dense // k x N whitened, centred data
}

// centreRows returns U with each row's mean (over the columns, the samples)
// removed, and the means.
func centreRows(u mat.Matrix) (*mat.Dense, []float64) {
	m, n := u.Dims()
	c := mat.DenseCopyOf(u)
	mean := make([]float64, m)
	for i := 0; i < m; i++ {
		row := c.RawRowView(i)
		s := 0.0
		for _, v := range row {
			s += v
		}
		s /= float64(n)
		mean[i] = s
		for j := range row {
			row[j] -= s
		}
	}
	return c, mean
}

// pcaWhitener returns K (k x m) with K C K^T = I for the covariance C, keeping
// the k <= maxComp leading eigendirections whose eigenvalue clears rankTol.
func pcaWhitener(c *mat.SymDense, maxComp int) (*mat.Dense, error) {
	m := c.SymmetricDim()
	var eig mat.EigenSym
	if !eig.Factorize(c, true) {
		return nil, errors.New("bss: covariance eigendecomposition failed")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	top := vals[m-1]
	if !(top > 0) || math.IsNaN(top) || math.IsInf(top, 0) {
		return nil, fmt.Errorf("%w: data has no variance", ErrShape)
	}
	k := 0
	for i := m - 1; i >= 0 && k < maxComp; i-- {
		if vals[i] <= rankTol*top {
			break
		}
		k++
	}
	K := mat.NewDense(k, m, nil)
	for r := 0; r < k; r++ {
		idx := m - 1 - r // descending eigenvalue order
		s := 1 / math.Sqrt(vals[idx])
		for j := 0; j < m; j++ {
			K.Set(r, j, s*vecs.At(j, idx))
		}
	}
	return K, nil
}

// whiten centres U's rows and PCA-whitens to at most maxComp components.
func whiten(u mat.Matrix, maxComp int) (*whitening, error) {
	m, n := u.Dims()
	if m < 1 || n < 2 {
		return nil, fmt.Errorf("%w: need at least 1 mixture and 2 samples, got %dx%d", ErrShape, m, n)
	}
	if maxComp <= 0 {
		maxComp = DefaultMaxComponents
	}
	uc, mean := centreRows(u)
	c := mat.NewSymDense(m, nil)
	c.SymOuterK(1/float64(n), uc)
	K, err := pcaWhitener(c, maxComp)
	if err != nil {
		return nil, err
	}
	z := new(mat.Dense)
	z.Mul(K, uc)
	return &whitening{K: K, Mean: mean, Z: z}, nil
}

// symDecorrelate returns (W W^T)^{-1/2} W, the nearest matrix with orthonormal
// rows: the symmetric decorrelation of Hyvärinen's parallel FastICA.
func symDecorrelate(w *mat.Dense) (*mat.Dense, error) {
	k, _ := w.Dims()
	g := mat.NewSymDense(k, nil)
	g.SymOuterK(1, w)
	var eig mat.EigenSym
	if !eig.Factorize(g, true) {
		return nil, errors.New("bss: decorrelation eigendecomposition failed")
	}
	vals := eig.Values(nil)
	var e mat.Dense
	eig.VectorsTo(&e)
	// (W W^T)^{-1/2} = E diag(1/sqrt(lambda)) E^T
	ed := mat.DenseCopyOf(&e)
	for j, l := range vals {
		if !(l > 0) {
			return nil, errors.New("bss: singular unmixing matrix")
		}
		s := 1 / math.Sqrt(l)
		for i := 0; i < k; i++ {
			ed.Set(i, j, ed.At(i, j)*s)
		}
	}
	var inv mat.Dense
	inv.Mul(ed, e.T())
	var out mat.Dense
	out.Mul(&inv, w)
	return &out, nil
}
