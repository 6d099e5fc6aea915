package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gelo/attack"
	"gelo/models"
)

type attackReport struct {
	Reports []struct {
		Condition string `json:"condition"`
		Insecure  string `json:"insecure"`
		Figures   []struct {
			Attack string   `json:"attack"`
			Metric string   `json:"metric"`
			Value  *float64 `json:"value"`
			Chance *float64 `json:"chance"`
		} `json:"figures"`
	} `json:"reports"`
	Gates []struct {
		Name string `json:"name"`
		Pass bool   `json:"pass"`
	} `json:"control_gates"`
	Verdicts []struct {
		Condition string `json:"condition"`
		Secure    bool   `json:"secure"`
	} `json:"verdicts"`
}

func readAttackReport(t *testing.T, dir string) attackReport {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r attackReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r attackReport) value(t *testing.T, cond, attack, metric string) float64 {
	t.Helper()
	for _, rep := range r.Reports {
		if rep.Condition != cond {
			continue
		}
		for _, f := range rep.Figures {
			if f.Attack == attack && f.Metric == metric && f.Value != nil {
				return *f.Value
			}
		}
	}
	t.Fatalf("%s: no %s %s figure", cond, attack, metric)
	return 0
}

// runAttackCLI runs gelo attack on the repository's corpus under the fixed
// session key, writing into out, and returns its stdout and report; a
// non-zero exit fails the test.
func runAttackCLI(t *testing.T, out string, args ...string) (string, attackReport) {
	t.Helper()
	args = append([]string{"attack", "--corpus", filepath.Join("..", "..", "attack", "testdata", "corpus.jsonl"),
		"--session-key", "000102030405060708090a0b0c0d0e0f", "--out", out}, args...)
	stdout, stderr, code := gelo(t, args...)
	if code != 0 {
		t.Fatalf("gelo attack: exit %d\n%s", code, stderr)
	}
	return stdout, readAttackReport(t, out)
}

// checkGates is the CI gate of the attack harness: the controls pass (the
// attacks work), every level not labelled insecure survives every attack,
// and every level labelled insecure is broken by some attack (so a label
// never outlives its reason).
func (r attackReport) checkGates(t *testing.T) {
	t.Helper()
	for _, g := range r.Gates {
		if !g.Pass {
			t.Errorf("control gate %s fails: the attack does not work even without protection", g.Name)
		}
	}
	labelled := map[string]bool{}
	for _, rep := range r.Reports {
		labelled[rep.Condition] = rep.Insecure != ""
	}
	for _, v := range r.Verdicts {
		switch {
		case !labelled[v.Condition] && !v.Secure:
			t.Errorf("%s is not labelled insecure, but an attack breaks it (see report.md)", v.Condition)
		case labelled[v.Condition] && v.Secure:
			t.Errorf("%s is labelled insecure, but no attack breaks it: the label or the attacks are stale", v.Condition)
		}
	}
}

