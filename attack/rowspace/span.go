// Package rowspace holds the row-space and second-order attacks on a
// masked payload U = A [H; S] (A orthogonal s x s, H the n secret rows, S
// the k shield rows). Row mixing never changes the row space:
// rowspace(U) = rowspace(H) + rowspace(S), and the Gram U^T U = H^T H +
// S^T S is mask-free. Whenever n + k < d, a row of H that comes from a
// public dictionary (layer-0 rows are normalised embedding rows) is read
// off exactly by testing which dictionary rows lie in that space,
// whatever A is. The functions here take plain *mat.Dense inputs (one
// payload, one dictionary D of V x d candidate rows, one per token) and
// return rankings and figures; reading recordings is the caller's job.
package rowspace

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// DefaultRankTol is the relative singular-value tolerance used when
// Options.RankTol is zero: singular values below RankTol * sigma_max are
// treated as zero (float32 payloads carry ~1e-7 relative noise).
const DefaultRankTol = 1e-5

// blockRows is how many dictionary rows are projected at once: D (V x d)
// is never copied or multiplied whole, so V = 151936 at d = 4096 costs one
// block of blockRows x r scratch.
const blockRows = 2048

// Options tunes SpanMembership.
type Options struct {
	// RankTol is the relative tolerance on singular values that decides
	// the rank of U (default DefaultRankTol).
	RankTol float64
	// MaxRank caps the basis at this many leading directions (0: no cap).
	MaxRank int
	// TieSeed orders tied rows (a seeded permutation, not token id: when
	// the payload spans everything every distance is 0, and ranking by id
	// would favour low ids, which are frequent tokens in real prompts).
	TieSeed uint64
	// Head, if positive, makes the prepared-dictionary tests (SpanDict,
	// Centred) return only the first Head ids of the ranking, in the same
	// order: the figures read only the head, and sorting a 151936-token
	// vocabulary per payload costs more than the decode pass's product.
	Head int
}

// Result of a span-membership test.
type Result struct {
	// Ranking lists token ids (dictionary rows) sorted by increasing
	// distance to the payload's row space: the attack's guesses, best first.
	Ranking []int
	// Dist[v] is the distance of the unit-normalised dictionary row v to
	// the row space, in [0, 1] (0: v lies in it; ~sqrt(1 - r/d) for a
	// random direction).
	Dist []float64
	// Rank is the dimension of the basis used.
	Rank int
	// Full reports that the space used is everything (Rank = d): every
	// distance is 0 and the ranking is the tie order, pure chance.
	Full bool
}

// Basis returns an orthonormal basis of rowspace(U) as the rows of an
// r x d matrix (the leading right singular vectors of U), with r the
// number of singular values above tol * sigma_max (tol <= 0: DefaultRankTol),
// capped at maxRank when maxRank > 0. It also returns all singular values.
func Basis(U *mat.Dense, tol float64, maxRank int) (*mat.Dense, []float64, error) {
	if U == nil {
		return nil, nil, errors.New("rowspace: nil payload")
	}
	rows, cols := U.Dims()
	if rows == 0 || cols == 0 {
		return nil, nil, errors.New("rowspace: empty payload")
	}
	if tol <= 0 {
		tol = DefaultRankTol
	}
	var svd mat.SVD
	if !svd.Factorize(U, mat.SVDThin) {
		return nil, nil, errors.New("rowspace: SVD did not converge")
	}
	sv := svd.Values(nil)
	r := 0
	for _, s := range sv {
		if s > tol*sv[0] {
			r++
		}
	}
	if maxRank > 0 && r > maxRank {
		r = maxRank
	}
	if r == 0 {
		return nil, sv, errors.New("rowspace: payload is zero")
	}
	var v mat.Dense
	svd.VTo(&v) // cols x min(rows, cols)
	q := mat.NewDense(r, cols, nil)
	q.Copy(v.Slice(0, cols, 0, r).T())
	return q, sv, nil
}

