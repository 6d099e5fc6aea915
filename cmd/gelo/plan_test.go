package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gelo/attest"
	"gelo/ir"
	"gelo/models"
	"gelo/plan/planfile"
)

const (
	testNonce  = "00112233445566778899aabbccddeeff"
	staleNonce = "ffeeddccbbaa99887766554433221100"
	genArgs    = "5,6,7"
)

// must runs gelo and fails the test unless it exits 0.
func must(t *testing.T, args ...string) (string, string) {
	t.Helper()
	out, errs, code := gelo(t, args...)
	if code != 0 {
		t.Fatalf("gelo %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out, errs
}

// refused runs gelo, expects exit 1 and a stderr naming every want.
func refused(t *testing.T, wants []string, args ...string) string {
	t.Helper()
	_, errs, code := gelo(t, args...)
	if code != 1 {
		t.Fatalf("gelo %s: exit %d, want 1 (refused)\n%s", strings.Join(args, " "), code, errs)
	}
	for _, w := range wants {
		if !strings.Contains(errs, w) {
			t.Fatalf("gelo %s: stderr %q does not say %q", strings.Join(args, " "), errs, w)
		}
	}
	return errs
}

func generateArgs(extra ...string) []string {
	return append([]string{"generate", "--prompt-ids", genArgs, "--max-tokens", "6"}, extra...)
}

// sealed compiles the default model, the built-in qwen3-kjv (extra compile args allowed,
// --model among them), into dir/name.gelo and attests it with the simulated device.
func sealed(t *testing.T, dir, name string, compileArgs ...string) (plan, ev string) {
	t.Helper()
	plan = filepath.Join(dir, name+".gelo")
	ev = filepath.Join(dir, name+".ev")
	must(t, append([]string{"compile", "--out", plan}, compileArgs...)...)
	out, _ := must(t, "attest", plan, "--nonce", testNonce, "--out", ev, "--simulated")
	if !strings.Contains(out, "SIMULATED") || !strings.Contains(out, "simulated") {
		t.Fatalf("attest --simulated does not say simulated on stdout:\n%s", out)
	}
	return plan, ev
}

func TestSealedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	plan, ev := sealed(t, dir, "tiny", "--security", "gelo-8x4")

	// Same compile twice: byte-identical plan files.
	again := filepath.Join(dir, "again.gelo")
	must(t, "compile", "--security", "gelo-8x4", "--out", again)
	a, _ := os.ReadFile(plan)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Fatal("two compiles of the same model give different plan files")
	}

	evData, _ := os.ReadFile(ev)
	if !strings.Contains(string(evData), `"kind": "simulated"`) || !strings.Contains(string(evData), "SIMULATED") {
		t.Fatalf("the evidence file does not say simulated:\n%s", evData)
	}
	out, _ := must(t, "verify", plan, "--evidence", ev, "--nonce", testNonce, "--allow-simulated")
	for _, w := range []string{"attestation: SIMULATED", "verified (SIMULATED", "measurement:", "TCB:", "policy:", "model identity:"} {
		if !strings.Contains(out, w) {
			t.Errorf("verify output lacks %q:\n%s", w, out)
		}
	}
	// Flags before the plan work too.
	must(t, "verify", "--evidence", ev, "--nonce", testNonce, "--allow-simulated",
		"--measurement", fmt.Sprintf("%x", attest.SimulatedMeasurement()), "--min-tcb", attest.SimulatedTCB.String(), plan)

	unsealed, _ := must(t, generateArgs()...)
	got, errs := must(t, generateArgs("--plan", plan)...)
	if got != unsealed || len(strings.Fields(got)) != 6 {
		t.Fatalf("sealed plan generates %q, the unsealed path %q", got, unsealed)
	}
	if !strings.Contains(errs, "model identity") || !strings.Contains(errs, "verified") {
		t.Errorf("generate --plan does not report the identity check: %q", errs)
	}

	insp, _ := must(t, "inspect", plan)
	for _, w := range []string{"plan file " + plan, "GELOPLAN version 1", "plan digest:", "model identity:", "weights:", "tokenizer:",
		"flags:", "qk_norm=true", "mask hd3", "backend:        cpu", "prefill:", "decode:", "graph prefill(", "placement table"} {
		if !strings.Contains(insp, w) {
			t.Errorf("inspect of a plan lacks %q", w)
		}
	}
	// The IR part is the same as inspecting a fresh compile.
	direct, _ := must(t, "inspect", "--security", "gelo-8x4")
	if !strings.HasSuffix(insp, direct) {
		t.Error("inspect of a plan does not end with the same IR and summary as inspect of a fresh compile")
	}
}

