package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// gelo export writes a GGUF file that generate runs with the tokens of the
// model it came from; sealing its plan is refused (naming why); bad
// export flags are usage errors.
func TestExportGGUF(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tiny.gguf")
	if o, errs, code := gelo(t, "export", "--model", "qwen3-tiny", "--gguf", out, "--type", "q8_0"); code != 0 || !strings.Contains(o, "as GGUF, q8_0 matrices") {
		t.Fatalf("export: exit %d\n%s%s", code, o, errs)
	}
	a, _, code := gelo(t, "generate", "--model", out, "--security", "none", "--weights", "q8_0", "--max-tokens", "8")
	if code != 0 {
		t.Fatalf("generate on the GGUF file: exit %d", code)
	}
	if first := strings.SplitN(a, "\n", 2)[0]; len(strings.Fields(first)) != 8 {
		t.Fatalf("generate printed %q", first)
	}
	// A sealed plan over the GGUF file runs, and binds it: another file
	// in its place is refused.
	planPath := filepath.Join(t.TempDir(), "p.gelo")
	if o, errs, code := gelo(t, "compile", "--model", out, "--security", "none", "--weights", "q8_0", "--out", planPath); code != 0 {
		t.Fatalf("compile --out: exit %d\n%s%s", code, o, errs)
	}
	b, _, code := gelo(t, "generate", "--plan", planPath, "--max-tokens", "8")
	if code != 0 || strings.SplitN(b, "\n", 2)[0] != strings.SplitN(a, "\n", 2)[0] {
		t.Fatalf("generate --plan: exit %d, %q, want %q", code, b, a)
	}
	if _, errs, code := gelo(t, "export", "--model", "qwen3-tiny", "--gguf", out, "--type", "q4_0"); code != 0 {
		t.Fatalf("re-export: %s", errs)
	}
	usageCase(t, 1, []string{"is not the one it was sealed for", "weights: " + out}, "generate", "--plan", planPath, "--max-tokens", "2")
	usageCase(t, 2, []string{"--gguf is required"}, "export")
	usageCase(t, 2, []string{`--type "q5_k"`}, "export", "--gguf", out+"2", "--type", "q5_k")
}

// TestExportBuiltin: gelo export with no --model writes the built-in
// trained model with its own tokenizer, and the GGUF file writes the same
// text from the default prompt as the built-in model does.
func TestExportBuiltin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "kjv.gguf")
	o, errs, code := gelo(t, "export", "--gguf", out)
	if code != 0 || !strings.Contains(o, "qwen3-kjv as GGUF, f32 matrices, tokenizer qwen3-kjv#tokenizer") {
		t.Fatalf("export: exit %d\n%s%s", code, o, errs)
	}
	want, errs, code := gelo(t, "generate", "--max-tokens", "8")
	if code != 0 {
		t.Fatal(errs)
	}
	got, errs, code := gelo(t, "generate", "--model", out, "--max-tokens", "8")
	if code != 0 || got != want || strings.TrimSpace(got) == "" {
		t.Fatalf("generate on the exported file: exit %d, %q, want the built-in model's %q\n%s", code, got, want, errs)
	}
}