// SpanMembership ranks every dictionary row (D: V x d, one candidate row
// per token) by its distance to rowspace(U). A dictionary row that is one
// of the payload's secret rows has distance ~0 whatever the mask, as long
// as the shield leaves room (n + k < d).
func SpanMembership(U, D *mat.Dense, opts Options) (*Result, error) {
	if err := checkDict(U, D); err != nil {
		return nil, err
	}
	q, _, err := Basis(U, opts.RankTol, opts.MaxRank)
	if err != nil {
		return nil, err
	}
	dist, err := distances(q, D)
	if err != nil {
		return nil, err
	}
	r, d := q.Dims()
	return &Result{Ranking: rankTies(dist, opts.TieSeed), Dist: dist, Rank: r, Full: r >= d}, nil
}

// distances picks the cheaper side: above half the width it projects on
// the orthogonal complement (d - r rows, and no cancellation in 1 - p^2).
func distances(q, D *mat.Dense) ([]float64, error) {
	r, d := q.Dims()
	if 2*r <= d {
		return Distances(q, D)
	}
	c, err := Complement(q)
	if err != nil {
		return nil, err
	}
	return ComplementDistances(c, D)
}

// Complement returns an orthonormal basis (rows) of the orthogonal
// complement of the row space of the orthonormal basis Q (r x d): the last
// d - r columns of the full Q factor of Q^T. It is nil when r = d.
func Complement(Q *mat.Dense) (*mat.Dense, error) {
	r, d := Q.Dims()
	if r >= d {
		return nil, nil
	}
	var qr mat.QR
	qr.Factorize(Q.T())
	var f mat.Dense
	qr.QTo(&f) // d x d
	c := mat.NewDense(d-r, d, nil)
	c.Copy(f.Slice(0, d, r, d).T())
	return c, nil
}

// ComplementDistances returns, for every row v of D, |C v|/|v| for an
// orthonormal basis C of the complement: the same distance as Distances
// on the space itself. A nil C (the space is everything) gives zeros.
func ComplementDistances(C, D *mat.Dense) ([]float64, error) {
	V, d := D.Dims()
	dist := make([]float64, V)
	if C == nil {
		return dist, nil
	}
	r, dc := C.Dims()
	if d != dc {
		return nil, fmt.Errorf("rowspace: basis has %d columns, dictionary %d", dc, d)
	}
	var p mat.Dense
	for lo := 0; lo < V; lo += blockRows {
		hi := min(lo+blockRows, V)
		p.Reset()
		p.ReuseAs(hi-lo, r)
		p.Mul(D.Slice(lo, hi, 0, d), C.T())
		for i := lo; i < hi; i++ {
			row := D.RawRowView(i)
			nv := dot(row, row)
			if nv == 0 {
				dist[i] = 1
				continue
			}
			pr := p.RawRowView(i - lo)
			dist[i] = math.Sqrt(math.Min(dot(pr, pr)/nv, 1))
		}
	}
	return dist, nil
}

// Distances returns, for every row v of D, the distance of v/|v| to the
// row space of the orthonormal basis Q (r x d): sqrt(1 - |Q v|^2/|v|^2).
// D is projected blockRows rows at a time (D Q^T), so nothing V x V and
// no copy of D is formed. A zero dictionary row gets distance 1.
func Distances(Q, D *mat.Dense) ([]float64, error) {
	r, d := Q.Dims()
	V, dd := D.Dims()
	if d != dd {
		return nil, fmt.Errorf("rowspace: basis has %d columns, dictionary %d", d, dd)
	}
	dist := make([]float64, V)
	var p mat.Dense
	for lo := 0; lo < V; lo += blockRows {
		hi := min(lo+blockRows, V)
		blk := D.Slice(lo, hi, 0, d).(*mat.Dense)
		p.Reset()
		p.ReuseAs(hi-lo, r)
		p.Mul(blk, Q.T())
		for i := lo; i < hi; i++ {
			row := D.RawRowView(i)
			nv := dot(row, row)
			if nv == 0 {
				dist[i] = 1
				continue
			}
			pr := p.RawRowView(i - lo)
			f := 1 - dot(pr, pr)/nv
			dist[i] = math.Sqrt(math.Max(f, 0))
		}
	}
	return dist, nil
}

