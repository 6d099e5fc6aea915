package rowspace

import (
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
