package lwe

import (
	"fmt"
	"math"
)

// distKind names the families of coordinate distributions the estimates
// distinguish. They differ in what an attack may exploit: a standard
// deviation (every lattice attack), a bound (exhaustive search and MitM), a
// fixed Hamming weight (guessing and dropping coordinates).
type distKind int

const (
	kindGaussian   distKind = iota // discrete Gaussian of a given standard deviation
	kindCBD                        // centred binomial CBD(eta)
	kindUniformMod                 // uniform mod q (a "dense" secret, normal form applies)
	kindTernary                    // uniform on {-1, 0, 1}
	kindSparse                     // ternary with exactly h nonzeros, signs balanced
)

// Dist is the distribution of the coordinates of an LWE secret or error, as
// far as the estimates use it. Build one with Gaussian, CBD, UniformMod,
// Ternary or SparseTernary.
type Dist struct {
	kind  distKind
	sigma float64 // Gaussian standard deviation
	eta   int     // CBD parameter
	q     float64 // UniformMod modulus
	h     int     // SparseTernary weight
	plus  int     // SparseTernary: entries equal to +1 (h - plus are -1)
}

// Gaussian is a discrete Gaussian with standard deviation stddev (not the
// width parameter s = sqrt(2 pi) stddev).
func Gaussian(stddev float64) Dist { return Dist{kind: kindGaussian, sigma: stddev} }

// CBD is the centred binomial distribution sum_{i<eta} (a_i - b_i) with
// a_i, b_i uniform bits: standard deviation sqrt(eta/2), bounded by eta.
func CBD(eta int) Dist { return Dist{kind: kindCBD, eta: eta} }

// UniformMod is the uniform distribution on Z_q (centred).
func UniformMod(q float64) Dist { return Dist{kind: kindUniformMod, q: q} }

// Ternary is the uniform distribution on {-1, 0, 1}.
func Ternary() Dist { return Dist{kind: kindTernary} }

// SparseTernary is the distribution of vectors with exactly h nonzero
// entries, ceil(h/2) of them +1 and floor(h/2) of them -1 (the estimator's
// SparseTernary(p, m) with p = ceil(h/2), m = floor(h/2)).
func SparseTernary(h int) Dist { return Dist{kind: kindSparse, h: h, plus: h - h/2} }

// sparsePM is the sparse ternary distribution with p entries +1 and m
// entries -1 (a part of a split secret).
func sparsePM(p, m int) Dist { return Dist{kind: kindSparse, h: p + m, plus: p} }

// String names the distribution the way the tables print it.
func (d Dist) String() string {
	switch d.kind {
	case kindGaussian:
		return fmt.Sprintf("DG(sd=%.3g)", d.sigma)
	case kindCBD:
		return fmt.Sprintf("CBD(%d)", d.eta)
	case kindUniformMod:
		return fmt.Sprintf("U(Z_2^%.4g)", math.Log2(d.q))
	case kindTernary:
		return "T(-1,0,1)"
	default:
		return fmt.Sprintf("T(h=%d)", d.h)
	}
}

// check reports a distribution that no estimate can use, naming field.
func (d Dist) check(field string, n int) error {
	switch d.kind {
	case kindGaussian:
		if !(d.sigma > 0) || math.IsInf(d.sigma, 0) {
			return fmt.Errorf("%s: Gaussian standard deviation %v must be positive and finite", field, d.sigma)
		}
	case kindCBD:
		if d.eta < 1 {
			return fmt.Errorf("%s: CBD eta %d must be at least 1", field, d.eta)
		}
	case kindUniformMod:
		if !(d.q >= 2) || math.IsInf(d.q, 0) {
			return fmt.Errorf("%s: uniform modulus %v must be at least 2 and finite", field, d.q)
		}
	case kindTernary:
	case kindSparse:
		if d.h < 1 || d.h > n {
			return fmt.Errorf("%s: sparse weight h = %d must lie in [1, n = %d]", field, d.h, n)
		}
	default:
		return fmt.Errorf("%s: unknown distribution (build it with Gaussian, CBD, UniformMod, Ternary or SparseTernary)", field)
	}
	return nil
}

// sparse reports whether the distribution has a fixed Hamming weight.
func (d Dist) sparse() bool { return d.kind == kindSparse }

// plusMinus returns the number of +1 and -1 entries of a sparse ternary
// distribution.
func (d Dist) plusMinus() (p, m int) { return d.plus, d.h - d.plus }

// stddev is the standard deviation of one coordinate when the vector has n
// coordinates (only the sparse distribution depends on n: h/n of the
// coordinates are nonzero). For the sparse distribution it is
// sqrt(h/n - mean^2) with mean (p - m)/n, as in the estimator.
func (d Dist) stddev(n int) float64 {
	switch d.kind {
	case kindGaussian:
		return d.sigma
	case kindCBD:
		return math.Sqrt(float64(d.eta) / 2)
	case kindUniformMod:
		return math.Sqrt((d.q*d.q - 1) / 12)
	case kindTernary:
		return math.Sqrt(2.0 / 3)
	default:
		if n <= 0 {
			return 0
		}
		p, m := d.plusMinus()
		mean := float64(p-m) / float64(n)
		return math.Sqrt(float64(d.h)/float64(n) - mean*mean)
	}
}

// rangeAndProb returns the number of values a coordinate takes (bounded
// distributions) or takes with probability prob (the estimator cuts a
// Gaussian at 2 width parameters: 2*(2*2*s+1)+1 values, prob 1-2exp(-4pi)).
func (d Dist) rangeAndProb() (size, prob float64) {
	switch d.kind {
	case kindGaussian:
		s := math.Sqrt(2*math.Pi) * d.sigma
		return 2*(2*2*s+1) + 1, 1 - 2*math.Exp(-4*math.Pi)
	case kindCBD:
		return float64(2*d.eta + 1), 1
	case kindUniformMod:
		return d.q, 1
	default:
		return 3, 1
	}
}
