package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// usageCase runs gelo and expects exit code code with every want on stderr.
func usageCase(t *testing.T, code int, wants []string, args ...string) string {
	t.Helper()
	_, errs, got := gelo(t, args...)
	if got != code {
		t.Fatalf("gelo %s: exit %d, want %d\n%s", strings.Join(args, " "), got, code, errs)
	}
	for _, w := range wants {
		if !strings.Contains(errs, w) {
			t.Fatalf("gelo %s: stderr does not say %q:\n%s", strings.Join(args, " "), w, errs)
		}
	}
	if strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine ") {
		t.Fatalf("gelo %s panicked:\n%s", strings.Join(args, " "), errs)
	}
	return errs
}

// TestNothingIgnored: input gelo would have ignored or replaced without a
// word is a usage error (exit 2) naming it, before any model loads.
func TestNothingIgnored(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.gelo")
	must(t, "compile", "--out", p)
	for _, tc := range []struct {
		wants []string
		args  []string
	}{
		{[]string{`unexpected argument "extra"`}, []string{"generate", "--prompt-ids", "1,2,3", "extra", "--max-tokens", "2"}},
		{[]string{`unexpected argument "x"`}, []string{"compile", "x"}},
		{[]string{`unexpected argument "x"`}, []string{"replay", "x"}},
		{[]string{`unexpected argument "x"`}, []string{"synth", "x"}},
		{[]string{"--mask", "--weights", "fixes these"}, []string{"generate", "--plan", p, "--mask", "hd3", "--weights", "q8_0"}},
		{[]string{"--no-fuse", "fixes these"}, []string{"generate", "--plan", p, "--no-fuse", "all"}},
		{[]string{"--system applies only with --chat"}, []string{"generate", "--system", "be terse"}},
		{[]string{"--think applies only with --chat"}, []string{"generate", "--think"}},
		{[]string{"--prompt-ids is empty"}, []string{"generate", "--prompt-ids", ""}},
		{[]string{"--chat is empty"}, []string{"generate", "--chat", ""}},
		{[]string{"--prompt is empty"}, []string{"generate", "--prompt", ""}},
	} {
		errs := usageCase(t, 2, tc.wants, tc.args...)
		if strings.Contains(errs, "load ") || strings.Contains(errs, "verified") {
			t.Errorf("gelo %s: refused only after loading the model:\n%s", strings.Join(tc.args, " "), errs)
		}
	}
}

// TestFinishReason: a generation cut at the context says so on stderr
// (exit 0: the tokens are valid), naming the flag; one that reaches
// --max-tokens says that; in a batch each sequence stops on its own.
func TestFinishReason(t *testing.T) {
	out, errs, code := gelo(t, "generate", "--prompt-ids", "1,2,3", "--max-context", "5", "--max-tokens", "10")
	if code != 0 || len(strings.Fields(out)) != 3 ||
		!strings.Contains(errs, "finish reason length: the context of 5 tokens is full after 3 new tokens (raise --max-context)") {
		t.Fatalf("exit %d, out %q:\n%s", code, out, errs)
	}
	_, errs = must(t, "generate", "--prompt-ids", "1,2,3", "--max-tokens", "2")
	if !strings.Contains(errs, "finish reason length: --max-tokens 2 reached") {
		t.Fatalf("max tokens:\n%s", errs)
	}
	out, errs = must(t, "generate", "--prompt-ids", "1,2,3,4,5,6;7", "--max-context", "8", "--max-tokens", "6")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || len(strings.Fields(lines[0])) != 1+3 || len(strings.Fields(lines[1])) != 1+6 {
		t.Fatalf("batch output %q", out)
	}
	if !strings.Contains(errs, "[0] finish reason length: the context of 8 tokens is full") || !strings.Contains(errs, "[1] finish reason length: --max-tokens 6 reached") {
		t.Fatalf("batch finish reasons:\n%s", errs)
	}
}
