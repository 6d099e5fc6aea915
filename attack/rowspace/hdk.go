package rowspace

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// More rounds. HDK is the cascade A = D_K H ... D_2 H D_1 H (HD3 is
// K = 3), the first candidate fix for a structured mixing the HD3 fit
// breaks. HDKFit is HD3Fit's alternating minimisation over K diagonals:
// with the others fixed, D_j is closed form again, because
//
//	(D_K H ... D_{j+1} H)^T U = D_j (H D_{j-1} H ... D_1 H X)
//
// is a row-wise sign choice. On a whitened stack (s = 128, d = 64) the
// data-free fit found the mask from about 95 % of random starts at
// K = 3, 1.5 % at K = 4 (3 of 200) and none of 300 at K = 5: more rounds
// buy the device a longer search, not a proof.

// HDKApply returns D_K H ... D_1 H X for diags = [D_1, ..., D_K].
func HDKApply(diags [][]float64, X *mat.Dense) (*mat.Dense, error) {
	y := mat.DenseCopyOf(X)
	for _, dg := range diags {
		if err := WHT(y); err != nil {
			return nil, err
		}
		if err := signRows(y, dg); err != nil {
			return nil, err
		}
	}
	return y, nil
}

// HDKFitResult is the best fit found.
type HDKFitResult struct {
	Diags    [][]float64 // D_1 ... D_K
	Residual float64     // |U - A X|_F / |U|_F
}

// HDKFit fits K rounds (K >= 1) as HD3Fit fits three.
func HDKFit(U, X *mat.Dense, K int, opts HD3Options) (*HDKFitResult, error) {
	if U == nil || X == nil {
		return nil, errors.New("rowspace: nil input")
	}
	s, d := U.Dims()
	if sx, dx := X.Dims(); s != sx || d != dx {
		return nil, fmt.Errorf("rowspace: U is %dx%d, X is %dx%d", s, d, sx, dx)
	}
	if K < 1 || s > HD3MaxFit || s&(s-1) != 0 {
		return nil, fmt.Errorf("rowspace: HDKFit needs K >= 1 and a power-of-two size <= %d, got K = %d, s = %d", HD3MaxFit, K, s)
	}
	opts = opts.withDefaults()
	rng := NewRand(opts.Seed)
	nu := mat.Norm(U, 2)
	best := &HDKFitResult{Residual: math.Inf(1)}
	for start := 0; start < opts.Restarts; start++ {
		diags := make([][]float64, K)
		for j := range K - 1 {
			diags[j] = RandomSigns(s, rng)
		}
		diags[K-1] = make([]float64, s)
		prev := math.Inf(1)
		for it := 0; it < opts.Iters; it++ {
			for j := K - 1; j >= 0; j-- {
				// W = H D_{j+1} ... H D_K U (outermost undone first).
				w := mat.DenseCopyOf(U)
				for l := K - 1; l > j; l-- {
					signRows(w, diags[l])
					WHT(w)
				}
				// Z = H D_{j-1} H ... D_1 H X.
				z := mat.DenseCopyOf(X)
				WHT(z)
				for l := 0; l < j; l++ {
					signRows(z, diags[l])
					WHT(z)
				}
				corrSigns(diags[j], w, z)
			}
			fit, _ := HDKApply(diags, X)
			fit.Sub(U, fit)
			res := mat.Norm(fit, 2) / nu
			if res < best.Residual {
				cp := make([][]float64, K)
				for j := range diags {
					cp[j] = clone(diags[j])
				}
				best = &HDKFitResult{Diags: cp, Residual: res}
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

// HDKUnmask returns A^T U = H D_1 H D_2 ... H D_K U for the fitted
// diagonals: the stack itself when the fit is the mask.
func HDKUnmask(f *HDKFitResult, U *mat.Dense) (*mat.Dense, error) {
	if f == nil || len(f.Diags) == 0 {
		return nil, errors.New("rowspace: no fit to unmask with")
	}
	y := mat.DenseCopyOf(U)
	for j := len(f.Diags) - 1; j >= 0; j-- {
		if err := signRows(y, f.Diags[j]); err != nil {
			return nil, err
		}
		if err := WHT(y); err != nil {
			return nil, err
		}
	}
	return y, nil
}
