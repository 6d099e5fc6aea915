package lwebreak

import (
	"context"
	"math"
	"testing"

	"gelo/attack"
)

// smallConfig is the configuration CI runs: the level's lambda and h at a
// narrower width, fewer rows.
var smallConfig = Config{Seed: 1, LevelIn: 256, Rows: 32, Known: 3}

// TestEvaluateGates is the harness's gate for the lwe level: the toy
// instances fall to the primal attack and the MitM, the controls (reused
// pad, zero pad) fall to the difference attack, the uniformity tests and
// the dictionary attacks, and at the level's parameters every figure is
// at chance.
func TestEvaluateGates(t *testing.T) {
	requireFplll(t)
	reports, err := Evaluate(context.Background(), smallConfig)
	if err != nil {
		t.Fatal(err)
	}
	gates, verdicts := Judge(reports)
	t.Logf("\n%s", attack.Markdown(reports, gates, verdicts))
	for _, g := range gates {
		if !g.Pass {
			t.Errorf("control gate %s: measured %v, required %s", g.Name, g.Measured, g.Required)
		}
	}
	want := map[string]bool{CondPrimal: false, CondMitM: false, CondLevel: true, CondReused: false, CondZero: false}
	for _, v := range verdicts {
		if v.Secure != want[v.Condition] {
			t.Errorf("%s (%s): secure %v, want %v; beaten: %+v", v.Condition, v.Label, v.Secure, want[v.Condition], v.Broken)
		}
	}
	if len(verdicts) != len(want) {
		t.Errorf("%d verdicts, want %d", len(verdicts), len(want))
	}
}

// TestBinomTail checks the significance rule's tail against small exact
// cases and its behaviour far out.
func TestBinomTail(t *testing.T) {
	for _, c := range []struct {
		k, n int
		p    float64
		want float64
	}{
		{0, 10, 0.5, 1},
		{10, 10, 0.5, math.Exp2(-10)},
		{9, 10, 0.5, 11 * math.Exp2(-10)},
		{1, 3, 0.1, 1 - 0.9*0.9*0.9},
		{1, 100000, 1e-9, 1 - math.Pow(1-1e-9, 100000)},
	} {
		if got := binomTail(c.k, c.n, c.p); math.Abs(got-c.want) > 1e-9*math.Max(1, c.want) && math.Abs(got-c.want)/c.want > 1e-6 {
			t.Errorf("P(X >= %d), n %d, p %g = %v, want %v", c.k, c.n, c.p, got, c.want)
		}
	}
	if got := binomTail(65536, 65536, 1.0/16); got > 1e-300 {
		t.Errorf("every word divisible by 16 by luck: %v", got)
	}
	if got := binomTail(4100, 65536, 1.0/16); got < 0.3 {
		t.Errorf("4100 of 65536 at 1/16 (mean 4096): tail %v, want about 0.47", got)
	}
}
