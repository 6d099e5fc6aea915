package rowspace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// HD3 structure attack (small sizes). The HD3 mask is
// A = D3 H D2 H D1 H, H the normalised s x s Walsh-Hadamard matrix
// (symmetric, H H = I) and D1, D2, D3 diagonal +-1: 3s secret bits
// instead of a Haar matrix's s(s-1)/2 reals. Given a hypothesised stack X
// and the observed U, HD3Fit searches the sign diagonals by alternating
// minimisation; each step is closed form because every factor is an
// involution:
//
//	D3:  U = D3 (H D2 H D1 H X)       -> d3_i = sign <U_i, (H D2 H D1 H X)_i>
//	D2:  H D3 U = D2 (H D1 H X)       -> d2_i = sign <(H D3 U)_i, (H D1 H X)_i>
//	D1:  H D2 H D3 U = D1 (H X)       -> d1_i = sign <(H D2 H D3 U)_i, (H X)_i>
//
// A residual near 0 means the hypothesis fits an HD3 mask; for a Haar A
// no sign choice fits and the residual stays near 1 or above. HD3Distinguish
// compares the two.

// WHT applies the normalised Walsh-Hadamard transform H (entries
// +-1/sqrt(s)) to the rows-as-index of M in place: M <- H M. The number of
// rows must be a power of two.
func WHT(M *mat.Dense) error {
	s, c := M.Dims()
	if s == 0 || s&(s-1) != 0 {
		return fmt.Errorf("rowspace: WHT needs a power-of-two row count, got %d", s)
	}
	for h := 1; h < s; h *= 2 {
		for i := 0; i < s; i += 2 * h {
			for j := i; j < i+h; j++ {
				a, b := M.RawRowView(j), M.RawRowView(j+h)
				for l := 0; l < c; l++ {
					x, y := a[l], b[l]
					a[l], b[l] = x+y, x-y
				}
			}
		}
	}
	M.Scale(1/math.Sqrt(float64(s)), M)
	return nil
}

// HD3Apply returns D3 H D2 H D1 H X.
func HD3Apply(d1, d2, d3 []float64, X *mat.Dense) (*mat.Dense, error) {
	y := mat.DenseCopyOf(X)
	for _, dg := range [][]float64{d1, d2, d3} {
		if err := WHT(y); err != nil {
			return nil, err
		}
		if err := signRows(y, dg); err != nil {
			return nil, err
		}
	}
	return y, nil
}

func signRows(M *mat.Dense, dg []float64) error {
	s, _ := M.Dims()
	if len(dg) != s {
		return fmt.Errorf("rowspace: diagonal of %d for %d rows", len(dg), s)
	}
	for i, g := range dg {
		if g < 0 {
			row := M.RawRowView(i)
			for l := range row {
				row[l] = -row[l]
			}
		}
	}
	return nil
}

// RandomSigns returns s random +-1 values.
func RandomSigns(s int, rng *rand.Rand) []float64 {
	d := make([]float64, s)
	for i := range d {
		d[i] = 1
		if rng.IntN(2) == 0 {
			d[i] = -1
		}
	}
	return d
}

// HD3Options tunes HD3Fit.
type HD3Options struct {
	Restarts int    // random starts (default 32)
	Iters    int    // sweeps per start (default 50)
	Seed     uint64 // of the random starts
	// Stop ends the search at a residual at or below it (default 1e-9;
	// a float32 payload's exact fit leaves about 1e-7).
	Stop float64
}

// withDefaults fills the search's unset bounds: 32 starts, 50 sweeps,
// stop at a residual of 1e-9 (every fit of the family uses them).
func (opts HD3Options) withDefaults() HD3Options {
	if opts.Restarts <= 0 {
		opts.Restarts = 32
	}
	if opts.Iters <= 0 {
		opts.Iters = 50
	}
	if opts.Stop <= 0 {
		opts.Stop = 1e-9
	}
	return opts
}

