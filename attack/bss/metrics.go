package bss

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"gelo/attack/rowspace"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Amari returns the Amari index of P = W*A (W: k x m unmixing, A: m x n
// mixing), normalised to [0, 1]: 0 when P is a scaled permutation (perfect
// separation), near 1 when every row and column of P is flat. For square P it
// is the usual (1/(2n(n-1))) * sum_i(sum_j |p_ij|/max_j|p_ij| - 1) + the same
// over columns; for k != n each half is normalised by its own count.
func Amari(w, a mat.Matrix) (float64, error) {
	k, m := w.Dims()
	m2, n := a.Dims()
	if m != m2 {
		return 0, fmt.Errorf("%w: W is %dx%d, A is %dx%d", ErrShape, k, m, m2, n)
	}
	if k < 2 || n < 2 {
		return 0, fmt.Errorf("%w: Amari needs at least 2 sources and 2 estimates", ErrShape)
	}
	var p mat.Dense
	p.Mul(w, a)
	rowMax := make([]float64, k)
	colMax := make([]float64, n)
	for i := 0; i < k; i++ {
		for j := 0; j < n; j++ {
			v := math.Abs(p.At(i, j))
			rowMax[i] = math.Max(rowMax[i], v)
			colMax[j] = math.Max(colMax[j], v)
		}
	}
	var rs, cs float64
	for i := 0; i < k; i++ {
		for j := 0; j < n; j++ {
			v := math.Abs(p.At(i, j))
			if rowMax[i] > 0 {
				rs += v / rowMax[i]
			}
			if colMax[j] > 0 {
				cs += v / colMax[j]
			}
		}
	}
	rs = (rs - float64(k)) / float64(k*(n-1))
	cs = (cs - float64(n)) / float64(n*(k-1))
	return (rs + cs) / 2, nil
}

// AbsCosines returns the k x n matrix of |cos| between the rows of est
// (k x N) and the rows of truth (n x N). A zero row has cosine 0.
func AbsCosines(est, truth mat.Matrix) (*mat.Dense, error) {
	_, c1 := est.Dims()
	_, c2 := truth.Dims()
	if c1 != c2 {
		return nil, fmt.Errorf("%w: est has %d columns, truth %d", ErrShape, c1, c2)
	}
	en := rowNormalised(est)
	tn := rowNormalised(truth)
	var c mat.Dense
	c.Mul(en, tn.T())
	c.Apply(func(_, _ int, v float64) float64 { return math.Min(math.Abs(v), 1) }, &c)
	return &c, nil
}

func rowNormalised(a mat.Matrix) *mat.Dense {
	d := mat.DenseCopyOf(a)
	r, _ := d.Dims()
	for i := 0; i < r; i++ {
		row := d.RawRowView(i)
		if nrm := floats.Norm(row, 2); nrm > 0 {
			floats.Scale(1/nrm, row)
		}
	}
	return d
}

// MatchedCosines returns, for each truth row, the |cos| of the estimate
// assigned to it by the optimal one-to-one assignment (Hungarian algorithm,
// maximising the total |cos|). This is the score that forgives ICA's
// permutation/sign/scale ambiguity and nothing else. With fewer estimates than
// truth rows, the unassigned truth rows score 0.
func MatchedCosines(est, truth mat.Matrix) ([]float64, error) {
	c, err := AbsCosines(est, truth)
	if err != nil {
		return nil, err
	}
	k, n := c.Dims()
	out := make([]float64, n)
	if k == 0 || n == 0 {
		return out, nil
	}
	if n <= k {
		cost := make([][]float64, n) // truth rows x estimates
		for j := 0; j < n; j++ {
			cost[j] = make([]float64, k)
			for i := 0; i < k; i++ {
				cost[j][i] = -c.At(i, j)
			}
		}
		as, err := Hungarian(cost)
		if err != nil {
			return nil, err
		}
		for j, i := range as {
			out[j] = c.At(i, j)
		}
		return out, nil
	}
	cost := make([][]float64, k) // estimates x truth rows
	for i := 0; i < k; i++ {
		cost[i] = make([]float64, n)
		for j := 0; j < n; j++ {
			cost[i][j] = -c.At(i, j)
		}
	}
	as, err := Hungarian(cost)
	if err != nil {
		return nil, err
	}
	for i, j := range as {
		out[j] = c.At(i, j)
	}
	return out, nil
}

// Hungarian solves the rectangular assignment problem: cost is r x c with
// r <= c; it returns, for each row, the distinct column that minimises the
// total cost (O(r^2 c), Kuhn-Munkres with potentials).
func Hungarian(cost [][]float64) ([]int, error) {
	r := len(cost)
	if r == 0 {
		return nil, nil
	}
	c := len(cost[0])
	for _, row := range cost {
		if len(row) != c {
			return nil, fmt.Errorf("%w: ragged cost matrix", ErrShape)
		}
		for _, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("bss: non-finite cost")
			}
		}
	}
	if r > c {
		return nil, fmt.Errorf("%w: Hungarian needs rows <= columns, got %dx%d", ErrShape, r, c)
	}
	return rowspace.Hungarian(cost), nil
}