// TestAttackSmoke is the harness's CI run: 2 layers at the Qwen3-0.6B
// widths, an 8192-token vocabulary, 8 corpus prompts; it asserts the gates
// and reproduces the row-space break on the shipped levels and on mixing
// without shield rows (C1).
func TestAttackSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the attack smoke run takes about a minute")
	}
	dir := t.TempDir()
	cfg, err := models.Variant("qwen3-0.6b")
	if err != nil {
		t.Fatal(err)
	}
	cfg.NumHiddenLayers, cfg.VocabSize = 2, 8192
	cfg.BOSTokenID, cfg.EOSTokenIDs = 1, models.TokenIDs{2}
	model := filepath.Join(dir, "m")
	if err := models.WriteSynthetic(model, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	stdout, r := runAttackCLI(t, out, "--model", model,
		"--prompts", "8", "--max-tokens", "4", "--ica-passes", "4", "--known-prompts", "8", "--seq-prompts", "0",
		"--conditions", "C0,C1,C2,C3")
	t.Logf("\n%s", stdout)
	r.checkGates(t)
	for _, c := range []string{"C1", "C2", "C3"} {
		if v := r.value(t, c, "span", "decode top-1"); v < 0.99 {
			t.Errorf("%s: span membership recovers %.1f %% of decoded tokens; the row-space break (100 %%) is not reproduced", c, 100*v)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(md), "| span | decode top-1 |") {
		t.Fatalf("report.md: %v\n%s", err, md)
	}
}

// TestAttackSequential: sequential vocabulary matching over the whole
// vocabulary of the built-in tiny model, from the true prefix.
func TestAttackSequential(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	out := t.TempDir()
	_, r := runAttackCLI(t, out, "--prompts", "4", "--max-tokens", "2", "--ica-passes", "1", "--known-prompts", "8", "--known-len", "32",
		"--seq-prompts", "2", "--conditions", "C0,C3")
	r.checkGates(t)
	if v := r.value(t, "C0", "sequential", "prompt top-1"); v < 0.9 {
		t.Errorf("C0: sequential matching recovers %.1f %% of prompt tokens, want >= 90 %% (the attack is broken)", 100*v)
	}
	t.Logf("sequential prompt top-1: C0 %.3f, C3 %.3f", r.value(t, "C0", "sequential", "prompt top-1"), r.value(t, "C3", "sequential", "prompt top-1"))
}

// TestAttackLevels is the harness's gate on the full-span levels: on the
// built-in tiny model (2 layers, width 64, vocabulary 512; the 0.6B widths
// make full-span payloads of 2048-4096 rows, too large for CI), with every
// linear op offloaded so prefill and decode both cross, exact is at
// chance on every attack while the controls pass, and span (labelled
// insecure: joint SOBI) and whiten (labelled insecure: the HD3 structure
// attack) are broken, as their labels say (checkGates).
func TestAttackLevels(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	out := t.TempDir()
	stdout, r := runAttackCLI(t, out, "--prompts", "8", "--max-tokens", "4", "--ica-passes", "4", "--known-prompts", "8", "--known-len", "32",
		"--seq-prompts", "2", "--conditions", "C0,span,whiten,exact")
	t.Logf("\n%s", stdout)
	r.checkGates(t)
	for _, v := range r.Verdicts {
		if secure := v.Condition == "exact"; v.Secure != secure {
			t.Errorf("%s: secure %v, want %v (see the report above)", v.Condition, v.Secure, secure)
		}
	}
	if v := r.value(t, "whiten", "hd3-unmask", "decode top-1"); v < 0.99 {
		t.Errorf("whiten: the HD3 structure attack reads %.1f %% of decoded tokens; the break (100 %%) is not reproduced", 100*v)
	}
	// The deep crossing falls the same way, with no hypothesis about its
	// rows; under exact's Haar mask the same fit finds nothing.
	if v := r.value(t, "whiten", "hd3-unmask", "deep crossings unmasked"); v < 0.99 {
		t.Errorf("whiten: %.1f %% of deep crossings unmasked by the data-free fit, want all", 100*v)
	}
	if v := r.value(t, "exact", "hd3-unmask", "deep crossings unmasked"); v != 0 {
		t.Errorf("exact: %.1f %% of deep crossings unmasked under a Haar mask", 100*v)
	}
}

// TestAttackLattice is the harness on level lwe's compiled plan: on the
// built-in tiny model with every linear op offloaded (the cost model keeps
// its 64-wide projections local), what crossed is lwe ciphertext words;
// every attack of the harness, read on the words as centred int32
// values, and the chi-square uniformity of the words stay at chance,
// while the control's gates pass. (The lattice attacks proper, primal
// with fplll, MitM and the reused pad, are attack/lwebreak's.)
func TestAttackLattice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	out := t.TempDir()
	stdout, r := runAttackCLI(t, out, "--prompts", "8", "--max-tokens", "4", "--ica-passes", "4", "--known-prompts", "8", "--known-len", "32",
		"--seq-prompts", "2", "--conditions", "C0,lwe,lwe-reused")
	t.Logf("\n%s", stdout)
	r.checkGates(t)
	for _, v := range r.Verdicts {
		if v.Condition == "lwe" && !v.Secure {
			t.Error("lwe: an attack beats chance (see the report above)")
		}
		// The control: pads reused by an engine fault must be caught.
		if v.Condition == "lwe-reused" && v.Secure {
			t.Error("lwe-reused: every attack at chance on reused pads: the harness cannot see the fault")
		}
	}
	if v := r.value(t, "lwe", "chi-square", "uniformity of the ciphertext words (min p x 6)"); !(v >= 1e-3) {
		t.Errorf("lwe: the ciphertext words fail the uniformity test (adjusted p %.3g)", v)
	}
	const reuse = "uniformity of row differences (a reused pad cancels) (min p x 6)"
	if v := r.value(t, "lwe", attack.PadReuseAttack, reuse); !(v >= 1e-3) {
		t.Errorf("lwe: fresh pads' row differences fail the uniformity test (adjusted p %.3g)", v)
	}
	if v := r.value(t, "lwe-reused", attack.PadReuseAttack, reuse); !(v < 1e-3) {
		t.Errorf("lwe-reused: reused pads' row differences pass the uniformity test (adjusted p %.3g)", v)
	}
}

