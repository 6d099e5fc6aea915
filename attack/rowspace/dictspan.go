package rowspace

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	prepared "gelo/attack/dict"
)

// Dictionary-prepared variants. At the full vocabulary the projection of
// D on a payload's basis is the whole cost of the span family, so these
// compute it once per payload in float32 (dict.Dict.Products) and re-score
// the `refine` best candidates in float64: the rankings' heads, which are
// all any figure reads, are those of the float64 functions above. They
// fall back to those functions where the complement is the cheaper side
// (2r > d).

// refine is how many best candidates are re-scored exactly.
const refine = 512

// DictSpan is one payload's basis and the dictionary's distances to it:
// the plain span test's result, and the start of the centring-aware test
// (Centred), so D is projected on the basis only once.
type DictSpan struct {
	Q      *mat.Dense
	Result *Result
	ss     []float64 // |Q v|^2 / |v|^2 per dictionary row (nil: fallback)
	p      []float32 // Q D^T, r x V (nil: fallback)
	u      *mat.Dense
	opts   Options
}

// SpanDict is SpanMembership over a prepared dictionary.
func SpanDict(U *mat.Dense, T *prepared.Dict, opts Options) (*DictSpan, error) {
	out, err := SpanDictBatch([]*mat.Dense{U}, T, opts)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// SpanDictBatch is SpanDict on several payloads, their bases projected
// in one product: a decode payload's basis has a few rows, and a product
// per payload is bound by streaming the whole dictionary for them.
func SpanDictBatch(Us []*mat.Dense, T *prepared.Dict, opts Options) ([]*DictSpan, error) {
	out := make([]*DictSpan, len(Us))
	var stack []*DictSpan
	var owner, local []int
	for i, U := range Us {
		if err := checkDict(U, T.D); err != nil {
			return nil, err
		}
		q, _, err := Basis(U, opts.RankTol, opts.MaxRank)
		if err != nil {
			return nil, err
		}
		r, d := q.Dims()
		s := &DictSpan{Q: q, u: U, opts: opts}
		out[i] = s
		if 2*r > d {
			dist, err := distances(q, T.D)
			if err != nil {
				return nil, err
			}
			s.Result = &Result{Ranking: rankHead(dist, opts.TieSeed, opts.Head), Dist: dist, Rank: r, Full: r >= d}
			continue
		}
		s.ss = make([]float64, T.V)
		s.p = make([]float32, r*T.V)
		for j := range r {
			owner, local = append(owner, len(stack)), append(local, j)
		}
		stack = append(stack, s)
	}
	if len(stack) == 0 {
		return out, nil
	}
	Q := mat.NewDense(len(owner), T.W, nil)
	for i := range owner {
		Q.SetRow(i, stack[owner[i]].Q.RawRowView(local[i]))
	}
	err := T.Products(Q, func(lo, hi int, y []float32) {
		for i := lo; i < hi; i++ {
			s, j := stack[owner[i]], local[i]
			row := y[(i-lo)*T.V : (i-lo+1)*T.V]
			copy(s.p[j*T.V:(j+1)*T.V], row)
			for v, p := range row {
				s.ss[v] += float64(p) * float64(p)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for _, s := range stack {
		q := s.Q
		r, d := q.Dims()
		dist := make([]float64, T.V)
		for v := range dist {
			dist[v] = fromProj(s.ss[v], T.Norm2(v))
		}
		// Re-score the best exactly (and keep the exact |Qv|^2 for Centred).
		pr := make([]float64, r)
		for _, v := range smallest(dist, refine) {
			x := T.D.RawRowView(v)
			for j := range pr {
				pr[j] = dot(q.RawRowView(j), x)
			}
			s.ss[v] = dot(pr, pr)
			dist[v] = fromProj(s.ss[v], T.Norm2(v))
		}
		s.Result = &Result{Ranking: rankHead(dist, opts.TieSeed, opts.Head), Dist: dist, Rank: r, Full: r >= d}
	}
	return out, nil
}

// Products returns U D^T (s x V, float32) from the projection, as the
// payload's rows in the basis (U Q^T) times Q D^T, or by a direct product
// where there is no projection. The directions below the rank tolerance
// are left out (relative size < RankTol): callers re-score their best
// candidates exactly (invert.NNOf, GramSpikeOf).
func (s *DictSpan) Products(T *prepared.Dict) ([]float32, error) {
	if s.p == nil {
		rows, _ := s.u.Dims()
		y := make([]float32, rows*T.V)
		err := T.Products(s.u, func(lo, hi int, c []float32) { copy(y[lo*T.V:hi*T.V], c) })
		return y, err
	}
	var c mat.Dense
	c.Mul(s.u, s.Q.T())
	return T.Combine(&c, s.p)
}

// fromProj is the distance of a unit row to a space it has squared
// projection ss/nv on (the formula of Distances).
func fromProj(ss, nv float64) float64 {
	if nv == 0 {
		return 1
	}
	return math.Sqrt(math.Max(1-ss/nv, 0))
}

// smallest returns the indices of the k smallest values (all of them at
// or below the k-th, so ties at the cut are all kept).
func smallest(x []float64, k int) []int {
	if k >= len(x) {
		k = len(x)
	}
	if k == 0 {
		return nil
	}
	c := slices.Clone(x)
	slices.Sort(c)
	thr := c[k-1]
	var out []int
	for i, v := range x {
		if v <= thr {
			out = append(out, i)
		}
	}
	return out
}

// Centred is SpanMembershipCentred on the same payload, reusing the
// projection: each round's added direction u is orthogonal to Q, so the
// augmented distance needs only D u (one matrix-vector product), and the
// best candidates are re-scored exactly against [Q; u].
func (s *DictSpan) Centred(T *prepared.Dict, opts CentredOptions) (*Result, error) {
	r, d := s.Q.Dims()
	if s.ss == nil || 2*(r+1) > d {
		return SpanMembershipCentred(s.u, T.D, opts)
	}
	q, D := s.Q, T.D
	dist := slices.Clone(s.Result.Dist)
	m := opts.Candidates
	if m <= 0 {
		m = max(r/2, 4)
	}
	m = min(m, T.V)
	rounds := opts.Rounds
	if rounds <= 0 {
		rounds = 3
	}
	um := mat.NewDense(1, d, nil)
	for round := 0; round < rounds; round++ {
		rank := rankHead(dist, opts.TieSeed, m)
		use := m
		if round > 0 {
			best := 0.0
			for i := 1; i < m; i++ {
				if g := dist[rank[i]] - dist[rank[i-1]]; g > best {
					best, use = g, i
				}
			}
		}
		u, err := meanDirection(q, D, rank[:use])
		if err != nil {
			return nil, err
		}
		um.SetRow(0, u)
		err = T.Products(um, func(_, _ int, y []float32) {
			for v, p := range y {
				dist[v] = fromProj(s.ss[v]+float64(p)*float64(p), T.Norm2(v))
			}
		})
		if err != nil {
			return nil, err
		}
		for _, v := range smallest(dist, refine) {
			x := D.RawRowView(v)
			pr := make([]float64, r)
			for j := range pr {
				pr[j] = dot(q.RawRowView(j), x)
			}
			c := dot(u, x)
			dist[v] = fromProj(dot(pr, pr)+c*c, T.Norm2(v))
		}
	}
	return &Result{Ranking: rankHead(dist, opts.TieSeed, opts.Head), Dist: dist, Rank: r + 1, Full: r+1 >= d}, nil
}

// meanDirection is one round's estimate of the withheld mean's residual
// direction: the top right singular vector of the candidates' unit
// residuals off Q, re-orthogonalised against Q.
func meanDirection(q, D *mat.Dense, cands []int) ([]float64, error) {
	r, d := q.Dims()
	res := mat.NewDense(len(cands), d, nil)
	for i, t := range cands {
		v := D.RawRowView(t)
		row := res.RawRowView(i)
		copy(row, v)
		for j := 0; j < r; j++ {
			b := q.RawRowView(j)
			c := dot(b, v)
			for l := range row {
				row[l] -= c * b[l]
			}
		}
		nr := math.Sqrt(dot(row, row))
		if nr > 0 {
			for l := range row {
				row[l] /= nr
			}
		}
	}
	var svd mat.SVD
	if !svd.Factorize(res, mat.SVDThinV) {
		return nil, errors.New("rowspace: SVD did not converge")
	}
	var v mat.Dense
	svd.VTo(&v)
	u := mat.Col(nil, 0, &v)
	for j := 0; j < r; j++ {
		b := q.RawRowView(j)
		c := dot(b, u)
		for l := range u {
			u[l] -= c * b[l]
		}
	}
	nu := math.Sqrt(dot(u, u))
	for l := range u {
		u[l] /= nu
	}
	return u, nil
}

// GramSpikeDict is GramSpike over a prepared dictionary: |U v|^2 from one
// float32 product, the largest re-scored exactly before the null is fitted.
func GramSpikeDict(U *mat.Dense, T *prepared.Dict, opts SpikeOptions) (*SpikeResult, error) {
	if err := checkDict(U, T.D); err != nil {
		return nil, err
	}
	rows, _ := U.Dims()
	y := make([]float32, rows*T.V)
	if err := T.Products(U, func(lo, hi int, c []float32) { copy(y[lo*T.V:hi*T.V], c) }); err != nil {
		return nil, err
	}
	return GramSpikeOf(U, T, y, opts)
}

// GramSpikeOf is GramSpikeDict from products y = U D^T already at hand
// (DictSpan.Products), s x V row-major float32.
func GramSpikeOf(U *mat.Dense, T *prepared.Dict, y []float32, opts SpikeOptions) (*SpikeResult, error) {
	if err := checkDict(U, T.D); err != nil {
		return nil, err
	}
	rows, d := U.Dims()
	if len(y) != rows*T.V {
		return nil, errors.New("rowspace: products do not match the payload")
	}
	t := make([]float64, T.V)
	for i := 0; i < rows; i++ {
		for v, p := range y[i*T.V : (i+1)*T.V] {
			t[v] += float64(p) * float64(p)
		}
	}
	neg := make([]float64, T.V)
	for v := range t {
		if nv := T.Norm2(v); nv > 0 {
			t[v] /= nv
		} else {
			t[v] = 0
		}
		neg[v] = -t[v]
	}
	s, _ := U.Dims()
	for _, v := range smallest(neg, refine) {
		nv := T.Norm2(v)
		if nv == 0 {
			continue
		}
		x := T.D.RawRowView(v)
		acc := 0.0
		for i := 0; i < s; i++ {
			c := dot(U.RawRowView(i), x)
			acc += c * c
		}
		t[v] = acc / nv
	}
	return spikeOf(t, d, opts), nil
}

// Strip is StripShield on the same payload, reusing the projection: the
// basis rows are the right singular vectors by decreasing singular value,
// so dropping the top `drop` directions drops the first `drop` rows of
// Q D^T from each row's squared projection. The best candidates are
// re-scored exactly against the kept rows.
func (s *DictSpan) Strip(T *prepared.Dict, drop int) (*Result, error) {
	r, d := s.Q.Dims()
	if drop < 0 || drop >= r {
		return nil, fmt.Errorf("rowspace: strip: cannot drop %d of %d directions", drop, r)
	}
	rest := s.Q.Slice(drop, r, 0, d).(*mat.Dense)
	if s.p == nil {
		dist, err := distances(rest, T.D)
		if err != nil {
			return nil, err
		}
		return &Result{Ranking: rankHead(dist, s.opts.TieSeed, s.opts.Head), Dist: dist, Rank: r - drop, Full: r-drop >= d}, nil
	}
	dist := make([]float64, T.V)
	ss := make([]float64, T.V)
	for j := drop; j < r; j++ {
		for v, p := range s.p[j*T.V : (j+1)*T.V] {
			ss[v] += float64(p) * float64(p)
		}
	}
	for v := range dist {
		dist[v] = fromProj(ss[v], T.Norm2(v))
	}
	pr := make([]float64, r-drop)
	for _, v := range smallest(dist, refine) {
		x := T.D.RawRowView(v)
		for j := range pr {
			pr[j] = dot(rest.RawRowView(j), x)
		}
		dist[v] = fromProj(dot(pr, pr), T.Norm2(v))
	}
	return &Result{Ranking: rankHead(dist, s.opts.TieSeed, s.opts.Head), Dist: dist, Rank: r - drop, Full: r-drop >= d}, nil
}
