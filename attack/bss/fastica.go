package bss

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Nonlinearity selects FastICA's contrast function.
type Nonlinearity int

const (
	// LogCosh is G(u) = log cosh(a u)/a, g = tanh(a u): robust, the default.
	LogCosh Nonlinearity = iota
	// Cube is G(u) = u^4/4, g = u^3 (kurtosis): fast, outlier-sensitive.
	Cube
)

// FastICAOptions configures FastICA. The zero value is usable: 64 components,
// logcosh with a = 1, 200 iterations, tolerance 1e-4, seed 0.
type FastICAOptions struct {
	MaxComponents int          // PCA whitening keeps at most this many (0: 64)
	Nonlinearity  Nonlinearity // LogCosh (default) or Cube
	Alpha         float64      // a in tanh(a u), in [1, 2] (0: 1)
	MaxIter       int          // fixed-point iterations (0: 200)
	Tol           float64      // stop when max_i |1 - |<w_i, w_i'>|| < Tol (0: 1e-4)
	Seed          uint64       // seeds the initial W
}

// Result is a separation of U = A X: Sources ~ P D X for a permutation P and
// a diagonal D (signs and scales).
type Result struct {
	// Unmixing is k x m: Sources = Unmixing * U. The product Unmixing*A is
	// what Amari scores.
	Unmixing *mat.Dense
	// Sources is k x N, the estimated source rows: Unmixing applied to the
	// raw (uncentred) U, so a source with a non-zero mean keeps it.
	Sources *mat.Dense
	// Whitening is the k x m PCA whitener; Rotation is the k x k orthogonal
	// matrix found in whitened space (Unmixing = Rotation * Whitening).
	Whitening, Rotation *mat.Dense
	// Mean holds U's row means, removed before whitening.
	Mean       []float64
	Iterations int  // iterations (FastICA) or Jacobi sweeps (JADE, SOBI)
	Converged  bool // false when the iteration cap was hit first
}

func newResult(w *whitening, rot *mat.Dense, u mat.Matrix, iter int, conv bool) *Result {
	unmix := new(mat.Dense)
	unmix.Mul(rot, w.K)
	src := new(mat.Dense)
	src.Mul(unmix, u)
	return &Result{Unmixing: unmix, Sources: src, Whitening: w.K, Rotation: rot,
		Mean: w.Mean, Iterations: iter, Converged: conv}
}

// gaussian fills an r x c matrix with standard normals from seed.
func gaussian(r, c int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	d := make([]float64, r*c)
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return mat.NewDense(r, c, d)
}

// FastICA is Hyvärinen's (1999) parallel fixed-point ICA: centre, PCA-whiten
// to at most MaxComponents, then iterate W <- E[g(WZ) Z^T] - diag(E[g'(WZ)]) W
// with symmetric decorrelation after every step. U is m x N (mixtures x
// samples); the sources are the rows of X in U = A X.
func FastICA(u mat.Matrix, opt FastICAOptions) (*Result, error) {
	if u == nil {
		return nil, fmt.Errorf("%w: nil observation", ErrShape)
	}
	alpha := opt.Alpha
	if alpha == 0 {
		alpha = 1
	}
	maxIter := opt.MaxIter
	if maxIter <= 0 {
		maxIter = 200
	}
	tol := opt.Tol
	if tol <= 0 {
		tol = 1e-4
	}
	if alpha < 0 || math.IsNaN(alpha) {
		return nil, fmt.Errorf("bss: FastICA alpha %v must be positive", alpha)
	}
	if opt.Nonlinearity != LogCosh && opt.Nonlinearity != Cube {
		return nil, fmt.Errorf("bss: unknown nonlinearity %d", opt.Nonlinearity)
	}
	wh, err := whiten(u, opt.MaxComponents)
	if err != nil {
		return nil, err
	}
	z := wh.Z
	k, n := z.Dims()
	w, err := symDecorrelate(gaussian(k, k, opt.Seed))
	if err != nil {
		return nil, err
	}
	wz := mat.NewDense(k, n, nil)
	gp := make([]float64, k)
	var gz, next mat.Dense
	for it := 1; it <= maxIter; it++ {
		wz.Mul(w, z)
		for i := 0; i < k; i++ {
			row := wz.RawRowView(i)
			s := 0.0
			switch opt.Nonlinearity {
			case LogCosh:
				for j, v := range row {
					t := math.Tanh(alpha * v)
					row[j] = t
					s += alpha * (1 - t*t)
				}
			case Cube:
				for j, v := range row {
					row[j] = v * v * v
					s += 3 * v * v
				}
			}
			gp[i] = s / float64(n)
		}
		gz.Mul(wz, z.T())
		gz.Scale(1/float64(n), &gz)
		next.Apply(func(i, j int, v float64) float64 { return v - gp[i]*w.At(i, j) }, &gz)
		nw, err := symDecorrelate(&next)
		if err != nil {
			return nil, err
		}
		lim := 0.0
		for i := 0; i < k; i++ {
			d := math.Abs(math.Abs(mat.Dot(nw.RowView(i), w.RowView(i))) - 1)
			lim = math.Max(lim, d)
		}
		w = nw
		if lim < tol {
			return newResult(wh, w, u, it, true), nil
		}
	}
	return newResult(wh, w, u, maxIter, false), nil
}
