package rowspace

import (
	"errors"

	"gonum.org/v1/gonum/mat"
)

// Centring. The protocol (passes/protect.go) sends multi-row crossings as
// their rows minus the mean row m:
//
//   - decode batches under the shared topology also send m as one more
//     row: span{h_i - m, m} = span{h_i}, so SpanMembership applies as is;
//   - prefill keeps m in the TEE (mean_rows, sub_row, and the mean's
//     product added back there): the device sees span{h_i - m} + span(S),
//     which misses the true rows by exactly one direction. A true row
//     v = h_i/|h_i| then has residual (v minus its projection on span(U))
//     equal to res(m)/|h_i|: every true row's residual is collinear with
//     the one unknown residual of m, while absent rows' residuals point
//     anywhere. SpanMembershipCentred estimates that common direction
//     from the best candidates and adds it to the basis.

// CentredOptions tunes SpanMembershipCentred.
type CentredOptions struct {
	Options
	// Candidates is how many best-ranked rows feed the estimate of the
	// mean's residual direction (default: half the rank of U, at least 4:
	// with n data rows and k shield rows the rank is n + k - 1, so the
	// default keeps the estimate mostly true rows when n >= k).
	Candidates int
	// Rounds of re-estimation (default 3).
	Rounds int
}

// SpanMembershipCentred is the span test for payloads whose mean row was
// subtracted and withheld. Each round it takes the Candidates rows nearest
// to the current space, takes the top right singular vector of their unit
// residuals (the mean's residual direction when true rows dominate the
// candidates), adds it to the basis and re-ranks the whole dictionary;
// from the second round on the candidates are cut at the largest jump in
// distance among them.
// Result.Rank counts the added direction.
func SpanMembershipCentred(U, D *mat.Dense, opts CentredOptions) (*Result, error) {
	if err := checkDict(U, D); err != nil {
		return nil, err
	}
	q, _, err := Basis(U, opts.RankTol, opts.MaxRank)
	if err != nil {
		return nil, err
	}
	r, d := q.Dims()
	if r >= d {
		return nil, errors.New("rowspace: payload spans every direction; no residual to estimate")
	}
	dist, err := distances(q, D)
	if err != nil {
		return nil, err
	}
	m := opts.Candidates
	if m <= 0 {
		m = max(r/2, 4)
	}
	V, _ := D.Dims()
	m = min(m, V)
	rounds := opts.Rounds
	if rounds <= 0 {
		rounds = 3
	}
	aug := mat.NewDense(r+1, d, nil)
	aug.Slice(0, r, 0, d).(*mat.Dense).Copy(q)
	for round := 0; round < rounds; round++ {
		rank := rankTies(dist, opts.TieSeed)
		use := m
		if round > 0 {
			// Once the direction is roughly right the true rows sit
			// apart from the rest: cut the candidates at the largest
			// jump in distance, so junk does not bias the estimate.
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
		aug.SetRow(r, u)
		if dist, err = distances(aug, D); err != nil {
			return nil, err
		}
	}
	return &Result{Ranking: rankTies(dist, opts.TieSeed), Dist: dist, Rank: r + 1, Full: r+1 >= d}, nil
}

// Centre returns the rows of H minus their mean, and the mean row: what
// a centred crossing carries before masking (the mean is either sent as
// one more row or kept in the TEE).
func Centre(H *mat.Dense) (centred *mat.Dense, mean []float64) {
	n, d := H.Dims()
	mean = make([]float64, d)
	for i := 0; i < n; i++ {
		for j, x := range H.RawRowView(i) {
			mean[j] += x / float64(n)
		}
	}
	c := mat.DenseCopyOf(H)
	for i := 0; i < n; i++ {
		row := c.RawRowView(i)
		for j := range row {
			row[j] -= mean[j]
		}
	}
	return c, mean
}
