package rowspace

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// centredPayload returns A [H - m; (m;) S]: with sendMean the mean row
// travels as one more row (shared decode batches), without it the mean
// stays in the TEE (prefill).
func centredPayload(H *mat.Dense, k int, sendMean bool, seed uint64) *mat.Dense {
	rng := NewRand(seed)
	c, m := Centre(H)
	if sendMean {
		_, d := H.Dims()
		c = Stack(c, mat.NewDense(1, d, m))
	}
	X := Stack(c, GaussianShield(H, k, 4, rng))
	s, _ := X.Dims()
	return Mix(Haar(s, rng), X)
}

func TestCentredRegimes(t *testing.T) {
	rng := NewRand(5)
	// A common component (as real embedding tables have) makes the
	// withheld mean large, so the plain test loses the true rows.
	D := dict(testV, testD, 1.5, rng)
	const n = 16
	ids := tokens(n, testV, rng)
	H := secret(D, ids)

	sent, err := SpanMembership(centredPayload(H, 8, true, 6), D, Options{})
	if err != nil {
		t.Fatal(err)
	}
	U := centredPayload(H, 8, false, 7)
	plain, err := SpanMembership(U, D, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cen, err := SpanMembershipCentred(U, D, CentredOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, rp, rc := SetRecall(sent.Ranking, ids), SetRecall(plain.Ranking, ids), SetRecall(cen.Ranking, ids)
	pt, po := split(plain.Dist, ids)
	ct, co := split(cen.Dist, ids)
	t.Logf("centred prefill n=%d k=8 (common component 1.5): mean sent: plain recall %.3f; mean withheld: plain recall %.3f (worst true dist %.3f, best other %.3f), centred-aware %.3f (worst true %.2g, best other %.3f) (chance %.4f)",
		n, rs, rp, pt, po, rc, ct, co, chance(n, testV))
	if rs != 1 || rc != 1 {
		t.Fatalf("recall mean-sent %.3f, centred-aware %.3f; want 1", rs, rc)
	}
	// The plain test still ranks them first here (as issue 12 saw: 0.28
	// against 0.96), but only the variant brings the true rows to ~0.
	if ct > 1e-3 || ct > 0.01*pt {
		t.Fatalf("centred-aware worst true distance %.3g (plain %.3f), want ~0", ct, pt)
	}

	// Other shapes: few rows under many shield rows (HD3 pads 4 + 8 to
	// 16), and a long prompt.
	for _, tc := range []struct{ n, k int }{{4, 12}, {2, 14}, {80, 16}} {
		ids := tokens(tc.n, testV, rng)
		U := centredPayload(secret(D, ids), tc.k, false, uint64(tc.n))
		p, err := SpanMembership(U, D, Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := SpanMembershipCentred(U, D, CentredOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pt, po := split(p.Dist, ids)
		ct, co := split(c.Dist, ids)
		rp, rc := SetRecall(p.Ranking, ids), SetRecall(c.Ranking, ids)
		t.Logf("  withheld mean n=%d k=%d: plain recall %.3f (%.3f vs %.3f), centred-aware %.3f (%.2g vs %.3f)", tc.n, tc.k, rp, pt, po, rc, ct, co)
		if rc != 1 || ct > 1e-6 {
			t.Fatalf("n=%d k=%d: centred-aware recall %.3f, worst true dist %.3g", tc.n, tc.k, rc, ct)
		}
	}

	// Must fail: the whitened full-span shield leaves no residual at all.
	if _, err := SpanMembershipCentred(whitened(t, H, rng), D, CentredOptions{}); err == nil {
		t.Fatal("centred variant ran on a full-span payload")
	}
}

// split returns the largest distance of a true row and the smallest of
// any other row.
func split(dist []float64, ids []int) (worstTrue, bestOther float64) {
	in := map[int]bool{}
	for _, t := range ids {
		in[t] = true
	}
	bestOther = math.Inf(1)
	for v, x := range dist {
		if in[v] {
			worstTrue = math.Max(worstTrue, x)
		} else {
			bestOther = math.Min(bestOther, x)
		}
	}
	return
}

func TestGramSpike(t *testing.T) {
	// The spike's z against the shield is about |h|^2 / (sigma^2 sqrt(2k))
	// = d / (energy^2 sqrt(2k)): d/64 for the default shield (8 rows at
	// energy 4), so 8 here, 16 at d = 1024.
	rng := NewRand(8)
	const d = 512
	D := dict(testV, d, 0, rng)
	const n = 16
	ids := tokens(n, testV, rng)
	H := secret(D, ids)
	rowNorm := 4 * math.Sqrt(d) // shield rows: energy 4 x mean |h| = 4 sqrt(d)

	// Few shield rows (n + k < d): the spike stands out.
	U := masked(H, 8, 4, rng)
	model, err := GramSpike(U, D, SpikeOptions{ShieldK: 8, ShieldRowNorm: rowNorm})
	if err != nil {
		t.Fatal(err)
	}
	emp, err := GramSpike(U, D, SpikeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Full-span Gaussian shield (k = d rows): the row space is everything,
	// only the Gram can still speak.
	full := masked(H, d, 4, rng)
	fe, err := GramSpike(full, D, SpikeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fspan, err := SpanMembership(full, D, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Must fail: whitened shield, U^T U = I.
	w, err := GramSpike(whitened(t, H, rng), D, SpikeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rm, re, rf, rs, rw := SetRecall(model.Ranking, ids), SetRecall(emp.Ranking, ids), SetRecall(fe.Ranking, ids), SetRecall(fspan.Ranking, ids), SetRecall(w.Ranking, ids)
	t.Logf("gram spike d=%d n=%d: k=8: recall %.3f (model null, min true z %.1f), %.3f (empirical null, min true z %.1f); k=d Gaussian: recall %.3f (min true z %.1f) vs span %.3f; whitened: %.3f (chance %.4f)",
		d, n, rm, minZ(model.Z, ids), re, minZ(emp.Z, ids), rf, minZ(fe.Z, ids), rs, rw, chance(n, testV))
	if rm != 1 || re != 1 {
		t.Fatalf("k=8 recall %.3f / %.3f, want 1", rm, re)
	}
	if rw > 0.1 {
		t.Fatalf("whitened recall %.3f, want chance", rw)
	}
}

func minZ(z []float64, ids []int) float64 {
	m := math.Inf(1)
	for _, t := range ids {
		m = math.Min(m, z[t])
	}
	return m
}

func TestStripShield(t *testing.T) {
	rng := NewRand(9)
	D := dict(testV, testD, 0, rng)
	const n = 8
	ids := tokens(n, testV, rng)
	H := secret(D, ids)
	// Room in the row space: stripping is not needed and must not break it.
	U := masked(H, 8, 4, rng)
	plain, _ := SpanMembership(U, D, Options{})
	strip, err := StripShield(U, D, 8, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// No room: k = d - n/2 high-energy rows fill the space (n + k > d).
	k := testD - n/2
	F := masked(H, k, 16, rng)
	fplain, _ := SpanMembership(F, D, Options{})
	fstrip, err := StripShield(F, D, k-n, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := whitened(t, H, rng)
	wstrip, err := StripShield(w, D, testD-n, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c, e, f := SetRecall(plain.Ranking, ids), SetRecall(strip.Ranking, ids), SetRecall(fplain.Ranking, ids), SetRecall(fstrip.Ranking, ids), SetRecall(wstrip.Ranking, ids)
	t.Logf("shield stripping n=%d d=%d: k=8: plain %.3f, stripped %.3f; k=%d energy 16 (full span): plain %.3f, stripped(top %d) %.3f; whitened stripped %.3f (chance %.4f)",
		n, testD, a, b, k, c, k-n, e, f, chance(n, testV))
	if a != 1 {
		t.Fatalf("plain recall %.3f with room in the space", a)
	}
	// Must succeed: 8 shield rows at 4x the data's norm are the top 8
	// directions, and the data lies in the rest.
	if b != 1 {
		t.Fatalf("stripping the 8 shield directions recovers %.3f, want every row", b)
	}
	// Must fail: under the whitened shield every direction has energy 1.
	if f > 0.25 {
		t.Fatalf("stripping recovered %.3f under a whitened shield", f)
	}
	if _, err := StripShield(U, D, 100, Options{}); err == nil {
		t.Fatal("dropping more than the rank accepted")
	}
}

func TestCrossGramMaskFree(t *testing.T) {
	rng := NewRand(10)
	D := dict(testV, testD, 0, rng)
	ids := tokens(1, testV, rng)
	Ha := secret(D, ids)
	// The second crossing of the pass: another function of the same row
	// (here a fixed random linear map, as a later projection would be).
	Wm := Gaussian(testD, testD, rng)
	var Hb mat.Dense
	Hb.Mul(Ha, Wm)
	Xa := Stack(Ha, GaussianShield(Ha, 15, 4, rng))
	Xb := Stack(&Hb, GaussianShield(&Hb, 15, 4, rng))
	var want mat.Dense
	want.Mul(Xa.T(), Xb)
	for trial := 0; trial < 2; trial++ {
		A := Haar(16, rng)
		m, err := CrossGram(Mix(A, Xa), Mix(A, Xb))
		if err != nil {
			t.Fatal(err)
		}
		m.Sub(m, &want)
		if e := mat.Norm(m, 2) / mat.Norm(&want, 2); e > 1e-12 {
			t.Fatalf("U_a^T U_b differs from X_a^T X_b by %.2g under mask %d", e, trial)
		}
	}
	A := Haar(16, rng)
	M, _ := CrossGram(Mix(A, Xa), Mix(A, Xb))
	full, err := CrossMatch(M, D, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	one, err := CrossMatch(M, D, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Must fail: both crossings whitened.
	wa, wb := whitened(t, Ha, rng), whitened(t, &Hb, rng)
	wm, _ := CrossGram(wa, wb)
	wr, err := CrossMatch(wm, D, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shared mask decode k=15: X_a^T X_b exact under two masks; CrossMatch full rank top-1 %v (dist %.2g), rank-1 position %d (dist %.3f); whitened position %d of %d",
		TopK(full.Ranking, ids[0], 1), full.Dist[ids[0]], Position(one.Ranking, ids[0]), one.Dist[ids[0]], Position(wr.Ranking, ids[0]), testV)
	if !TopK(full.Ranking, ids[0], 1) {
		t.Fatal("full-rank cross match missed the token")
	}
	if TopK(wr.Ranking, ids[0], 5) {
		t.Fatal("whitened cross match found the token")
	}
	if _, err := CrossGram(mat.NewDense(3, 2, nil), mat.NewDense(4, 2, nil)); err == nil {
		t.Fatal("row mismatch accepted")
	}
}

func TestGramError(t *testing.T) {
	rng := NewRand(11)
	// Rows with similarity structure (a common component), as real
	// hidden rows have; random rows' Grams are all ~identity.
	D := dict(testV, testD, 1, rng)
	H := secret(D, tokens(16, testV, rng))
	g0, err := GramError(H, H)
	if err != nil {
		t.Fatal(err)
	}
	pad := Stack(H, mat.NewDense(16, testD, nil))
	gp, _ := GramError(pad, H)
	gm, _ := GramError(masked(H, 8, 4, rng), H)
	gw, _ := GramError(whitened(t, H, rng), H)
	neg := mat.DenseCopyOf(H)
	t.Logf("gram_error: C0 %.3g, C0 padded %.3g, Haar+shield(8, 4) %.3f, whitened %.3f (sqrt(2-2/n) = %.3f)", g0, gp, gm, gw, math.Sqrt(2-2.0/16))
	if g0 > 1e-12 || gp > 1e-12 {
		t.Fatalf("C0 gram_error %.3g / %.3g, want 0", g0, gp)
	}
	if gm < 0.5 || gw < 0.5 || gm > math.Sqrt2 || gw > math.Sqrt2 {
		t.Fatalf("masked gram_error %.3f / %.3f, want in [0.5, sqrt 2]", gm, gw)
	}
	if _, err := GramError(neg.Slice(0, 4, 0, testD).(*mat.Dense), H); err == nil {
		t.Fatal("fewer rows than H accepted")
	}
}
