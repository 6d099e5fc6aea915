package main

import (
	"strings"
	"testing"

	"gelo/ir"
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
	strong, sev := sealed(t, dir, "strong", "--security", "exact")
	out, _ := must(t, "verify", strong, "--evidence", sev, "--nonce", testNonce, "--allow-simulated", "--min-security", "exact")
	for _, w := range []string{"security:       exact", "min-security:   exact met"} {
		if !strings.Contains(out, w) {
			t.Errorf("verify of an exact plan lacks %q:\n%s", w, out)
		}
	}
	// The default level (lwe: computational) ranks below exact
	// (information-theoretic) and meets its own minimum.
	def, dev := sealed(t, dir, "default")
	usageCase(t, 1, []string{"has security lwe, below --min-security exact"},
		"verify", def, "--evidence", dev, "--nonce", testNonce, "--allow-simulated", "--min-security", "exact")
	out, _ = must(t, "verify", def, "--evidence", dev, "--nonce", testNonce, "--allow-simulated", "--min-security", "lwe")
	if !strings.Contains(out, "min-security:   lwe met") {
		t.Errorf("verify of the default plan at --min-security lwe:\n%s", out)
	}
}

// TestBenchSecurityCostOnly: the cost-only frontier (bench --suite
// security --measure=false) prints the whitened floor without building
// an engine (no memory preflight). The frontier itself is package bench's
// (TestWhitenFloor, TestSecurityFrontierListsEveryLevel).
func TestBenchSecurityCostOnly(t *testing.T) {
	stdout, stderr, code := gelo(t, "bench", "--suite", "security", "--measure=false", "--prefill", "64", "--batch", "4")
	if code != 0 || !strings.Contains(stdout, "floor of any whitened level") {
		t.Errorf("bench --suite security --measure=false: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// gelo inspect --lwe prints attack/lwe's estimate for each input width an
// lwe plan's crossings have (qwen3-tiny, every op offloaded: widths 64 and
// 192), and refuses a plan at another level.
func TestInspectLatticeEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the estimate takes seconds a width")
	}
	out, _ := must(t, "inspect", "--security", "lwe", "--offload", "all", "--summary", "--lwe")
	for _, w := range []string{"lwe estimate (attack/lwe, MATZOV", "min", "4096"} {
		if !strings.Contains(out, w) {
			t.Errorf("inspect --lwe does not print %q:\n%s", w, out)
		}
	}
	usageCase(t, 2, []string{"--lwe: the plan is --security exact, not lwe"}, "inspect", "--security", "exact", "--summary", "--lwe")
}

// latticeOffloads decides whether the preflight counts an lwe plan's
// hints, integers and pads: not on the local device (the offload pass
// keeps every op in the TEE there) unless --offload all, yes for an
// accelerator, and for an artifact exactly when it encodes.
func TestLatticeOffloadsPreflight(t *testing.T) {
	for _, tc := range []struct {
		device, offload string
		want            bool
	}{{"local", "auto", false}, {"", "auto", false}, {"local", "all", true}, {"vulkan", "auto", true}, {"gomlx:xla:cuda", "auto", true}} {
		mf := modelFlags{device: tc.device, offload: tc.offload}
		if got := mf.latticeOffloads(nil); got != tc.want {
			t.Errorf("--device %q --offload %s: counts the lwe state %v, want %v", tc.device, tc.offload, got, tc.want)
		}
	}
	g := &ir.Graph{Name: "decode"}
	m := &ir.Module{Graphs: []*ir.Graph{g}}
	mf := modelFlags{device: "vulkan", offload: "all"}
	if mf.latticeOffloads(m) {
		t.Error("an artifact with no lwe_encode: counts the lwe state")
	}
	g.Nodes = append(g.Nodes, &ir.Node{Op: ir.OpLWEEncode})
	if !(&modelFlags{device: "local"}).latticeOffloads(m) {
		t.Error("an artifact that encodes, on the local device: does not count the lwe state")
	}
}
