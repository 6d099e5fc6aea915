package lwebreak

import (
	"context"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"gelo/attack"
	"gelo/attack/uniform"
)

// smallConfig is the configuration CI runs: the level's lambda and h at a
// narrower width, fewer rows.
var smallConfig = Config{Seed: 1, LevelIn: 256, Rows: 32, Known: 3}

// TestEvaluateGates is the harness's gate for the lwe level: the toy
// instances fall to the primal attack and the MitM, the controls (reused
// pad, zero pad) fall to the difference attack, the uniformity tests and
// the dictionary attacks, and at the level's parameters every figure is
// at chance.
//
// Without fplll (and GELO_REQUIRE_FPLLL unset) the rest still runs and
// only the primal attack's gate is left unchecked.
func TestEvaluateGates(t *testing.T) {
	noReducer := false
	if _, err := exec.LookPath(FplllCommand); err != nil {
		if os.Getenv("GELO_REQUIRE_FPLLL") == "1" {
			t.Fatalf("GELO_REQUIRE_FPLLL=1 but %v", ErrNoReducer)
		}
		noReducer = true
		t.Logf("%v: the primal gate is not checked", ErrNoReducer)
	}
	reports, err := Evaluate(context.Background(), smallConfig)
	if err != nil {
		t.Fatal(err)
	}
	gates, verdicts := Judge(reports)
	t.Logf("\n%s", attack.Markdown(reports, gates, verdicts))
	want := map[string]bool{CondPrimal: false, CondMitM: false, CondLevel: true, CondReused: false, CondZero: false}
	if noReducer {
		want[CondPrimal] = true // nothing ran: no figure beats chance
	}
	for _, g := range gates {
		if noReducer && strings.HasPrefix(g.Name, CondPrimal+" ") {
			continue
		}
		if !g.Pass {
			t.Errorf("control gate %s: measured %v, required %s", g.Name, g.Measured, g.Required)
		}
	}
	for _, v := range verdicts {
		if v.Secure != want[v.Condition] {
			t.Errorf("%s (%s): secure %v, want %v; beaten: %+v", v.Condition, v.Label, v.Secure, want[v.Condition], v.Broken)
		}
	}
	if len(verdicts) != len(want) {
		t.Errorf("%d verdicts, want %d", len(verdicts), len(want))
	}
}

// TestJudgeRules checks each rule of Judge on hand-made figures: what
// breaks a condition and what does not.
func TestJudgeRules(t *testing.T) {
	for _, c := range []struct {
		name   string
		f      attack.Figure
		broken bool
	}{
		{"recovery far above chance", attack.Figure{Attack: "mitm", Metric: "m", Value: 1, Chance: 1e-9, N: 3}, true},
		{"recovery at chance", attack.Figure{Attack: "nn", Metric: "m", Value: 0.002, Chance: 0.002, N: 512}, false},
		{"one lucky hit in few trials", attack.Figure{Attack: "nn", Metric: "m", Value: 1.0 / 3, Chance: 0.1, N: 3}, false},
		{"divisible words at 1 / Delta", attack.Figure{Attack: "pad-difference", Metric: "m", Value: 0.0635, Chance: 0.0625, N: 65536}, false},
		{"chi-square below the false alarm", attack.Figure{Attack: "chi-square", Metric: "m", Value: 1e-5, Chance: uniform.FalseAlarm}, true},
		{"chi-square above it", attack.Figure{Attack: "chi-square", Metric: "m", Value: 0.01, Chance: uniform.FalseAlarm}, false},
		{"gram-error readable", attack.Figure{Attack: "gram-error", Metric: "distance", Value: 0.1, Chance: 0.35}, true},
		{"gram-error near its chance", attack.Figure{Attack: "gram-error", Metric: "distance", Value: 0.32, Chance: 0.35}, false},
		{"ica above null", attack.Figure{Attack: "jade", Metric: "p95 |cos|", Value: 0.5, Chance: 0.19}, true},
		{"ica at null", attack.Figure{Attack: "jade", Metric: "p95 |cos|", Value: 0.2, Chance: 0.19}, false},
		{"not run", attack.Figure{Attack: "mitm", Metric: "m", Value: math.NaN(), Chance: math.NaN(), NA: "not run"}, false},
	} {
		_, vs := Judge([]*attack.Report{{Condition: "C", Figures: []attack.Figure{c.f}}})
		if got := !vs[0].Secure; got != c.broken {
			t.Errorf("%s: broken %v, want %v (%+v)", c.name, got, c.broken, vs[0].Broken)
		}
	}
}
