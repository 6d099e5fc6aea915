package bss

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// bruteAssign minimises the total cost over all injections rows -> columns.
func bruteAssign(cost [][]float64) float64 {
	r, c := len(cost), len(cost[0])
	best := math.Inf(1)
	used := make([]bool, c)
	var rec func(i int, acc float64)
	rec = func(i int, acc float64) {
		if i == r {
			best = math.Min(best, acc)
			return
		}
		for j := 0; j < c; j++ {
			if !used[j] {
				used[j] = true
				rec(i+1, acc+cost[i][j])
				used[j] = false
			}
		}
	}
	rec(0, 0)
	return best
}

func TestHungarianMatchesBruteForce(t *testing.T) {
	r := rng(1)
	for trial := 0; trial < 300; trial++ {
		rows := 1 + r.IntN(6)
		cols := rows + r.IntN(3)
		cost := make([][]float64, rows)
		for i := range cost {
			cost[i] = make([]float64, cols)
			for j := range cost[i] {
				cost[i][j] = math.Round(10*r.Float64()) / 10 // ties too
			}
		}
		as, err := Hungarian(cost)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		got := 0.0
		for i, j := range as {
			if seen[j] {
				t.Fatalf("trial %d: column %d assigned twice", trial, j)
			}
			seen[j] = true
			got += cost[i][j]
		}
		if want := bruteAssign(cost); math.Abs(got-want) > 1e-9 {
			t.Fatalf("trial %d (%dx%d): Hungarian %.3f, brute force %.3f", trial, rows, cols, got, want)
		}
	}
	if _, err := Hungarian([][]float64{{1}, {2}}); !errors.Is(err, ErrShape) {
		t.Fatalf("rows > columns: got %v", err)
	}
	if _, err := Hungarian([][]float64{{1, 2}, {3}}); !errors.Is(err, ErrShape) {
		t.Fatalf("ragged: got %v", err)
	}
}

func TestMatchedCosinesOptimalNotGreedy(t *testing.T) {
	// Greedy takes est0->truth0 (0.9) and leaves est1->truth1 (0.1);
	// the optimum is est0->truth1, est1->truth0 (0.8 + 0.8).
	c := [][]float64{{0.9, 0.8}, {0.8, 0.1}}
	cost := [][]float64{{-c[0][0], -c[1][0]}, {-c[0][1], -c[1][1]}}
	as, _ := Hungarian(cost)
	if as[0] != 1 || as[1] != 0 {
		t.Fatalf("assignment %v, want [1 0]", as)
	}
	// And on vectors: rows permuted, scaled and sign-flipped score 1.
	x := sources(mixedKinds(5), 50, 3)
	p := mat.NewDense(5, 5, []float64{
		0, -2, 0, 0, 0,
		0, 0, 0, 0.5, 0,
		3, 0, 0, 0, 0,
		0, 0, 0, 0, -1,
		0, 0, 7, 0, 0,
	})
	mc, err := MatchedCosines(mul(p, x), x)
	if err != nil {
		t.Fatal(err)
	}
	for j, v := range mc {
		if math.Abs(v-1) > 1e-12 {
			t.Fatalf("truth row %d scored %.6f, want 1", j, v)
		}
	}
	// Fewer estimates than truth rows: unassigned rows score 0.
	mc, err = MatchedCosines(x.Slice(0, 2, 0, 50), x)
	if err != nil {
		t.Fatal(err)
	}
	zeros := 0
	for _, v := range mc {
		if v == 0 {
			zeros++
		}
	}
	if zeros != 3 {
		t.Fatalf("%d truth rows unassigned, want 3: %v", zeros, mc)
	}
	if _, err := MatchedCosines(mat.NewDense(2, 3, nil), mat.NewDense(2, 4, nil)); !errors.Is(err, ErrShape) {
		t.Fatalf("column mismatch: got %v", err)
	}
}

func TestAmariBounds(t *testing.T) {
	a := haar(t, 6, 5)
	perm := mat.NewDense(6, 6, nil)
	for i, j := range []int{3, 0, 5, 1, 4, 2} {
		perm.Set(i, j, float64(i+1)*math.Pow(-1, float64(j)))
	}
	w := mul(perm, a.T()) // W A = scaled signed permutation
	if v := amari(t, w, a); v > 1e-12 {
		t.Fatalf("perfect separation scored %.3g", v)
	}
	ones := mat.NewDense(6, 6, nil)
	ones.Apply(func(_, _ int, _ float64) float64 { return 1 }, ones)
	if v := amari(t, ones, mat.NewDense(6, 6, []float64{1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1})); math.Abs(v-1) > 1e-12 {
		t.Fatalf("flat P scored %.3g, want 1", v)
	}
	if _, err := Amari(mat.NewDense(3, 4, nil), mat.NewDense(5, 3, nil)); !errors.Is(err, ErrShape) {
		t.Fatalf("shape mismatch: got %v", err)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 3}, {1, 5}, {0.95, 4.8}, {0.25, 2}} {
		if got := Percentile(xs, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Fatalf("Percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if !math.IsNaN(P95(nil)) {
		t.Fatal("P95 of nothing should be NaN")
	}
}

func TestBaselines(t *testing.T) {
	x := sources(mixedKinds(8), 256, 11)
	rr := randomRows(t, x, 8)
	rm := randomMix(t, x, x, 8)
	t.Logf("8 truth rows of width 256: RandomRowsP95 = %.3f, RandomMixP95 (in their span) = %.3f", rr, rm)
	// Independent rows in R^256: |cos| ~ 1/16, the p95 of the matched best is small.
	if rr > 0.3 {
		t.Fatalf("RandomRowsP95 = %.3f, expected small", rr)
	}
	if rm < rr+0.2 {
		t.Fatalf("guesses inside the span should beat independent rows: %.3f vs %.3f", rm, rr)
	}
	if _, err := RandomRowsP95(x, 0, 1); !errors.Is(err, ErrShape) {
		t.Fatalf("zero rows: got %v", err)
	}
}
