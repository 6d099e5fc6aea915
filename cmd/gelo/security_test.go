package main

import (
	"strings"
	"testing"

	"gelo/models"
)

// TestSecurityFlagErrors: every bad use of the level flags is a usage
// error naming the flag, and verify refuses a plan below --min-security.
func TestSecurityFlagErrors(t *testing.T) {
	for _, c := range []struct {
		wants []string
		args  []string
	}{
		{[]string{`--security "fort-knox"`}, []string{"compile", "--security", "fort-knox"}},
		{[]string{"--mask set protection knobs that --security exact fixes"}, []string{"compile", "--security", "exact", "--mask", "haar"}},
		{[]string{`--offload "some"`}, []string{"compile", "--offload", "some"}},
		{[]string{"--plan-rows 0"}, []string{"compile", "--plan-rows", "0"}},
		{[]string{"--plan-batch 100000"}, []string{"compile", "--plan-batch", "100000"}},
		{[]string{"shared topology", "--topology per-sequence contradicts it"}, []string{"compile", "--security", "span", "--topology", "per-sequence"}},
		{[]string{"--security span with --weights q8_0"}, []string{"compile", "--security", "span", "--weights", "q8_0"}},
		{[]string{"--verify 33: want 0 (off) to 32"}, []string{"compile", "--verify", "33"}},
		{[]string{"--verify -1"}, []string{"compile", "--verify", "-1"}},
		{[]string{"--verify-pool 4: want 8 (--verify)"}, []string{"compile", "--verify", "8", "--verify-pool", "4"}},
		{[]string{"--verify-pool 300"}, []string{"compile", "--mask", "hd3", "--verify-pool", "300"}},
	} {
		usageCase(t, 2, c.wants, c.args...)
	}

	dir := t.TempDir()
	weak, ev := sealed(t, dir, "weak", "--security", "gelo-8x4")
	usageCase(t, 2, []string{`--min-security "max"`}, "verify", weak, "--evidence", ev, "--nonce", testNonce, "--allow-simulated", "--min-security", "max")
	usageCase(t, 1, []string{"has security gelo-8x4, below --min-security exact"},
		"verify", weak, "--evidence", ev, "--nonce", testNonce, "--allow-simulated", "--min-security", "exact")
	strong, sev := sealed(t, dir, "strong")
	out, _ := must(t, "verify", strong, "--evidence", sev, "--nonce", testNonce, "--allow-simulated", "--min-security", "exact")
	for _, w := range []string{"security:       exact", "min-security:   exact met"} {
		if !strings.Contains(out, w) {
			t.Errorf("verify of the default plan lacks %q:\n%s", w, out)
		}
	}
}

// TestWhitenFloor: on the Qwen3-0.6B shapes at prefill n = 2040, the o
// and down projections' Gram alone (n^2 d / 2 with n < d) costs as much as
// their matmul (n d d_out, d_out = 1024 = n / 2), so they stay in the TEE
// under any whitened level and the floor is at least their share of the
// linear work, a third; the other ops add their Grams. At B = 1 the Gram
// of one row is nothing next to a matmul. And the cost-only frontier
// prints it without building an engine (no memory preflight).
func TestWhitenFloor(t *testing.T) {
	cfg, err := models.Variant("qwen3-0.6b")
	if err != nil {
		t.Fatal(err)
	}
	var od, all float64
	for _, sh := range linearShapes(cfg) {
		rows := 2040.0
		if sh.lmHead {
			rows = 1
		}
		w := rows * float64(sh.d*sh.dOut*sh.perPass)
		all += w
		if sh.op == "o" || sh.op == "down" {
			od += w
		}
	}
	f := whitenFloor(cfg, 2040, true)
	if f < od/all || f > 0.5 {
		t.Errorf("floor at n = 2040: %.3f, want at least o+down's share %.3f (and below one half)", f, od/all)
	}
	if f := whitenFloor(cfg, 1, false); f > 0.01 {
		t.Errorf("floor at B = 1: %.4f, want about d / (2 d_out) of each op (< 1 %%)", f)
	}
	stdout, stderr, code := gelo(t, "bench", "--suite", "security", "--measure=false", "--prefill", "64", "--batch", "4")
	if code != 0 || !strings.Contains(stdout, "floor of any whitened level") {
		t.Errorf("bench --suite security --measure=false: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