// HD3MaxFit bounds HD3Fit's size: a sweep is about 10 s log2(s) d
// multiply-adds. The harness's crossings at width 64 are s = 128 (a
// fraction of a second a fit); at the 0.6B width (s = 2048, d = 1024) a
// fit that finds the mask at its first start took 4-5 s on this machine,
// and one that runs all 32 starts x 50 sweeps would take hours.
const HD3MaxFit = 4096

// HD3FitResult is the best fit found.
type HD3FitResult struct {
	D1, D2, D3 []float64
	// Residual is |U - D3 H D2 H D1 H X|_F / |U|_F.
	Residual float64
	// Start is the restart that found it (-1 if none improved on +inf).
	Start int
}

// HD3Fit searches sign diagonals with U = D3 H D2 H D1 H X by alternating
// minimisation from random starts, keeping the best residual. s = rows of
// U = rows of X must be a power of two, at most HD3MaxFit.
func HD3Fit(U, X *mat.Dense, opts HD3Options) (*HD3FitResult, error) {
	if U == nil || X == nil {
		return nil, errors.New("rowspace: nil input")
	}
	s, d := U.Dims()
	sx, dx := X.Dims()
	if s != sx || d != dx {
		return nil, fmt.Errorf("rowspace: U is %dx%d, X is %dx%d", s, d, sx, dx)
	}
	if s > HD3MaxFit || s&(s-1) != 0 {
		return nil, fmt.Errorf("rowspace: HD3Fit needs a power-of-two size <= %d, got %d", HD3MaxFit, s)
	}
	opts = opts.withDefaults()
	rng := NewRand(opts.Seed)
	nu := mat.Norm(U, 2)
	z := mat.DenseCopyOf(X)
	if err := WHT(z); err != nil {
		return nil, err
	}
	best := &HD3FitResult{Residual: math.Inf(1), Start: -1}
	for start := 0; start < opts.Restarts; start++ {
		d1, d2 := RandomSigns(s, rng), RandomSigns(s, rng)
		d3 := make([]float64, s)
		prev := math.Inf(1)
		for it := 0; it < opts.Iters; it++ {
			// D3.
			y := mat.DenseCopyOf(z)
			signRows(y, d1)
			WHT(y)
			signRows(y, d2)
			WHT(y)
			corrSigns(d3, U, y)
			// D2.
			w := mat.DenseCopyOf(U)
			signRows(w, d3)
			WHT(w)
			t := mat.DenseCopyOf(z)
			signRows(t, d1)
			WHT(t)
			corrSigns(d2, w, t)
			// D1.
			signRows(w, d2)
			WHT(w)
			corrSigns(d1, w, z)
			fit, _ := HD3Apply(d1, d2, d3, X)
			fit.Sub(U, fit)
			res := mat.Norm(fit, 2) / nu
			if res < best.Residual {
				best = &HD3FitResult{D1: clone(d1), D2: clone(d2), D3: clone(d3), Residual: res, Start: start}
			}
			if res >= prev-1e-12 {
				break
			}
			prev = res
		}
		if best.Residual <= opts.Stop {
			break
		}
	}
	return best, nil
}

// HD3Unmask returns A^T U = H D1 H D2 H D3 U for the fitted signs: the
// stack X itself when the fit is the mask.
func HD3Unmask(f *HD3FitResult, U *mat.Dense) (*mat.Dense, error) {
	if f == nil || f.D1 == nil {
		return nil, errors.New("rowspace: no fit to unmask with")
	}
	y := mat.DenseCopyOf(U)
	for _, dg := range [][]float64{f.D3, f.D2, f.D1} {
		if err := signRows(y, dg); err != nil {
			return nil, err
		}
		if err := WHT(y); err != nil {
			return nil, err
		}
	}
	return y, nil
}

