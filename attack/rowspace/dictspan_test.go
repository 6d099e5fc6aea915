package rowspace

import (
	"slices"
	"sort"
	"testing"

	"gonum.org/v1/gonum/mat"

	prepared "gelo/attack/dict"
)

// The prepared-dictionary variants rank like the float64 functions: the
// heads of the rankings (the bag-sized sets every figure reads) agree, on
// a shielded masked payload, a centred one and the spike. Order inside
// the head is roundoff among rows at distance ~1e-8 in both.
func TestDictVariantsMatch(t *testing.T) {
	rng := NewRand(21)
	D := dict(testV, testD, 1.5, rng)
	T, err := prepared.New(D, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer T.Close()
	const n = 16
	ids := tokens(n, testV, rng)
	H := secret(D, ids)
	head := n
	for name, U := range map[string]*mat.Dense{"masked": masked(H, 8, 4, rng), "centred": centredPayload(H, 8, false, 3)} {
		want, err := SpanMembership(U, D, Options{TieSeed: 1})
		if err != nil {
			t.Fatal(err)
		}
		got, err := SpanDict(U, T, Options{TieSeed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !sameSet(want.Ranking[:head], got.Result.Ranking[:head]) {
			t.Errorf("%s: span rankings differ:\n%v\n%v", name, want.Ranking[:head], got.Result.Ranking[:head])
		}
		co := CentredOptions{Options: Options{TieSeed: 1}, Candidates: n}
		wc, err := SpanMembershipCentred(U, D, co)
		if err != nil {
			t.Fatal(err)
		}
		gc, err := got.Centred(T, co)
		if err != nil {
			t.Fatal(err)
		}
		if !sameSet(wc.Ranking[:head], gc.Ranking[:head]) {
			t.Errorf("%s: centred rankings differ:\n%v\n%v", name, wc.Ranking[:head], gc.Ranking[:head])
		}
		for _, v := range ids {
			if d := want.Dist[v] - got.Result.Dist[v]; d > 1e-6 || d < -1e-6 {
				t.Errorf("%s: distance of %d: %g vs %g", name, v, want.Dist[v], got.Result.Dist[v])
			}
		}
		ws, err := GramSpike(U, D, SpikeOptions{TieSeed: 1})
		if err != nil {
			t.Fatal(err)
		}
		gs, err := GramSpikeDict(U, T, SpikeOptions{TieSeed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !sameSet(ws.Ranking[:head], gs.Ranking[:head]) {
			t.Errorf("%s: spike rankings differ:\n%v\n%v", name, ws.Ranking[:head], gs.Ranking[:head])
		}
	}
}

func sameSet(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// rankTies is the stable sort of the seeded permutation it replaced.
func TestRankTiesIsStableSortOfPerm(t *testing.T) {
	rng := NewRand(3)
	score := make([]float64, 5000)
	for i := range score {
		score[i] = float64(rng.IntN(40)) // many ties
	}
	want := NewRand(7).Perm(len(score))
	sort.SliceStable(want, func(a, b int) bool { return score[want[a]] < score[want[b]] })
	if got := rankTies(score, 7); !slices.Equal(got, want) {
		t.Fatal("rankTies differs from the stable sort of NewRand(seed).Perm")
	}
}

// rankHead is the head of rankTies, ties included.
func TestRankHeadIsTheHead(t *testing.T) {
	rng := NewRand(4)
	score := make([]float64, 5000)
	for i := range score {
		score[i] = float64(rng.IntN(40))
	}
	full := rankTies(score, 9)
	for _, k := range []int{1, 5, 64, 4999} {
		if got := rankHead(score, 9, k); !slices.Equal(got, full[:k]) {
			t.Fatalf("k = %d: rankHead differs from rankTies' head", k)
		}
	}
	if got := rankHead(score, 9, 0); !slices.Equal(got, full) {
		t.Fatal("k = 0 is not the full ranking")
	}
}

// DictSpan.Strip (from the projection) ranks like StripShield.
func TestDictStripMatches(t *testing.T) {
	rng := NewRand(22)
	D := dict(testV, testD, 1.5, rng)
	T, err := prepared.New(D, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer T.Close()
	const n = 8
	ids := tokens(n, testV, rng)
	U := masked(secret(D, ids), 8, 4, rng)
	sp, err := SpanDict(U, T, Options{TieSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, drop := range []int{0, 4, 8} {
		want, err := StripShield(U, D, drop, Options{TieSeed: 1})
		if err != nil {
			t.Fatal(err)
		}
		got, err := sp.Strip(T, drop)
		if err != nil {
			t.Fatal(err)
		}
		if !sameSet(want.Ranking[:n], got.Ranking[:n]) || got.Rank != want.Rank {
			t.Errorf("drop %d: rankings differ:\n%v\n%v", drop, want.Ranking[:n], got.Ranking[:n])
		}
	}
	if _, err := sp.Strip(T, sp.Result.Rank); err == nil {
		t.Error("dropping the whole rank was accepted")
	}
}
