package rowspace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Random permutations between rounds, the second candidate fix issue 13
// names for a structured mixing: A = S_K H ... S_2 H S_1 H with each S_j
// a secret signed permutation (a permutation of rows, then signs) instead
// of a sign diagonal. The TEE's cost is the same (a gather per round).
// The device's alternating minimisation carries over: with the other
// rounds fixed,
//
//	(S_K H ... S_{j+1} H)^T U = S_j (H S_{j-1} H ... S_1 H X)
//
// and the best signed permutation mapping the rows of the right side
// onto those of the left is a linear assignment on |<w_i, z_k>| (the
// sign of each pair follows): Hungarian, O(s^3) a step.

// SignedPerm is a signed permutation of s rows: row i of S Y is
// Sign[i] * row Perm[i] of Y.
type SignedPerm struct {
	Perm []int
	Sign []float64
}

// RandomSignedPerm draws a uniform signed permutation.
func RandomSignedPerm(s int, rng *rand.Rand) SignedPerm {
	return SignedPerm{Perm: rng.Perm(s), Sign: RandomSigns(s, rng)}
}

// apply returns S Y.
func (p SignedPerm) apply(Y *mat.Dense) *mat.Dense {
	s, d := Y.Dims()
	out := mat.NewDense(s, d, nil)
	for i := range s {
		src, dst := Y.RawRowView(p.Perm[i]), out.RawRowView(i)
		for j, x := range src {
			dst[j] = p.Sign[i] * x
		}
	}
	return out
}

// applyT returns S^T Y.
func (p SignedPerm) applyT(Y *mat.Dense) *mat.Dense {
	s, d := Y.Dims()
	out := mat.NewDense(s, d, nil)
	for i := range s {
		src, dst := Y.RawRowView(i), out.RawRowView(p.Perm[i])
		for j, x := range src {
			dst[j] = p.Sign[i] * x
		}
	}
	return out
}

// HDPApply returns S_K H ... S_1 H X.
func HDPApply(rounds []SignedPerm, X *mat.Dense) (*mat.Dense, error) {
	y := mat.DenseCopyOf(X)
	for _, r := range rounds {
		if err := WHT(y); err != nil {
			return nil, err
		}
		y = r.apply(y)
	}
	return y, nil
}

// HDPUnmask returns A^T U for the fitted rounds.
func HDPUnmask(rounds []SignedPerm, U *mat.Dense) (*mat.Dense, error) {
	if len(rounds) == 0 {
		return nil, errors.New("rowspace: no rounds to unmask with")
	}
	y := mat.DenseCopyOf(U)
	for j := len(rounds) - 1; j >= 0; j-- {
		y = rounds[j].applyT(y)
		if err := WHT(y); err != nil {
			return nil, err
		}
	}
	return y, nil
}

// HDPFitResult is the best fit found.
type HDPFitResult struct {
	Rounds   []SignedPerm
	Residual float64 // |U - A X|_F / |U|_F
}

// HDPFit fits K rounds of signed permutations by alternating
// minimisation from random starts, as HDKFit fits sign diagonals.
func HDPFit(U, X *mat.Dense, K int, opts HD3Options) (*HDPFitResult, error) {
	if U == nil || X == nil {
		return nil, errors.New("rowspace: nil input")
	}
	s, d := U.Dims()
	if sx, dx := X.Dims(); s != sx || d != dx {
		return nil, fmt.Errorf("rowspace: U is %dx%d, X is %dx%d", s, d, sx, dx)
	}
	if K < 1 || s > 1024 || s&(s-1) != 0 {
		return nil, fmt.Errorf("rowspace: HDPFit needs K >= 1 and a power-of-two size <= 1024 (an assignment is O(s^3)), got K = %d, s = %d", K, s)
	}
	opts = opts.withDefaults()
	rng := NewRand(opts.Seed)
	nu := mat.Norm(U, 2)
	best := &HDPFitResult{Residual: math.Inf(1)}
	for start := 0; start < opts.Restarts; start++ {
		rounds := make([]SignedPerm, K)
		for j := range rounds {
			rounds[j] = RandomSignedPerm(s, rng)
		}
		prev := math.Inf(1)
		for it := 0; it < opts.Iters; it++ {
			for j := K - 1; j >= 0; j-- {
				w := mat.DenseCopyOf(U)
				for l := K - 1; l > j; l-- {
					w = rounds[l].applyT(w)
					WHT(w)
				}
				z := mat.DenseCopyOf(X)
				WHT(z)
				for l := 0; l < j; l++ {
					z = rounds[l].apply(z)
					WHT(z)
				}
				rounds[j] = bestSignedPerm(w, z)
			}
			fit, _ := HDPApply(rounds, X)
			fit.Sub(U, fit)
			res := mat.Norm(fit, 2) / nu
			if res < best.Residual {
				cp := make([]SignedPerm, K)
				for j, r := range rounds {
					cp[j] = SignedPerm{Perm: append([]int(nil), r.Perm...), Sign: clone(r.Sign)}
				}
				best = &HDPFitResult{Rounds: cp, Residual: res}
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

// bestSignedPerm is the signed permutation S minimising |W - S Z|_F:
// the assignment of rows of Z to rows of W maximising the sum of
// |<w_i, z_k>|, each sign that of its inner product.
func bestSignedPerm(W, Z *mat.Dense) SignedPerm {
	s, _ := W.Dims()
	var g mat.Dense
	g.Mul(W, Z.T())
	cost := make([][]float64, s)
	for i := range s {
		cost[i] = make([]float64, s)
		for k := range s {
			cost[i][k] = -math.Abs(g.At(i, k))
		}
	}
	perm := Hungarian(cost)
	p := SignedPerm{Perm: perm, Sign: make([]float64, s)}
	for i, k := range perm {
		p.Sign[i] = 1
		if g.At(i, k) < 0 {
			p.Sign[i] = -1
		}
	}
	return p
}

// Hungarian solves the rectangular assignment problem (minimum total
// cost; cost is r x c with r <= c, finite, not ragged: callers check)
// by Kuhn-Munkres with potentials, O(r^2 c): out[i] is the distinct
// column assigned to row i. bss.Hungarian is this with the checks.
func Hungarian(cost [][]float64) []int {
	r := len(cost)
	if r == 0 {
		return nil
	}
	c := len(cost[0])
	inf := math.Inf(1)
	u, v := make([]float64, r+1), make([]float64, c+1)
	p, way := make([]int, c+1), make([]int, c+1) // p[j]: row (1-based) assigned to column j
	minv, used := make([]float64, c+1), make([]bool, c+1)
	for i := 1; i <= r; i++ {
		p[0] = i
		j0 := 0
		for j := range minv {
			minv[j], used[j] = inf, false
		}
		for {
			used[j0] = true
			i0, delta, j1 := p[j0], inf, 0
			for j := 1; j <= c; j++ {
				if used[j] {
					continue
				}
				if cur := cost[i0-1][j-1] - u[i0] - v[j]; cur < minv[j] {
					minv[j], way[j] = cur, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= c; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
		}
	}
	out := make([]int, r)
	for j := 1; j <= c; j++ {
		if p[j] != 0 {
			out[p[j]-1] = j - 1
		}
	}
	return out
}
