package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gelo/ir"
	"gelo/models"
)

// TestEmptyFlagValue: a flag given an empty value is a usage error naming
// it, on every verb: --mask "" or --shield "" used to turn the default
// exact level into an insecure custom one (INSECURE banner, exit 0).
func TestEmptyFlagValue(t *testing.T) {
	for _, args := range [][]string{
		{"generate", "--mask", ""},
		{"generate", "--shield="},
		{"generate", "--security", ""},
		{"compile", "--cadence", ""},
		{"inspect", "--weights", ""},
		{"serve", "--model", "", "--plain-http"},
		{"bench", "--masks", ""},
		{"generate", "--session-key", ""},
	} {
		name := strings.TrimPrefix(strings.SplitN(args[1], "=", 2)[0], "--")
		usageCase(t, 2, []string{"--" + name + " is empty"}, args...)
	}
}

// TestEOSFlag: --eos takes non-negative token ids inside the vocabulary;
// a bad one is a usage error naming --eos (it was reported as a
// --prompt-ids error, and -1 was accepted).
func TestEOSFlag(t *testing.T) {
	for _, tc := range []struct {
		eos, want string
	}{
		{"abc", `--eos: "abc" is not a token id`},
		{"-1", `--eos: "-1" is not a token id`},
		{"3,99999", "--eos 99999 is outside the vocabulary of 512 tokens"},
	} {
		errs := usageCase(t, 2, []string{tc.want}, "generate", "--model", "qwen3-tiny", "--eos", tc.eos, "--max-tokens", "2")
		if strings.Contains(errs, "--prompt-ids") {
			t.Errorf("--eos %s: blamed on --prompt-ids: %s", tc.eos, errs)
		}
	}
	must(t, "generate", "--eos", "3", "--max-tokens", "2")
}

// TestNaNAttributeRefused: an IR artifact whose attention scale is NaN
// is refused before it runs, naming the node and the attribute (it ran
// into NaN logits or a shield error far from the cause).
func TestNaNAttributeRefused(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ir")
	must(t, "compile", "--out", good)
	text, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ir.Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	set := false
	for _, g := range m.Graphs {
		for _, n := range g.Nodes {
			if _, ok := n.Attrs.Float("scale"); ok && n.Op == ir.OpAttention && !set {
				n.Attrs["scale"] = math.NaN()
				set = true
			}
		}
	}
	if !set {
		t.Fatal("no attention node with a scale")
	}
	bad := filepath.Join(dir, "nan.ir")
	if err := os.WriteFile(bad, []byte(ir.Print(m)), 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, []string{"attention: attribute scale is NaN"}, "generate", "--plan", bad, "--max-tokens", "2")
}

// TestLongPromptBoundedByContext: a text prompt far over --max-context is
// refused from its length before it is tokenized (a 10 MB prompt was
// tokenized in full, 690 MB, before the context check), and the refusal
// says by how much.
func TestLongPromptBoundedByContext(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	cfg, _ := models.Variant("qwen3-tiny")
	if err := models.WriteSynthetic(m, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(m, "tokenizer.json"), byteTokenizer(), 0o644)
	long := filepath.Join(dir, "long.txt")
	os.WriteFile(long, []byte(strings.Repeat("x", 1<<20)), 0o644)
	usageCase(t, 2, []string{"a prompt of 1048576 bytes is at least", "does not fit --max-context 128"},
		"generate", "--model", m, "--prompt-file", long, "--max-context", "128", "--max-tokens", "1")
	usageCase(t, 2, []string{"a prompt of 1048", "does not fit --max-context 128"},
		"generate", "--model", m, "--chat", strings.Repeat("y", 1<<20), "--max-context", "128", "--max-tokens", "1")
	must(t, "generate", "--model", m, "--prompt", "hello", "--max-context", "128", "--max-tokens", "1")
}

// TestBenchMasksCheckedFirst: a bad --masks entry is refused before the
// model loads and the machine is probed (it was refused after a 2 s
// bandwidth probe): nothing is printed.
func TestBenchMasksCheckedFirst(t *testing.T) {
	out, errs, code := gelo(t, "bench", "--suite", "masks", "--masks", "none,bogus", "--prefill", "4", "--decode", "1")
	if code != 2 || !strings.Contains(errs, `"bogus"`) || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q: want a usage error naming bogus and nothing measured", code, out, errs)
	}
}