// Percentile returns the q-quantile (q in [0,1]) of xs with linear
// interpolation between order statistics (numpy's default), NaN when empty.
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// P95 is Percentile(xs, 0.95), the seed harness's headline ICA figure.
func P95(xs []float64) float64 { return Percentile(xs, 0.95) }

// baselineDraws pools enough random draws that the baseline's p95 is stable.
func baselineDraws(n int) int {
	d := (400 + n - 1) / max(n, 1)
	return max(d, 1)
}

// RandomRowsP95 is the chance level for MatchedCosines: the p95 of the
// matched |cos| between `rows` independent Gaussian rows (truth's width) and
// the rows of truth, pooled over enough independent draws (seeded) that the
// figure is stable. An attack whose p95 is no better than this learned
// nothing a coin could not give it. (The brief named it RandomRowsP95(rows,
// cols, seed); the truth is needed too, as the matching depends on it.)
func RandomRowsP95(truth mat.Matrix, rows int, seed uint64) (float64, error) {
	n, cols := truth.Dims()
	if rows < 1 || n < 1 || cols < 1 {
		return 0, fmt.Errorf("%w: RandomRowsP95 needs rows, truth rows and columns >= 1", ErrShape)
	}
	var pool []float64
	for t := 0; t < baselineDraws(n); t++ {
		mc, err := MatchedCosines(gaussian(rows, cols, seed+uint64(t)*0x51ed27), truth)
		if err != nil {
			return 0, err
		}
		pool = append(pool, mc...)
	}
	return P95(pool), nil
}

// RandomMixP95 is the chance level for an attacker who knows the span of the
// true sources but cannot separate them (Gaussian sources, or any payload
// whose row space contains the truth rows): the p95 matched |cos| of `rows`
// isotropic random directions inside the row space of span against truth. With span =
// truth it is the score of a separation that failed completely; it is higher
// than RandomRowsP95 because the guesses lie in the right subspace.
func RandomMixP95(span, truth mat.Matrix, rows int, seed uint64) (float64, error) {
	r, c1 := span.Dims()
	n, c2 := truth.Dims()
	if c1 != c2 {
		return 0, fmt.Errorf("%w: span has %d columns, truth %d", ErrShape, c1, c2)
	}
	if rows < 1 || r < 1 || n < 1 {
		return 0, fmt.Errorf("%w: RandomMixP95 needs rows, span rows and truth rows >= 1", ErrShape)
	}
	basis, err := rowBasis(span)
	if err != nil {
		return 0, err
	}
	b, _ := basis.Dims()
	var pool []float64
	var est mat.Dense
	for t := 0; t < baselineDraws(n); t++ {
		est.Mul(gaussian(rows, b, seed+uint64(t)*0x51ed27), basis)
		mc, err := MatchedCosines(&est, truth)
		if err != nil {
			return 0, err
		}
		pool = append(pool, mc...)
		est.Reset()
	}
	return P95(pool), nil
}

