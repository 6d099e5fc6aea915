package rowspace

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// Shared-mask correlation. Two payloads of one pass masked by one A
// (per-forward cadence), U_a = A X_a and U_b = A X_b, give
// U_a^T U_b = X_a^T A^T A X_b = X_a^T X_b: a d_a x d_b matrix the mask
// has dropped out of entirely. It is the attack input.

// CrossGram returns U_a^T U_b (an error unless both have the same rows).
func CrossGram(Ua, Ub *mat.Dense) (*mat.Dense, error) {
	if Ua == nil || Ub == nil {
		return nil, fmt.Errorf("rowspace: nil payload")
	}
	ra, _ := Ua.Dims()
	rb, _ := Ub.Dims()
	if ra != rb {
		return nil, fmt.Errorf("rowspace: payloads have %d and %d rows; a shared mask needs equal rows", ra, rb)
	}
	var m mat.Dense
	m.Mul(Ua.T(), Ub)
	return &m, nil
}

// CrossMatch is the dictionary match on the cross product M = X_a^T X_b:
// its column space is spanned by the rows of X_a weighted by their
// partners in X_b, sum_i x_a,i^T x_b,i, a sum of rank-one terms. It ranks
// the dictionary by distance to the span of M's top `rank` left singular
// vectors (rank <= 0: every direction above the tolerance). With rank =
// 1 at decode it asks whether the single data row's rank-one term
// dominates; with the full rank it is a span test on a subspace of
// rowspace(U_a), so it can never beat SpanMembership on U_a alone unless
// the two crossings' shields are correlated. Honest by construction.
func CrossMatch(M, D *mat.Dense, rank int, opts Options) (*Result, error) {
	if M == nil || D == nil {
		return nil, fmt.Errorf("rowspace: nil input")
	}
	var mt mat.Dense
	mt.CloneFrom(M.T())
	o := opts
	if rank > 0 {
		o.MaxRank = rank
	}
	return SpanMembership(&mt, D, o)
}