// WhitenGuess is the hypothesis an attacker of a whitened stack needs no
// data for: X = [H'; S; 0] with S = (I - H'^T H')^(1/2), and H' = H/alpha
// small (alpha a power of two above |H|_2, so |H'|_2 <= 3/4 and S is the
// identity up to a correction of rank n), so X is close to [0_n; I_d; 0].
// Fitted against it, the alternating minimisation finds the mask itself
// (hd3_test.go), and A^T U reads the data rows.
func WhitenGuess(n, d, s int) (*mat.Dense, error) {
	if n < 1 || d < 1 || s < n+d {
		return nil, fmt.Errorf("rowspace: whiten guess n = %d, d = %d, s = %d: want s >= n + d", n, d, s)
	}
	g := mat.NewDense(s, d, nil)
	for i := 0; i < d; i++ {
		g.Set(n+i, i, 1)
	}
	return g, nil
}

func corrSigns(dst []float64, a, b *mat.Dense) {
	for i := range dst {
		if dot(a.RawRowView(i), b.RawRowView(i)) >= 0 {
			dst[i] = 1
		} else {
			dst[i] = -1
		}
	}
}

func clone(x []float64) []float64 { return append([]float64(nil), x...) }

// HD3Verdict compares the fit on the observed payload with the fit of the
// same hypothesis under a Haar mask.
type HD3Verdict struct {
	// Observed is HD3Fit's residual on (U, X); Haar is the residual on
	// (A X, X) for a Haar A drawn from Seed, the reference a mask
	// without structure gives.
	Observed, Haar float64
	// Structured reports Observed < Haar / 4: the hypothesis fits an HD3
	// mask far better than chance (with clear margin).
	Structured bool
}

// HD3Distinguish runs HD3Fit on the observation and on a Haar-mixed copy
// of the hypothesis and reports whether the observation has HD3 structure.
func HD3Distinguish(U, X *mat.Dense, opts HD3Options) (*HD3Verdict, error) {
	obs, err := HD3Fit(U, X, opts)
	if err != nil {
		return nil, err
	}
	s, _ := X.Dims()
	ref, err := HD3Fit(Mix(Haar(s, NewRand(opts.Seed^0x4a1)), X), X, opts)
	if err != nil {
		return nil, err
	}
	return &HD3Verdict{Observed: obs.Residual, Haar: ref.Residual, Structured: obs.Residual < ref.Residual/4}, nil
}

// DyadicScore is a second HD3 distinguisher that needs X of full row rank
// (d >= s): the least-squares mask M = U X^+ is D3 C D1 H for an HD3
// mask, with C = H D2 H a dyadic convolution (C_ij depends only on
// i XOR j), so |(M H)_ij| is constant on each class i XOR j. The score is the share of the
// variance of |M_ij| left within classes: ~0 for HD3, ~1 for Haar.
func DyadicScore(U, X *mat.Dense) (float64, error) {
	s, d := U.Dims()
	sx, dx := X.Dims()
	if s != sx || d != dx {
		return 0, fmt.Errorf("rowspace: U is %dx%d, X is %dx%d", s, d, sx, dx)
	}
	if s&(s-1) != 0 || d < s {
		return 0, fmt.Errorf("rowspace: DyadicScore needs a power-of-two s <= d, got s=%d d=%d", s, d)
	}
	// M^T = (X^T)^+ U^T: solve X^T M^T = U^T in the least-squares sense.
	var mt mat.Dense
	if err := mt.Solve(X.T(), U.T()); err != nil {
		return 0, err
	}
	if err := WHT(&mt); err != nil { // H M^T = (M H)^T
		return 0, err
	}
	mean := make([]float64, s)
	tot := 0.0
	for i := 0; i < s; i++ {
		for j := 0; j < s; j++ {
			a := math.Abs(mt.At(j, i))
			mean[i^j] += a / float64(s)
			tot += a
		}
	}
	tot /= float64(s * s)
	var within, all float64
	for i := 0; i < s; i++ {
		for j := 0; j < s; j++ {
			a := math.Abs(mt.At(j, i))
			within += (a - mean[i^j]) * (a - mean[i^j])
			all += (a - tot) * (a - tot)
		}
	}
	if all == 0 {
		return 0, nil
	}
	return within / all, nil
}