// rowBasis returns an orthonormal basis (b x N, as rows) of the row space of
// a, from its thin SVD, dropping directions below rankTol of the top one.
func rowBasis(a mat.Matrix) (*mat.Dense, error) {
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		return nil, fmt.Errorf("bss: SVD failed")
	}
	sv := svd.Values(nil)
	var v mat.Dense
	svd.VTo(&v)
	b := 0
	for _, x := range sv {
		if x > math.Sqrt(rankTol)*sv[0] {
			b++
		}
	}
	if b == 0 {
		return nil, fmt.Errorf("%w: zero matrix has no row space", ErrShape)
	}
	out := mat.DenseCopyOf(v.Slice(0, v.RawMatrix().Rows, 0, b).T())
	return out, nil
}

// Attack is any separation run on one payload, returning its estimated rows
// (k x N), e.g. func(u mat.Matrix) (*mat.Dense, error) { r, err :=
// FastICA(u, opt); ...; return r.Sources, nil }.
type Attack func(u mat.Matrix) (*mat.Dense, error)

// NullPayload returns a payload that carries no information: an m x N matrix
// drawn uniformly with orthonormal columns (m >= N) or rows (m < N), the law
// of A X for a Haar A and any X with orthonormal columns.
func NullPayload(m, n int, seed uint64) (*mat.Dense, error) {
	if m < 1 || n < 1 {
		return nil, fmt.Errorf("%w: null payload %dx%d", ErrShape, m, n)
	}
	tall := m >= n
	r, c := m, n
	if !tall {
		r, c = n, m
	}
	var qr mat.QR
	qr.Factorize(gaussian(r, c, seed))
	var q, rr mat.Dense
	qr.QTo(&q)
	qr.RTo(&rr)
	out := mat.DenseCopyOf(q.Slice(0, r, 0, c))
	for j := 0; j < c; j++ {
		if rr.At(j, j) < 0 {
			for i := 0; i < r; i++ {
				out.Set(i, j, -out.At(i, j))
			}
		}
	}
	if !tall {
		return mat.DenseCopyOf(out.T()), nil
	}
	return out, nil
}

// NullP95 is the chance level of a given attack against given truth rows:
// the p95 matched |cos| of attack(NullPayload) against truth, pooled over
// draws null payloads of shape m x N (N = truth's width). It is the fair
// baseline for "the attack learned nothing": independent Gaussian rows
// (RandomRowsP95) under-state chance whenever the attack's estimates and the
// truth share a shape (ICA returns spiky rows; heavy-tailed or smooth truth
// rows then match them by accident), e.g. 0.53 against 0.41 for FastICA on
// 8 Laplace rows at d = 64, and 0.85 against 0.41 for SOBI on AR(1) rows.
func NullP95(attack Attack, m int, truth mat.Matrix, draws int, seed uint64) (float64, error) {
	_, n := truth.Dims()
	if draws < 1 {
		draws = 1
	}
	// The draws are independent (one seed each): run them concurrently,
	// pooled in draw order, so the figure does not depend on scheduling.
	mcs := make([][]float64, draws)
	errs := make([]error, draws)
	var wg sync.WaitGroup
	for t := 0; t < draws; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := NullPayload(m, n, seed+uint64(t)*0x2545f491)
			if err != nil {
				errs[t] = err
				return
			}
			est, err := attack(u)
			if err != nil {
				errs[t] = err
				return
			}
			mcs[t], errs[t] = MatchedCosines(est, truth)
		}()
	}
	wg.Wait()
	var pool []float64
	for t := range draws {
		if errs[t] != nil {
			return 0, errs[t]
		}
		pool = append(pool, mcs[t]...)
	}
	return P95(pool), nil
}
