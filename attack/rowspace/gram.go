package rowspace

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// Gram spike test. The payload's Gram U^T U = H^T H + S^T S is mask-free,
// so for a unit candidate direction v the statistic
// t(v) = v^T U^T U v = |U v|^2 carries a spike of at least |h_i|^2 when
// v is a secret row, on top of v^T S^T S v. It needs no room in the row
// space (it works when n + k >= d), only that the spike stands out of the
// shield's fluctuation; a whitened shield (U^T U = I) leaves nothing.

// SpikeOptions chooses the null distribution of t(v) for absent v.
type SpikeOptions struct {
	// ShieldK and ShieldRowNorm, when both > 0, give the shield model:
	// k Gaussian rows N(0, sigma^2 I_d) with sigma^2 = ShieldRowNorm^2/d,
	// so v^T S^T S v ~ sigma^2 chi^2_k (mean k sigma^2, sd sigma^2 sqrt(2k)).
	// Otherwise the null is estimated from the candidates themselves
	// (median and 1.4826 MAD; nearly all candidates are absent).
	ShieldK       int
	ShieldRowNorm float64
	// TieSeed orders tied candidates (see Options.TieSeed).
	TieSeed uint64
	// Head, if positive, keeps only the first Head ids of Ranking (see
	// Options.Head).
	Head int
}

// SpikeResult holds the standardised statistics.
type SpikeResult struct {
	// T[v] = |U v|^2 / |v|^2 for every dictionary row v.
	T []float64
	// Z[v] is T[v] standardised against the null.
	Z []float64
	// Ranking lists token ids by decreasing Z (most likely present first).
	Ranking []int
	// NullMean and NullSD are the null's location and scale used.
	NullMean, NullSD float64
}

// GramSpike computes t(v) for every row of D (in blocks of D U^T, V x s,
// so the d x d Gram is never needed) and standardises it.
func GramSpike(U, D *mat.Dense, opts SpikeOptions) (*SpikeResult, error) {
	if err := checkDict(U, D); err != nil {
		return nil, err
	}
	s, d := U.Dims()
	V, _ := D.Dims()
	t := make([]float64, V)
	var p mat.Dense
	for lo := 0; lo < V; lo += blockRows {
		hi := min(lo+blockRows, V)
		p.Reset()
		p.ReuseAs(hi-lo, s)
		p.Mul(D.Slice(lo, hi, 0, d), U.T())
		for i := lo; i < hi; i++ {
			row := D.RawRowView(i)
			nv := dot(row, row)
			if nv == 0 {
				continue
			}
			pr := p.RawRowView(i - lo)
			t[i] = dot(pr, pr) / nv
		}
	}
	return spikeOf(t, d, opts), nil
}

// spikeOf standardises t against the null opts chooses and ranks it.
func spikeOf(t []float64, d int, opts SpikeOptions) *SpikeResult {
	V := len(t)
	var mu, sd float64
	if opts.ShieldK > 0 && opts.ShieldRowNorm > 0 {
		sig2 := opts.ShieldRowNorm * opts.ShieldRowNorm / float64(d)
		mu, sd = float64(opts.ShieldK)*sig2, sig2*math.Sqrt(2*float64(opts.ShieldK))
	} else {
		mu, sd = robust(t)
	}
	z := make([]float64, V)
	neg := make([]float64, V)
	for i, x := range t {
		if sd > 0 {
			z[i] = (x - mu) / sd
		}
		neg[i] = -z[i]
	}
	return &SpikeResult{T: t, Z: z, Ranking: rankHead(neg, opts.TieSeed, opts.Head), NullMean: mu, NullSD: sd}
}

// robust returns the median and 1.4826 * median absolute deviation.
func robust(x []float64) (float64, float64) {
	if len(x) == 0 {
		return 0, 0
	}
	c := append([]float64(nil), x...)
	sort.Float64s(c)
	med := c[len(c)/2]
	for i, v := range c {
		c[i] = math.Abs(v - med)
	}
	sort.Float64s(c)
	return med, 1.4826 * c[len(c)/2]
}

// StripShield is shield stripping by energy: when the shield rows carry
// much more energy than the data rows, the top singular directions of U
// are mostly the shield's. It drops the top `drop` right singular
// directions, keeps the rest of the row space (above the rank tolerance)
// and runs the span test there. It can only help where the plain test is
// blind; where n + k < d the plain test is already exact and stripping
// only costs the data's components along the dropped directions.
func StripShield(U, D *mat.Dense, drop int, opts Options) (*Result, error) {
	if err := checkDict(U, D); err != nil {
		return nil, err
	}
	q, _, err := Basis(U, opts.RankTol, opts.MaxRank)
	if err != nil {
		return nil, err
	}
	r, d := q.Dims()
	if drop < 0 || drop >= r {
		return nil, fmt.Errorf("rowspace: cannot drop %d of %d directions", drop, r)
	}
	rest := q.Slice(drop, r, 0, d).(*mat.Dense)
	dist, err := distances(rest, D)
	if err != nil {
		return nil, err
	}
	return &Result{Ranking: rankTies(dist, opts.TieSeed), Dist: dist, Rank: r - drop, Full: r-drop >= d}, nil
}