// TestRecordAttackRefusals: bad flags and bad inputs of record and attack
// are usage errors (exit 2) or refusals (exit 1) that say what is wrong.
func TestRecordAttackRefusals(t *testing.T) {
	dir := t.TempDir()
	badCorpus := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(badCorpus, []byte(`{"kind":"poetry","text":"x"}`+"\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"record"}, 2, "--out is required"},
		{[]string{"record", "--out", filepath.Join(dir, "r"), "--prompt-ids", "1", "--prompt", "x"}, 2, "give one of"},
		{[]string{"record", "--out", filepath.Join(dir, "r"), "--max-tokens", "0"}, 2, "--max-tokens must be positive"},
		{[]string{"record", "--out", filepath.Join(dir, "r"), "--prompt-ids", "1,x"}, 2, `"x" is not a token id`},
		{[]string{"record", "--model", "qwen3-tiny", "--out", filepath.Join(dir, "r"), "--prompt", "hi"}, 2, "needs a tokenizer"},
		{[]string{"record", "--out", filepath.Join(dir, "r"), "--corpus", badCorpus}, 1, `kind "poetry"`},
		{[]string{"record", "--out", filepath.Join(dir, "r"), "--prompt-ids", "99999"}, 1, "outside the vocabulary"},
		// C1's unshielded mixing is the harness's alone: users are refused.
		{[]string{"record", "--out", filepath.Join(dir, "r"), "--prompt-ids", "1", "--shield", "0,4"}, 2, "needs at least 8"},
		{[]string{"compile", "--mask", "haar", "--shield", "0,4", "--out", filepath.Join(dir, "c.ir")}, 2, "needs at least 8"},
		{[]string{"attack"}, 2, "--out is required"},
		{[]string{"attack", "--out", dir, "--conditions", "C9"}, 2, `"C9" is not one of`},
		{[]string{"attack", "--out", dir, "--max-tokens", "0"}, 2, "--max-tokens must be positive"},
		{[]string{"attack", "--out", dir, "--batch", "0"}, 2, "--batch must be positive"},
		{[]string{"attack", "--out", dir, "--level-offload", "some"}, 2, `--level-offload "some"`},
		{[]string{"record", "--out", filepath.Join(dir, "r"), "--batch", "-1"}, 2, "--batch must be positive"},
		{[]string{"attack", "--out", dir, "--corpus", badCorpus}, 1, `kind "poetry"`},
		{[]string{"attack", "--out", dir, "--corpus", filepath.Join(dir, "missing.jsonl")}, 1, "corpus:"},
	} {
		_, errs, code := gelo(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("gelo %v: exit %d, %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

// TestAttackBatched is the harness on batched decode (4 prompts a batch,
// every decode pass one row per sequence): the controls pass on the
// batched bags, exact stays at chance on them, whiten still falls to the
// structure attack, and gelo-8x4's per-sequence blocks are attacked one by
// one, as the device can (the plan says where each sequence's rows are),
// so its decoded tokens are read again. span is left out: its label rests
// on joint SOBI across single-row decode passes, which a batched recording
// does not have (at these sizes it reads at chance on batched passes).
func TestAttackBatched(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	out := t.TempDir()
	stdout, r := runAttackCLI(t, out, "--prompts", "8", "--max-tokens", "4", "--ica-passes", "4", "--known-prompts", "8", "--known-len", "32",
		"--seq-prompts", "0", "--batch", "4", "--conditions", "C0,C3,whiten,exact")
	t.Logf("\n%s", stdout)
	r.checkGates(t)
	for _, v := range r.Verdicts {
		if secure := v.Condition == "exact"; v.Secure != secure {
			t.Errorf("%s: secure %v, want %v (see the report above)", v.Condition, v.Secure, secure)
		}
	}
	if v := r.value(t, "C0", "span", "batched decode bag recall"); v < 0.99 {
		t.Errorf("C0: span reads %.1f %% of batched decode bags, want all (the attack is broken)", 100*v)
	}
	if v := r.value(t, "C3", "span", "decode top-1"); v < 0.99 {
		t.Errorf("C3: span on per-sequence blocks reads %.1f %% of decoded tokens; the break (100 %%) is not reproduced", 100*v)
	}
	if v := r.value(t, "exact", "span", "batched decode bag recall"); v > 0.1 {
		t.Errorf("exact: span reads %.1f %% of batched decode bags", 100*v)
	}
}

// TestAttackLevelOffloadAttacked: a full-span level recorded with only
// the two attacked crossings offloaded (--level-offload attacked, how the
// 0.6B-width run affords exact) is judged as with every op offloaded:
// the same verdicts, and the layer-0 figures digit for digit (each
// crossing has its own mixing, so the others' placement changes nothing
// the attacks read).
func TestAttackLevelOffloadAttacked(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	args := []string{"--prompts", "4", "--max-tokens", "3", "--ica-passes", "2", "--known-prompts", "4", "--known-len", "32",
		"--seq-prompts", "0", "--conditions", "C0,whiten,exact"}
	_, all := runAttackCLI(t, t.TempDir(), append(args, "--level-offload", "all")...)
	_, some := runAttackCLI(t, t.TempDir(), append(args, "--level-offload", "attacked")...)
	some.checkGates(t)
	for _, cond := range []string{"whiten", "exact"} {
		for _, am := range [][2]string{{"span", "decode top-1"}, {"span", "prefill bag recall"}, {"gram-spike", "prefill bag recall"},
			{"nn", "token recall"}, {"gram-error", "distance"}, {"hd3-unmask", "prefill bag recall"}} {
			if a, b := all.value(t, cond, am[0], am[1]), some.value(t, cond, am[0], am[1]); a != b {
				t.Errorf("%s %s %s: %g with every op offloaded, %g with the attacked ones only", cond, am[0], am[1], a, b)
			}
		}
	}
	for i, v := range some.Verdicts {
		if v.Secure != all.Verdicts[i].Secure {
			t.Errorf("%s: secure %v with the attacked crossings only, %v with every op", v.Condition, v.Secure, all.Verdicts[i].Secure)
		}
	}
}