// TestSealedDirectoryModel: a plan compiled from a model directory runs from it, and --model
// on the command line overrides its recorded source (and is then checked like it). The
// refusals of every changed file are package plan's tests (TestOpenSealedDirectory).
func TestSealedDirectoryModel(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := models.Variant("qwen3-tiny")
	m1, m2 := filepath.Join(dir, "m1"), filepath.Join(dir, "m2")
	if err := models.WriteSynthetic(m1, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	if err := models.WriteSynthetic(m2, cfg, 2, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(tok, tinyTokenizer(true), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "m1.gelo")
	must(t, "compile", "--model", m1, "--tokenizer", tok, "--out", plan)
	insp, _ := must(t, "inspect", "--summary", plan)
	if !strings.Contains(insp, "directory "+m1+"; tokenizer "+tok) {
		t.Errorf("inspect does not show the model source and tokenizer:\n%s", insp)
	}

	unsealed, _ := must(t, generateArgs("--model", m1)...)
	got, _ := must(t, generateArgs("--plan", plan)...)
	if got != unsealed {
		t.Fatalf("sealed %q vs unsealed %q", got, unsealed)
	}
	// Another seed's weights, through --model.
	refused(t, []string{"refusing to run sealed plan " + plan, "weights differ: tensor model.embed_tokens.weight: data differs",
		filepath.Join(m2, "model.safetensors")}, generateArgs("--plan", plan, "--model", m2, "--tokenizer", tok)...)
	// A --seed, which a directory model ignores: accepted.
	must(t, generateArgs("--plan", plan, "--seed", "7")...)
}

func TestVerifyRefusals(t *testing.T) {
	dir := t.TempDir()
	plan, ev := sealed(t, dir, "a")
	haar, haarEv := sealed(t, dir, "haar", "--mask", "haar")
	irText := filepath.Join(dir, "a.ir")
	must(t, "compile", "--out", irText)
	badEv := filepath.Join(dir, "bad.ev")
	os.WriteFile(badEv, []byte(`{"format":"nope"}`), 0o644)

	v := func(extra ...string) []string {
		return append([]string{"verify", plan, "--evidence", ev, "--nonce", testNonce, "--allow-simulated"}, extra...)
	}
	cases := []struct {
		name  string
		args  []string
		wants []string
	}{
		{"stale nonce", []string{"verify", plan, "--evidence", ev, "--nonce", staleNonce, "--allow-simulated"},
			[]string{"REPORT_DATA mismatch", "nonce differs", "stale or replayed"}},
		{"simulated not allowed", []string{"verify", plan, "--evidence", ev, "--nonce", testNonce},
			[]string{"evidence is simulated", "--allow-simulated"}},
		{"evidence of another plan", []string{"verify", plan, "--evidence", haarEv, "--nonce", testNonce, "--allow-simulated"},
			[]string{"plan digest differs", "model identity differs"}},
		{"plan of other evidence", []string{"verify", haar, "--evidence", ev, "--nonce", testNonce, "--allow-simulated"},
			[]string{"plan digest differs"}},
		{"measurement", v("--measurement", strings.Repeat("00", 48)), []string{"does not meet the policy", "MEASUREMENT"}},
		{"min tcb", v("--min-tcb", "bl=3,tee=0,snp=99,ucode=209"), []string{"does not meet the policy"}},
		{"IR text", []string{"verify", irText, "--evidence", ev, "--nonce", testNonce, "--allow-simulated"},
			[]string{"is IR text, not a sealed plan file"}},
		{"bad evidence", []string{"verify", plan, "--evidence", badEv, "--nonce", testNonce, "--allow-simulated"},
			[]string{badEv, "format"}},
		{"missing evidence", []string{"verify", plan, "--evidence", filepath.Join(dir, "none.ev"), "--nonce", testNonce},
			[]string{"none.ev"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { refused(t, tc.wants, tc.args...) })
	}
	// Usage errors exit 2.
	for _, args := range [][]string{
		{"verify", plan, "--nonce", testNonce},
		{"verify", plan, "--evidence", ev},
		{"verify", plan, "--evidence", ev, "--nonce", "abc"},
		{"verify", plan, "--evidence", ev, "--nonce", "00"},
		{"verify", plan, "--evidence", ev, "--nonce", testNonce, "--min-tcb", "snp"},
		{"attest", plan, "--nonce", testNonce},
		{"attest", "--nonce", testNonce, "--out", ev},
	} {
		if _, errs, code := gelo(t, args...); code != 2 {
			t.Errorf("gelo %v: exit %d, want 2 (usage)\n%s", args, code, errs)
		}
	}
	// No silent fallback to the simulated device.
	if _, err := attest.NewAttester(); err != nil {
		refused(t, []string{"no SEV-SNP guest interface", "pass --simulated"},
			"attest", plan, "--nonce", testNonce, "--out", filepath.Join(dir, "hw.ev"))
		if _, err := os.Stat(filepath.Join(dir, "hw.ev")); err == nil {
			t.Error("a refused attest left an evidence file behind")
		}
	}
}

// TestResealedPlanRefused: a plan changed consistently (every digest recomputed) is a
// different plan: its evidence no longer verifies, and generate refuses what it cannot run.
func TestResealedPlanRefused(t *testing.T) {
	dir := t.TempDir()
	plan, ev := sealed(t, dir, "a", "--model", "qwen3-tiny") // a variant: its synth dtype is forged below
	p, err := planfile.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	p.Backend = "gomlx"
	forged := filepath.Join(dir, "forged.gelo")
	os.WriteFile(forged, planfile.Encode(p), 0o644)
	refused(t, []string{"section identity", `numerics flag "backend"`},
		"verify", forged, "--evidence", ev, "--nonce", testNonce, "--allow-simulated")

	// A self-consistent change outside the identity (the dtype the synthetic weights are
	// rounded through): the plan decodes, but it is another plan, so its evidence does not
	// verify; and its weights are not the sealed ones.
	p, _ = planfile.ReadFile(plan)
	p.Source.SynthDType = "f32"
	os.WriteFile(forged, planfile.Encode(p), 0o644)
	if _, err := planfile.ReadFile(forged); err != nil {
		t.Fatal(err)
	}
	errs := refused(t, []string{"plan digest differs: evidence was sealed for plan"},
		"verify", forged, "--evidence", ev, "--nonce", testNonce, "--allow-simulated")
	if strings.Contains(errs, "model identity differs") || strings.Contains(errs, "nonce differs") {
		t.Errorf("verify blames more than the plan digest: %s", errs)
	}
	refused(t, []string{"weights differ", "seed 1 (f32)"}, generateArgs("--plan", forged)...)

	// An inconsistent one is refused when read.
	p, _ = planfile.ReadFile(plan)
	p.Passes.WeightFormat = "q8_0"
	os.WriteFile(forged, planfile.Encode(p), 0o644)
	refused(t, []string{"plan file " + forged + `: section ir: meta weights is "f32", the meta section says "q8_0"`}, generateArgs("--plan", forged)...)
}

// TestPlanByteFlips flips one byte at a time at sampled positions covering every part of a
// plan file: verify, inspect and (for some) generate refuse each with a message saying what
// did not match.
func TestPlanByteFlips(t *testing.T) {
	dir := t.TempDir()
	plan, ev := sealed(t, dir, "a")
	good, _ := os.ReadFile(plan)
	infos, trailer, err := planfile.Layout(good)
	if err != nil {
		t.Fatal(err)
	}
	type probe struct {
		pos  int
		want string
	}
	probes := []probe{{0, "header: wrong magic"}, {7, "header: wrong magic"}, {9, "header: format version"},
		{11, "header: format version"}, {15, "header: section count"}}
	for i, s := range infos {
		probes = append(probes,
			probe{s.Entry, fmt.Sprintf("header: section table entry %d", i)},
			probe{s.Entry + 8, "truncated"}, // the length's top byte
			probe{s.Entry + 16, "section " + s.Name + ": digest mismatch: header says"},
			probe{s.Entry + 47, "section " + s.Name + ": digest mismatch: header says"},
		)
		for _, off := range []int{0, s.Length / 3, s.Length / 2, s.Length - 1} {
			probes = append(probes, probe{s.Offset + off, "section " + s.Name + ": digest mismatch: header says sha256:"})
		}
	}
	probes = append(probes, probe{trailer, "trailer: plan digest mismatch"}, probe{len(good) - 1, "trailer: plan digest mismatch"})

	flipped := filepath.Join(dir, "flipped.gelo")
	for i, pr := range probes {
		buf := bytes.Clone(good)
		buf[pr.pos] ^= 0x01
		if err := os.WriteFile(flipped, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		want := []string{"plan file " + flipped + ": ", pr.want}
		refused(t, want, "verify", flipped, "--evidence", ev, "--nonce", testNonce, "--allow-simulated")
		refused(t, want, "inspect", flipped)
		if i%8 == 0 {
			refused(t, want, generateArgs("--plan", flipped)...)
		}
	}
	// Truncated and extended files.
	for _, buf := range [][]byte{good[:len(good)-1], good[:infos[3].Offset+5], good[:20], append(bytes.Clone(good), '\n')} {
		os.WriteFile(flipped, buf, 0o644)
		refused(t, []string{"plan file " + flipped + ": "}, "verify", flipped, "--evidence", ev, "--nonce", testNonce, "--allow-simulated")
	}
}

func TestDiffPlans(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.gelo")
	h := filepath.Join(dir, "h.gelo")
	ir := filepath.Join(dir, "a.ir")
	must(t, "compile", "--security", "gelo-8x4", "--out", a)
	must(t, "compile", "--out", h, "--mask", "haar")
	must(t, "compile", "--security", "gelo-8x4", "--out", ir)
	out, _ := must(t, "diff", a, h)
	for _, w := range []string{"plan header differences", "plan digest:", `numerics flag "mask": want "hd3", got "haar"`,
		"mask hd3", "IR digest:", `meta mask: "hd3" -> "haar"`} {
		if !strings.Contains(out, w) {
			t.Errorf("diff of two plans lacks %q:\n%s", w, out)
		}
	}
	out, _ = must(t, "diff", a, a)
	if !strings.Contains(out, "plan headers: identical") || !strings.Contains(out, "no structural differences") {
		t.Errorf("diff of a plan with itself:\n%s", out)
	}
	out, _ = must(t, "diff", a, ir)
	if !strings.Contains(out, "is a plan file") || !strings.Contains(out, "no structural differences") {
		t.Errorf("diff of a plan with its IR text:\n%s", out)
	}
}

// TestEditedPlansRefused: a measured binary refuses a plan its compiler
// would refuse. An IR artifact whose unmask undoes another slot than its
// mask, or a plan file resealed around that IR (section digests and
// trailer recomputed, identity intact), is refused by generate and by
// attest, naming the node.
func TestEditedPlansRefused(t *testing.T) {
	dir := t.TempDir()
	irPath := filepath.Join(dir, "a.ir")
	must(t, "compile", "--security", "gelo-8x4", "--out", irPath)
	text, _ := os.ReadFile(irPath)
	re := regexp.MustCompile(`(?m)^(  %\d+ = unmask %\d+, %\d+ \{family="hd3", slot=)0\}`)
	edited := re.ReplaceAllString(string(text), "${1}5}")
	edited = regexp.MustCompile(`(?m)^digest .*\n`).ReplaceAllString(edited, "")
	if edited == string(text) {
		t.Fatal("the edit changed nothing")
	}
	bad := filepath.Join(dir, "bad.ir")
	os.WriteFile(bad, []byte(edited), 0o644)
	refused(t, []string{"refusing to run " + bad, "unmask", "slot 5"}, generateArgs("--plan", bad)...)

	planPath, _ := sealed(t, dir, "p", "--security", "gelo-8x4")
	p, err := planfile.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ir.Parse(edited)
	if err != nil {
		t.Fatal(err)
	}
	p.SetModule(m)
	forged := filepath.Join(dir, "forged.gelo")
	os.WriteFile(forged, planfile.Encode(p), 0o644)
	refused(t, []string{"refusing", "slot 5"}, "attest", forged, "--nonce", testNonce, "--out", filepath.Join(dir, "f.ev"), "--simulated")
	refused(t, []string{"refusing", "slot 5"}, generateArgs("--plan", forged)...)
}

// tinyTokenizer is the smallest tokenizer.json the loader accepts: "ab" is
// one token with the merge, two without it.
func tinyTokenizer(merge bool) []byte {
	vocab, merges := `{"a":0,"b":1}`, `[]`
	if merge {
		vocab, merges = `{"a":0,"b":1,"ab":2}`, `[["a","b"]]`
	}
	return []byte(`{"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":false},"decoder":{"type":"ByteLevel"},` +
		`"model":{"type":"BPE","vocab":` + vocab + `,"merges":` + merges + `}}`)
}

// TestTokenizerIsTheFileUsed: --tokenizer DIR/other.json encodes with that
// file, a plan sealed with --tokenizer T encodes with T even when the model
// directory holds another tokenizer.json, and a file that is not a
// tokenizer is never sealed.
func TestTokenizerIsTheFileUsed(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := models.Variant("qwen3-tiny")
	m := filepath.Join(dir, "m")
	if err := models.WriteSynthetic(m, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(m, "tokenizer.json"), tinyTokenizer(false), 0o644)
	other := filepath.Join(m, "other.json")
	os.WriteFile(other, tinyTokenizer(true), 0o644)

	_, errs := must(t, "generate", "--model", m, "--tokenizer", other, "--prompt", "ab", "--max-tokens", "1")
	if !strings.Contains(errs, ": 1 prompt tokens") {
		t.Errorf("--tokenizer %s did not encode ab as one token:\n%s", other, errs)
	}
	_, errs = must(t, "generate", "--model", m, "--prompt", "ab", "--max-tokens", "1")
	if !strings.Contains(errs, ": 2 prompt tokens") {
		t.Errorf("the model directory's tokenizer did not encode ab as two tokens:\n%s", errs)
	}
	p := filepath.Join(dir, "p.gelo")
	must(t, "compile", "--model", m, "--tokenizer", other, "--out", p)
	_, errs = must(t, "generate", "--plan", p, "--prompt", "ab", "--max-tokens", "1")
	if !strings.Contains(errs, ": 1 prompt tokens") {
		t.Errorf("a plan sealed with %s did not encode with it:\n%s", other, errs)
	}
	bogus := filepath.Join(dir, "passwd")
	os.WriteFile(bogus, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644)
	refused(t, []string{bogus + " is not a usable tokenizer"}, "compile", "--model", m, "--tokenizer", bogus, "--out", filepath.Join(dir, "q.gelo"))
	if _, err := os.Stat(filepath.Join(dir, "q.gelo")); err == nil {
		t.Error("a refused compile left a plan file")
	}
}

// TestKVDTypePlan: --kv-dtype is recorded in the plan (meta, IR and the
// identity flags), printed by inspect, and a sealed f16 plan generates
// what the unsealed f16 compile does; a plan whose meta and IR disagree
// on it is refused, and so is an engine that keeps an f32 cache only.
func TestKVDTypePlan(t *testing.T) {
	dir := t.TempDir()
	plan, ev := sealed(t, dir, "kv", "--kv-dtype", "f16")
	must(t, "verify", plan, "--evidence", ev, "--nonce", testNonce, "--allow-simulated")
	insp, _ := must(t, "inspect", plan)
	for _, w := range []string{"kv cache: f16", "kv_dtype=f16", `name="k.0"} : f16[1,T,`} {
		if !strings.Contains(insp, w) {
			t.Errorf("inspect of an f16-cache plan lacks %q", w)
		}
	}
	unsealed, _ := must(t, generateArgs("--kv-dtype", "f16")...)
	got, errs := must(t, generateArgs("--plan", plan)...)
	if got != unsealed || !strings.Contains(errs, "kv cache f16") {
		t.Fatalf("sealed f16 plan generates %q (%q), the unsealed path %q", got, errs, unsealed)
	}
	p, err := planfile.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(dir, "forged.gelo")
	p.Passes.KVDType = "bf16"
	os.WriteFile(forged, planfile.Encode(p), 0o644)
	refused(t, []string{`meta kv_dtype is "f16", the meta section says "bf16"`}, generateArgs("--plan", forged)...)
	p.Passes.KVDType = ""
	os.WriteFile(forged, planfile.Encode(p), 0o644)
	refused(t, []string{"the IR's KV cache is f16, yet the meta section lists none"}, generateArgs("--plan", forged)...)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{generateArgs("--kv-dtype", "f8"), `--kv-dtype "f8": want f32, f16 or bf16`},
		{generateArgs("--kv-dtype", "bf16", "--backend", "gomlx", "--security", "none"), "--backend gomlx keeps an f32 KV cache"},
	} {
		if _, errs, code := gelo(t, tc.args...); code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("gelo %v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}
