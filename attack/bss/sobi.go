package bss

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// SOBIOptions configures SOBI and JointSOBI. The zero value is usable.
type SOBIOptions struct {
	MaxComponents int     // PCA whitening keeps at most this many (0: 64)
	Lags          []int   // column lags tau >= 0 of the covariances to diagonalise (nil: 0..10)
	Tol           float64 // Jacobi rotation threshold (0: 1e-8)
	MaxSweeps     int     // Jacobi sweep cap (0: 100)
}

func (o SOBIOptions) lags(n int) ([]int, error) {
	l := o.Lags
	if l == nil {
		for t := 0; t <= 10 && t < n-1; t++ {
			l = append(l, t)
		}
	}
	if len(l) == 0 {
		return nil, fmt.Errorf("%w: no lags", ErrShape)
	}
	for _, t := range l {
		if t < 0 || t >= n-1 {
			return nil, fmt.Errorf("%w: lag %d outside [0, %d)", ErrShape, t, n-1)
		}
	}
	return l, nil
}

// laggedCov returns the symmetrised column-lagged covariance
// (R + R^T)/2 with R = z[:, tau:] z[:, :N-tau]^T / (N - tau).
func laggedCov(z *mat.Dense, tau int) *mat.Dense {
	k, n := z.Dims()
	a := z.Slice(0, k, tau, n)
	b := z.Slice(0, k, 0, n-tau)
	var r mat.Dense
	r.Mul(a, b.T())
	out := mat.NewDense(k, k, nil)
	s := 0.5 / float64(n-tau)
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			out.Set(i, j, s*(r.At(i, j)+r.At(j, i)))
		}
	}
	return out
}

// SOBI is Belouchrani et al.'s (1997) second-order blind identification:
// whiten U (m x N), jointly diagonalise the symmetrised covariances at the
// column lags, rotate. It needs sources with distinct autocorrelations along
// the sample axis; in gelo that axis is the hidden width, so it asks whether
// neighbouring hidden coordinates are correlated differently per source row.
func SOBI(u mat.Matrix, opt SOBIOptions) (*Result, error) {
	if u == nil {
		return nil, fmt.Errorf("%w: nil observation", ErrShape)
	}
	wh, err := whiten(u, opt.MaxComponents)
	if err != nil {
		return nil, err
	}
	_, n := wh.Z.Dims()
	lags, err := opt.lags(n)
	if err != nil {
		return nil, err
	}
	cms := make([]*mat.Dense, len(lags))
	for i, t := range lags {
		cms[i] = laggedCov(wh.Z, t)
	}
	v, sweeps, err := jointDiag(cms, opt.Tol, opt.MaxSweeps)
	conv := true
	if errors.Is(err, ErrNotConverged) {
		conv = false
	} else if err != nil {
		return nil, err
	}
	return newResult(wh, mat.DenseCopyOf(v.T()), u, sweeps, conv), nil
}

// JointResult is a separation with one unmixing shared by T observations.
type JointResult struct {
	Unmixing *mat.Dense   // k x m, shared: Sources[t] = Unmixing * Us[t]
	Sources  []*mat.Dense // per observation, k x N_t
	// Whitening is the pooled k x m whitener; Rotation the k x k JD result.
	Whitening, Rotation *mat.Dense
	Sweeps              int
	Converged           bool
}

// JointSOBI is SOBI across observations: given T payloads U_t (m x N_t, one
// m) that an attacker hopes share a mixing (U_t = A X_t), it whitens with the
// pooled covariance and jointly diagonalises the lagged covariances of every
// observation at once (lag 0 included by default: with a shared A, a change
// in the sources' variances between observations identifies A even for
// Gaussian sources). If every pass draws a fresh mask A_t, there is no common
// diagonaliser and pooling buys nothing; that is the freshness test.
func JointSOBI(us []*mat.Dense, opt SOBIOptions) (*JointResult, error) {
	if len(us) == 0 {
		return nil, fmt.Errorf("%w: no observations", ErrShape)
	}
	m, _ := us[0].Dims()
	total := 0
	cen := make([]*mat.Dense, len(us))
	minN := math.MaxInt
	for t, u := range us {
		r, n := u.Dims()
		if r != m {
			return nil, fmt.Errorf("%w: observation %d has %d rows, want %d", ErrShape, t, r, m)
		}
		if n < 2 {
			return nil, fmt.Errorf("%w: observation %d has %d samples", ErrShape, t, n)
		}
		cen[t], _ = centreRows(u)
		total += n
		minN = min(minN, n)
	}
	if m < 1 {
		return nil, fmt.Errorf("%w: no mixtures", ErrShape)
	}
	lags, err := opt.lags(minN)
	if err != nil {
		return nil, err
	}
	c := mat.NewSymDense(m, nil)
	for _, uc := range cen {
		c.SymRankK(c, 1/float64(total), uc)
	}
	maxComp := opt.MaxComponents
	if maxComp <= 0 {
		maxComp = DefaultMaxComponents
	}
	K, err := pcaWhitener(c, maxComp)
	if err != nil {
		return nil, err
	}
	var cms []*mat.Dense
	for _, uc := range cen {
		var z mat.Dense
		z.Mul(K, uc)
		for _, tau := range lags {
			cms = append(cms, laggedCov(&z, tau))
		}
	}
	v, sweeps, err := jointDiag(cms, opt.Tol, opt.MaxSweeps)
	conv := true
	if errors.Is(err, ErrNotConverged) {
		conv = false
	} else if err != nil {
		return nil, err
	}
	rot := mat.DenseCopyOf(v.T())
	unmix := new(mat.Dense)
	unmix.Mul(rot, K)
	src := make([]*mat.Dense, len(us))
	for t, u := range us {
		src[t] = new(mat.Dense)
		src[t].Mul(unmix, u)
	}
	return &JointResult{Unmixing: unmix, Sources: src, Whitening: K, Rotation: rot,
		Sweeps: sweeps, Converged: conv}, nil
}

// JointSOBIP95 runs JointSOBI on the payloads us (at most comps
// components) and returns the 95th percentile of the matched |cos| of
// every payload's separated sources against its true rows truths[t],
// pooled over the payloads: the joint-SOBI figure of the harness and of
// the lwe level's attacks, and, run on null payloads, its chance.
func JointSOBIP95(us, truths []*mat.Dense, comps int) (float64, error) {
	if len(us) != len(truths) {
		return 0, fmt.Errorf("%w: %d payloads, %d truths", ErrShape, len(us), len(truths))
	}
	jr, err := JointSOBI(us, SOBIOptions{MaxComponents: comps})
	if err != nil {
		return 0, err
	}
	var pool []float64
	for t := range us {
		mc, err := MatchedCosines(jr.Sources[t], truths[t])
		if err != nil {
			return 0, err
		}
		pool = append(pool, mc...)
	}
	return P95(pool), nil
}
