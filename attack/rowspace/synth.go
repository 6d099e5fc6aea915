package rowspace

import (
	"errors"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Synthetic conditions for tests and calibration: a Haar mask, a Gaussian
// shield at the protocol's energy, and the full-span whitened shield under
// which U^T U = I (the row-space and Gram attacks must then fail).

// NewRand returns the deterministic generator every synthetic draw uses.
func NewRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// Gaussian returns an r x c matrix of independent N(0, 1) entries.
func Gaussian(r, c int, rng *rand.Rand) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	raw := m.RawMatrix().Data
	for i := range raw {
		raw[i] = rng.NormFloat64()
	}
	return m
}

// Haar returns an s x s orthogonal matrix drawn from the Haar measure (QR
// of a Gaussian matrix with the signs of R's diagonal folded into Q).
func Haar(s int, rng *rand.Rand) *mat.Dense { return HaarOf(Gaussian(s, s, rng)) }

// HaarOf returns the orthogonal factor of the QR of a square Gaussian g
// with the signs of R's diagonal folded into Q: Haar-distributed when g's
// entries are i.i.d. standard normals.
func HaarOf(g *mat.Dense) *mat.Dense {
	s, _ := g.Dims()
	var qr mat.QR
	qr.Factorize(g)
	var q, r mat.Dense
	qr.QTo(&q)
	qr.RTo(&r)
	for j := 0; j < s; j++ {
		if r.At(j, j) < 0 {
			for i := 0; i < s; i++ {
				q.Set(i, j, -q.At(i, j))
			}
		}
	}
	return &q
}

// GaussianShield returns k Gaussian rows of width d whose expected norm is
// energy times the mean row norm of H (the protocol's shield: 8 rows at
// energy 4).
func GaussianShield(H *mat.Dense, k int, energy float64, rng *rand.Rand) *mat.Dense {
	n, d := H.Dims()
	mean := 0.0
	for i := 0; i < n; i++ {
		mean += mat.Norm(H.RowView(i), 2)
	}
	mean /= float64(n)
	s := Gaussian(k, d, rng)
	s.Scale(energy*mean/math.Sqrt(float64(d)), s)
	return s
}

// Stack returns [H; S].
func Stack(H, S *mat.Dense) *mat.Dense {
	if S == nil {
		return mat.DenseCopyOf(H)
	}
	n, d := H.Dims()
	k, _ := S.Dims()
	x := mat.NewDense(n+k, d, nil)
	x.Slice(0, n, 0, d).(*mat.Dense).Copy(H)
	x.Slice(n, n+k, 0, d).(*mat.Dense).Copy(S)
	return x
}

// WhitenedStack returns X = [alpha H; S] with S = (I - alpha^2 H^T H)^(1/2)
// (d x d), alpha = 0.5 / ||H||_2, so that X^T X = I: the rows of any A X
// span everything and their Gram is the identity, whatever H is.
func WhitenedStack(H *mat.Dense) (*mat.Dense, error) {
	_, d := H.Dims()
	var svd mat.SVD
	if !svd.Factorize(H, mat.SVDNone) {
		return nil, errors.New("rowspace: SVD did not converge")
	}
	alpha := 0.5 / svd.Values(nil)[0]
	var g mat.SymDense
	g.SymOuterK(alpha*alpha, H.T())
	c := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			v := -g.At(i, j)
			if i == j {
				v++
			}
			c.SetSym(i, j, v)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(c, true) {
		return nil, errors.New("rowspace: eigendecomposition did not converge")
	}
	vals := eig.Values(nil)
	var vec mat.Dense
	eig.VectorsTo(&vec)
	// S = V diag(sqrt(lambda)) V^T
	sc := mat.DenseCopyOf(&vec)
	for j, l := range vals {
		f := math.Sqrt(math.Max(l, 0))
		for i := 0; i < d; i++ {
			sc.Set(i, j, sc.At(i, j)*f)
		}
	}
	var s mat.Dense
	s.Mul(sc, vec.T())
	ah := mat.DenseCopyOf(H)
	ah.Scale(alpha, ah)
	return Stack(ah, &s), nil
}

// Mix returns A X.
func Mix(A, X *mat.Dense) *mat.Dense {
	var u mat.Dense
	u.Mul(A, X)
	return &u
}

// NormalizeRows returns a copy of M with every non-zero row scaled to unit
// norm.
func NormalizeRows(M *mat.Dense) *mat.Dense {
	out := mat.DenseCopyOf(M)
	r, _ := out.Dims()
	for i := 0; i < r; i++ {
		row := out.RawRowView(i)
		n := math.Sqrt(dot(row, row))
		if n > 0 {
			for j := range row {
				row[j] /= n
			}
		}
	}
	return out
}

// Rows returns the rows of D with the given ids, in order (the secret rows
// H of a synthetic prompt).
func Rows(D *mat.Dense, ids []int) *mat.Dense {
	_, d := D.Dims()
	h := mat.NewDense(len(ids), d, nil)
	for i, t := range ids {
		copy(h.RawRowView(i), D.RawRowView(t))
	}
	return h
}
