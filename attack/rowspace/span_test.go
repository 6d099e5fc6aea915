package rowspace

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

const (
	testV = 4096
	testD = 128
)

func TestWhitenedStackIsWhite(t *testing.T) {
	rng := NewRand(1)
	D := dict(testV, testD, 0, rng)
	X, err := WhitenedStack(secret(D, tokens(12, testV, rng)))
	if err != nil {
		t.Fatal(err)
	}
	var g mat.Dense
	g.Mul(X.T(), X)
	for i := 0; i < testD; i++ {
		g.Set(i, i, g.At(i, i)-1)
	}
	if e := mat.Norm(&g, 2); e > 1e-9 {
		t.Fatalf("|X^T X - I|_F = %.3g", e)
	}
}

// Decode: one data row under a Haar mask and the default shield (HD3 pads
// 1 + 8 to 16 rows, so k = 15): the token is the unique row in the space.
func TestSpanDecodeRecovers(t *testing.T) {
	rng := NewRand(2)
	D := dict(testV, testD, 0, rng)
	top1, top5 := 0, 0
	const steps = 20
	var worstTrue, bestOther float64 = 0, 1
	for step := 0; step < steps; step++ {
		tok := tokens(1, testV, rng)
		U := masked(secret(D, tok), 15, 4, rng)
		res, err := SpanMembership(U, D, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if TopK(res.Ranking, tok[0], 1) {
			top1++
		}
		if TopK(res.Ranking, tok[0], 5) {
			top5++
		}
		worstTrue = max(worstTrue, res.Dist[tok[0]])
		bestOther = min(bestOther, res.Dist[res.Ranking[1]])
	}
	t.Logf("decode n=1 k=15 d=%d V=%d: top-1 %d/%d, top-5 %d/%d, worst true dist %.2g, best runner-up %.3f (chance top-1 %.2g)",
		testD, testV, top1, steps, top5, steps, worstTrue, bestOther, chance(1, testV))
	if top1 != steps {
		t.Fatalf("top-1 %d/%d, want all", top1, steps)
	}
}

// Prefill without centring: 24 rows + 8 shield rows in d = 128.
func TestSpanPrefillRecovers(t *testing.T) {
	rng := NewRand(3)
	D := dict(testV, testD, 0, rng)
	ids := tokens(24, testV, rng)
	plain, err := SpanMembership(secret(D, ids), D, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := SpanMembership(masked(secret(D, ids), 8, 4, rng), D, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rp, rm := SetRecall(plain.Ranking, ids), SetRecall(res.Ranking, ids)
	t.Logf("prefill n=24: recall U=H %.3f, U=A[H;S] k=8 %.3f (rank %d; chance %.4f); 24th dist %.2g, 25th %.3f",
		rp, rm, res.Rank, chance(24, testV), res.Dist[res.Ranking[23]], res.Dist[res.Ranking[24]])
	if rp != 1 || rm != 1 {
		t.Fatalf("recall %.3f / %.3f, want 1", rp, rm)
	}
}

// Must fail: full-span whitened shield and Haar mixing. Every row lies in
// the space; the ranking is noise.
func TestSpanWhitenedFails(t *testing.T) {
	rng := NewRand(4)
	D := dict(testV, testD, 0, rng)
	const trials, n = 4, 24
	sum, top5 := 0.0, 0
	for i := 0; i < trials; i++ {
		ids := tokens(n, testV, rng)
		res, err := SpanMembership(whitened(t, secret(D, ids), rng), D, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Full {
			t.Fatalf("whitened payload of rank %d not reported full", res.Rank)
		}
		sum += SetRecall(res.Ranking, ids)
		if TopK(res.Ranking, ids[0], 5) {
			top5++
		}
	}
	mean := sum / trials
	t.Logf("whitened full-span shield, Haar s=%d: mean set recall %.4f (chance %.4f), top-5 of first token %d/%d",
		n+testD, mean, chance(n, testV), top5, trials)
	if mean > 0.05 {
		t.Fatalf("recall %.3f under a whitened shield, want chance", mean)
	}
}

func TestSpanErrors(t *testing.T) {
	if _, err := SpanMembership(mat.NewDense(2, 3, nil), mat.NewDense(4, 5, nil), Options{}); err == nil {
		t.Fatal("width mismatch accepted")
	}
	if _, err := SpanMembership(mat.NewDense(2, 3, nil), mat.NewDense(4, 3, nil), Options{}); err == nil {
		t.Fatal("zero payload accepted")
	}
}

func TestMetrics(t *testing.T) {
	r := []int{5, 3, 9, 1}
	if !TopK(r, 3, 2) || TopK(r, 9, 2) || !TopK(r, 1, 10) {
		t.Fatal("TopK")
	}
	if got := SetRecall(r, []int{3, 9, 3}); got != 0.5 {
		t.Fatalf("SetRecall = %v", got)
	}
}

// Both sides of distances agree, and the complement path is exact for
// rows in the space.
func TestComplementAgrees(t *testing.T) {
	rng := NewRand(14)
	D := dict(512, 64, 0, rng)
	U := masked(secret(D, tokens(30, 512, rng)), 10, 4, rng) // rank 40 > 32
	q, _, err := Basis(U, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Distances(q, D)
	c, _ := Complement(q)
	b, _ := ComplementDistances(c, D)
	for i := range a {
		if d := a[i] - b[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("row %d: %.9f vs %.9f", i, a[i], b[i])
		}
	}
}

// Float payloads are rounded (f32) or quantised (q8_0): relative noise
// 1e-3 on U lifts the true distance off zero but keeps it first.
func TestSpanDecodeNoisy(t *testing.T) {
	rng := NewRand(15)
	D := dict(testV, testD, 0, rng)
	hits := 0
	worst := 0.0
	for step := 0; step < 10; step++ {
		tok := tokens(1, testV, rng)
		U := masked(secret(D, tok), 15, 4, rng)
		scale := 1e-3 * mat.Norm(U, 2) / math.Sqrt(float64(16*testD))
		U.Apply(func(_, _ int, v float64) float64 { return v + scale*rng.NormFloat64() }, U)
		res, err := SpanMembership(U, D, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Ranking[0] == tok[0] {
			hits++
		}
		worst = max(worst, res.Dist[tok[0]])
	}
	t.Logf("decode with 1e-3 relative noise: top-1 %d/10, worst true dist %.3f", hits, worst)
	if hits != 10 {
		t.Fatalf("top-1 %d/10 under noise", hits)
	}
}