// Rank returns the indices of score sorted increasingly (ties by index),
// i.e. token ids best first when lower is better.
func Rank(score []float64) []int {
	idx := make([]int, len(score))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return score[idx[a]] < score[idx[b]] })
	return idx
}

// rankTies is Rank with ties in a seeded random order: the stable sort
// of a seeded permutation, computed as one sort by (score, place in the
// permutation); the permutation's inverse is drawn once per seed and size.
func rankTies(score []float64, seed uint64) []int {
	pos := tieOrder(seed, len(score))
	idx := make([]int, len(score))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(score[a], score[b]); c != 0 {
			return c
		}
		return cmp.Compare(pos[a], pos[b])
	})
	return idx
}

// rankHead is the first k of rankTies (all of it when k <= 0 or k >= n),
// by one pass that keeps the k best under the same total order.
func rankHead(score []float64, seed uint64, k int) []int {
	n := len(score)
	if k <= 0 || k >= n {
		return rankTies(score, seed)
	}
	pos := tieOrder(seed, n)
	less := func(a, b int) bool {
		if score[a] != score[b] {
			return score[a] < score[b]
		}
		return pos[a] < pos[b]
	}
	// h is a max-heap of the k best so far (worst on top).
	h := make([]int, 0, k)
	down := func(i int) {
		for {
			l, big := 2*i+1, i
			if l < len(h) && less(h[big], h[l]) {
				big = l
			}
			if r := l + 1; r < len(h) && less(h[big], h[r]) {
				big = r
			}
			if big == i {
				return
			}
			h[i], h[big] = h[big], h[i]
			i = big
		}
	}
	for v := range n {
		switch {
		case len(h) < k:
			h = append(h, v)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !less(h[p], h[i]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
		case less(v, h[0]):
			h[0] = v
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b int) int {
		if less(a, b) {
			return -1
		}
		return 1
	})
	return h
}

var tieOrders sync.Map // [2]uint64{seed, n} -> []int32

// tieOrder is the inverse of NewRand(seed).Perm(n): pos[v] is v's place.
func tieOrder(seed uint64, n int) []int32 {
	key := [2]uint64{seed, uint64(n)}
	if p, ok := tieOrders.Load(key); ok {
		return p.([]int32)
	}
	pos := make([]int32, n)
	for i, v := range NewRand(seed).Perm(n) {
		pos[v] = int32(i)
	}
	tieOrders.Store(key, pos)
	return pos
}

// Position returns the 0-based place of token in ranking (len(ranking)
// if absent).
func Position(ranking []int, token int) int {
	for i, t := range ranking {
		if t == token {
			return i
		}
	}
	return len(ranking)
}

// TopK reports whether token is among the first k of ranking (decode:
// k = 1 and k = 5 are the top-1 and top-5 recovery figures).
func TopK(ranking []int, token, k int) bool {
	return Position(ranking[:min(k, len(ranking))], token) < min(k, len(ranking))
}

// SetRecall is the prefill figure: with the bag of prompt tokens (repeats
// counted once, m distinct), the fraction of them found among the first
// m of ranking. Chance is about m/V.
func SetRecall(ranking []int, bag []int) float64 {
	want := map[int]bool{}
	for _, t := range bag {
		want[t] = true
	}
	m := len(want)
	if m == 0 {
		return 0
	}
	hit := 0
	for _, t := range ranking[:min(m, len(ranking))] {
		if want[t] {
			hit++
		}
	}
	return float64(hit) / float64(m)
}

func checkDict(U, D *mat.Dense) error {
	if U == nil || D == nil {
		return errors.New("rowspace: nil payload or dictionary")
	}
	_, d := U.Dims()
	_, dd := D.Dims()
	if d != dd {
		return fmt.Errorf("rowspace: payload has %d columns, dictionary %d", d, dd)
	}
	return nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, x := range a {
		s += x * b[i]
	}
	return s
}
