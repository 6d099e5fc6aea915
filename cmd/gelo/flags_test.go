package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gelo/ir"
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
		errs := usageCase(t, 2, []string{tc.want}, "generate", "--eos", tc.eos, "--max-tokens", "2")
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
