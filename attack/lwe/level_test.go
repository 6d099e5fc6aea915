package lwe

import (
	"os"
	"strings"
	"testing"
)

// levelSamples is the largest d_in of the Qwen3 shapes the level serves
// (12288, the 8B down projection): more samples never help the defender, and
// every attack here uses fewer rows than this at the level's parameters.
const levelSamples = 12288

// TestLevelStartingPoint checks issue 50's starting parameters (lambda 4096,
// h 80, q 2^32, CBD(2), m = 12288) against the 128-bit target, attack by
// attack, under the estimator's default cost model.
func TestLevelStartingPoint(t *testing.T) {
	r, err := Estimate(Level(4096, levelSamples, 80), MATZOV{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range r.Attacks {
		t.Logf("%-16s %6.1f bits  beta %4d  d %5d  zeta %4d  %s", a.Name, a.Bits, a.Beta, a.D, a.Zeta, a.Note)
		if a.Bits < 128 {
			t.Errorf("%s: %.1f bits < 128", a.Name, a.Bits)
		}
	}
	if len(r.Attacks) != 10 {
		t.Errorf("%d attacks estimated, want 10 (usvp, bdd, dual, dual-fft, usvp+drop, bdd-hybrid, bdd-mitm-hybrid, dual-hybrid, mitm, meet-lwe)", len(r.Attacks))
	}
}

// TestMinWeight checks the bisection: the weight it returns reaches the
// target by every attack and one less does not.
func TestMinWeight(t *testing.T) {
	p := Level(1024, 1024, 0)
	const target = 80
	h, r, err := MinWeight(p, 2, 256, target, MATZOV{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("n 1024: h = %d reaches %.1f (%s)", h, r.Min().Bits, r.Min().Name)
	if r.Min().Bits < target {
		t.Errorf("h = %d: %.1f bits < %d", h, r.Min().Bits, target)
	}
	p.Secret = SparseTernary(h - 1)
	below, err := Estimate(p, MATZOV{})
	if err != nil {
		t.Fatal(err)
	}
	if below.Min().Bits >= target {
		t.Errorf("h = %d already reaches %.1f >= %d: MinWeight returned %d", h-1, below.Min().Bits, target, h)
	}
	if _, _, err := MinWeight(p, 2, 3, 200, MATZOV{}); err == nil || !strings.Contains(err.Error(), "even h = 3") {
		t.Errorf("unreachable target: error %v, want one naming h = 3", err)
	}
	if _, _, err := MinWeight(p, 0, 3, 200, MATZOV{}); err == nil || !strings.Contains(err.Error(), "weight range [0, 3]") {
		t.Errorf("bad range: error %v", err)
	}
}

// TestLevelTable prints the estimates for the level's starting parameters
// and alternatives, and the smallest h reaching 128 bits per lambda. It
// takes a few minutes on two cores, so it runs only when asked:
//
//	GELO_LWE_TABLE=1 go test ./attack/lwe -run TestLevelTable -v
func TestLevelTable(t *testing.T) {
	if os.Getenv("GELO_LWE_TABLE") == "" {
		t.Skip("set GELO_LWE_TABLE=1 to print the level's table")
	}
	var reports []Report
	for _, lambda := range []int{2048, 3072, 4096} {
		for _, h := range []int{64, 80, 96, 128, 192} {
			r, err := Estimate(Level(lambda, levelSamples, h), MATZOV{})
			if err != nil {
				t.Fatal(err)
			}
			reports = append(reports, r)
		}
	}
	var b strings.Builder
	if err := WriteTable(&b, reports); err != nil {
		t.Fatal(err)
	}
	t.Logf("cost model %s, m = %d\n%s", MATZOV{}.Name(), levelSamples, b.String())
	for _, c := range Choose([]int{2048, 3072, 4096}, levelSamples, 128, MATZOV{}) {
		if c.Err != nil {
			t.Logf("lambda %d: %v", c.Lambda, c.Err)
			continue
		}
		m := c.Report.Min()
		t.Logf("lambda %d: smallest h for 128 bits: %d (%.1f, %s)", c.Lambda, c.H, m.Bits, m.Name)
	}
	core := make([]Report, 0, 3)
	for _, lambda := range []int{2048, 3072, 4096} {
		r, err := Estimate(Level(lambda, levelSamples, 80), CoreSVP{})
		if err != nil {
			t.Fatal(err)
		}
		core = append(core, r)
	}
	b.Reset()
	if err := WriteTable(&b, core); err != nil {
		t.Fatal(err)
	}
	t.Logf("cost model %s, h = 80\n%s", CoreSVP{}.Name(), b.String())
}
