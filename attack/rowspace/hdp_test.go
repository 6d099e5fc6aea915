package rowspace

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestAssign: the Hungarian method against brute force on small random
// cost matrices.
func TestAssign(t *testing.T) {
	rng := NewRand(5)
	for trial := range 50 {
		n := 1 + trial%6
		cost := make([][]float64, n)
		for i := range cost {
			cost[i] = make([]float64, n)
			for j := range cost[i] {
				cost[i][j] = rng.NormFloat64()
			}
		}
		total := func(p []int) float64 {
			var s float64
			for i, j := range p {
				s += cost[i][j]
			}
			return s
		}
		best := math.Inf(1)
		var permute func(p []int, k int)
		permute = func(p []int, k int) {
			if k == len(p) {
				best = math.Min(best, total(p))
				return
			}
			for i := k; i < len(p); i++ {
				p[k], p[i] = p[i], p[k]
				permute(p, k+1)
				p[k], p[i] = p[i], p[k]
			}
		}
		p := make([]int, n)
		for i := range p {
			p[i] = i
		}
		permute(p, 0)
		got := Hungarian(cost)
		s := slices.Clone(got)
		slices.Sort(s)
		for i := range s {
			if s[i] != i {
				t.Fatalf("n=%d: %v is not a permutation", n, got)
			}
		}
		if math.Abs(total(got)-best) > 1e-9 {
			t.Errorf("n=%d: cost %g, brute force %g", n, total(got), best)
		}
	}
}

// TestHDPRounds measures the structure attack on signed permutations
// between rounds, at the harness's width (s = 128, d = 64). One round
// (S_1 H: a signed permutation after one transform) is a single
// assignment, so the fit must find it from any start: the attack works.
// Three rounds are measured, not asserted: the share of random starts
// from which the data-free fit (and the fit under the true stack)
// finds the exact mask.
func TestHDPRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	rng := NewRand(71)
	const V, d, s = 512, 64, 128
	D := dict(V, d, 0, rng)
	for _, tc := range []struct{ K, n, starts int }{{1, 4, 2}, {2, 4, 8}, {3, 4, 8}, {3, 1, 8}} {
		X0, err := WhitenedStack(secret(D, tokens(tc.n, V, rng)))
		if err != nil {
			t.Fatal(err)
		}
		X := padRows(X0, s)
		g, err := WhitenGuess(tc.n, d, s)
		if err != nil {
			t.Fatal(err)
		}
		rounds := make([]SignedPerm, tc.K)
		for j := range rounds {
			rounds[j] = RandomSignedPerm(s, rng)
		}
		U, err := HDPApply(rounds, X)
		if err != nil {
			t.Fatal(err)
		}
		found := func(guess *mat.Dense) (int, float64) {
			hits, bestRes := 0, math.Inf(1)
			for st := range tc.starts {
				f, err := HDPFit(U, guess, tc.K, HD3Options{Restarts: 1, Seed: uint64(100 + st)})
				if err != nil {
					t.Fatal(err)
				}
				est, err := HDPUnmask(f.Rounds, U)
				if err != nil {
					t.Fatal(err)
				}
				est.Sub(est, X)
				if mat.Norm(est, 2)/mat.Norm(X, 2) < 1e-6 {
					hits++
				}
				bestRes = math.Min(bestRes, f.Residual)
			}
			return hits, bestRes
		}
		blind, blindRes := found(g)
		known, knownRes := found(X)
		t.Logf("K=%d n=%d: mask found from %d of %d starts with no hypothesis (best residual %.3g), %d of %d under the true stack (%.3g)",
			tc.K, tc.n, blind, tc.starts, blindRes, known, tc.starts, knownRes)
		if tc.K == 1 && (known != tc.starts || blind == 0) {
			t.Errorf("one round: found %d/%d under the true stack, %d/%d blind; a single assignment must find it", known, tc.starts, blind, tc.starts)
		}
	}
}
