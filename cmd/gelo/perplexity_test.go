package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gelo/eval"
)

// idText writes n pseudo-random token ids of qwen3-tiny's vocabulary.
func idText(t *testing.T, n int) string { return idTextSeed(t, n, 7) }

func idTextSeed(t *testing.T, n int, seed uint32) string {
	t.Helper()
	var b strings.Builder
	x := seed
	for i := range n {
		x = x*1664525 + 1013904223
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, (x>>8)%512)
	}
	p := filepath.Join(t.TempDir(), "ids.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var kldLine = regexp.MustCompile(`Mean    KLD: +([0-9.e+-]+)`)
var topLine = regexp.MustCompile(`Same top p : +([0-9.]+)`)

// klOf reads the mean KLD and top-1 percentage from the report.
func klOf(t *testing.T, out string) (kld, top float64) {
	t.Helper()
	a, b := kldLine.FindStringSubmatch(out), topLine.FindStringSubmatch(out)
	if a == nil || b == nil {
		t.Fatalf("no KL report in:\n%s", out)
	}
	kld, _ = strconv.ParseFloat(a[1], 64)
	top, _ = strconv.ParseFloat(b[1], 64)
	return kld, top
}

// TestPerplexityVerb: the report as llama-perplexity prints it, a saved
// run against itself (KL 0, top-1 100 %), and q8_0 against it (KL > 0).
func TestPerplexityVerb(t *testing.T) {
	text := idText(t, 300)
	base := filepath.Join(t.TempDir(), "f32.logits")
	common := []string{"perplexity", "--model", "qwen3-tiny", "--text", text, "--ids", "--ctx", "64", "--batch", "16", "--security", "none"}
	out, errs, code := gelo(t, append(common, "--save-logits", base)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !regexp.MustCompile(`^\[1\][0-9.]+,\[2\][0-9.]+,\[3\][0-9.]+,\[4\][0-9.]+,\nFinal estimate: PPL = [0-9.]+ \+/- [0-9.]+\n$`).MatchString(out) {
		t.Errorf("report:\n%s", out)
	}
	if !strings.Contains(errs, "300 tokens, 4 windows of 64 (scoring 31 each), batch 16") {
		t.Errorf("stderr: %s", errs)
	}
	st, err := os.Stat(base)
	if err != nil || st.Size() != 32+4*31*(4+512*4) {
		t.Fatalf("saved file: %v, %v", st, err)
	}
	for _, tc := range []struct {
		args []string
		zero bool
	}{
		{nil, true},
		{[]string{"--batch", "64"}, true},
		{[]string{"--weights", "q8_0"}, false},
	} {
		out, errs, code := gelo(t, append(append(common, "--kl-base", base), tc.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errs)
		}
		kld, top := klOf(t, out)
		if tc.zero && (kld != 0 || top != 100) {
			t.Errorf("%v against itself: KLD %v, top-1 %v %%", tc.args, kld, top)
		}
		if !tc.zero && !(kld > 0 && kld < 0.05 && top > 80) {
			t.Errorf("%v: KLD %v, top-1 %v %%: want 0 < KLD < 0.05 and top-1 > 80 %%", tc.args, kld, top)
		}
		if !strings.Contains(out, "Worst token: text position ") {
			t.Errorf("%v: no worst token in:\n%s", tc.args, out)
		}
	}
}

// TestPerplexityText: text through the Qwen3 tokenizer, on a synthetic
// model with Qwen3's vocabulary, as the README's serving example builds
// one.
func TestPerplexityText(t *testing.T) {
	tokDir := "../../../shared/tokenizers/qwen3"
	if _, err := os.Stat(filepath.Join(tokDir, "tokenizer.json")); err != nil {
		t.Skipf("no Qwen3 tokenizer at %s", tokDir)
	}
	dir := filepath.Join(t.TempDir(), "model")
	if _, errs, code := gelo(t, "synth", "--variant", "qwen3-tiny", "--vocab", "151936", "--out", dir); code != 0 {
		t.Fatalf("synth: %s", errs)
	}
	text := filepath.Join(t.TempDir(), "text.txt")
	words := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 30)
	if err := os.WriteFile(text, []byte(words), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := gelo(t, "perplexity", "--model", dir, "--tokenizer", tokDir, "--text", text, "--ctx", "128", "--batch", "32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "Final estimate: PPL = ") || !strings.Contains(errs, "windows of 128 (scoring 63 each)") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errs)
	}
	// The same text without a tokenizer: the model directory has none.
	_, errs, code = gelo(t, "perplexity", "--model", dir, "--text", text, "--ctx", "128")
	if code != 2 || !strings.Contains(errs, "--text needs a tokenizer") {
		t.Errorf("no tokenizer: exit %d: %s", code, errs)
	}
}

// TestPerplexityRefuses: bad inputs are errors that say what is wrong,
// and a failed run leaves no --save-logits file behind.
func TestPerplexityRefuses(t *testing.T) {
	dir := t.TempDir()
	text := idText(t, 200)
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte(" \n"), 0o644)
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("1, 2, 512"), 0o644)
	good := filepath.Join(dir, "good.logits")
	if _, errs, code := gelo(t, "perplexity", "--model", "qwen3-tiny", "--text", text, "--ids", "--ctx", "64", "--security", "none", "--save-logits", good); code != 0 {
		t.Fatal(errs)
	}
	data, _ := os.ReadFile(good)
	truncated := filepath.Join(dir, "truncated.logits")
	os.WriteFile(truncated, data[:len(data)-100], 0o644)
	otherVocab := filepath.Join(dir, "vocab1000.logits")
	writeZeroLogits(t, otherVocab, eval.Header{DType: eval.F16, Vocab: 1000, Ctx: 64, Count: 3 * 31})
	saveTo := filepath.Join(dir, "never.logits")
	text2 := idTextSeed(t, 200, 8) // another text of the same length
	base := []string{"perplexity", "--model", "qwen3-tiny", "--ids", "--security", "none"}
	for _, tc := range []struct {
		name string
		code int
		args []string
		want string
	}{
		{"no text", 2, []string{"--ctx", "64"}, "--text FILE (or -) is required"},
		{"max-context", 2, []string{"--text", text, "--max-context", "128"}, "set its size with --ctx"},
		{"empty text", 2, []string{"--text", empty}, "is empty"},
		{"missing text", 1, []string{"--text", filepath.Join(dir, "none")}, "no such file"},
		{"short text", 2, []string{"--text", text, "--ctx", "256"}, "is 200 tokens: fewer than one window of --ctx 256"},
		{"ctx past the model", 2, []string{"--text", text, "--ctx", "5000"}, "--ctx 5000 is larger than the model's context of 4096 tokens"},
		{"ctx too small", 2, []string{"--text", text, "--ctx", "2"}, "want --ctx >= 3"},
		{"id outside", 2, []string{"--text", bad, "--ctx", "3"}, `field 3 "512" is not a token id in [0, 512)`},
		{"text, no tokenizer", 2, []string{"--text", text, "--ids=false"}, "--text needs a tokenizer"},
		{"logits dtype", 2, []string{"--text", text, "--logits-dtype", "bf16"}, `logits dtype "bf16"`},
		{"same file", 2, []string{"--text", text, "--save-logits", good, "--kl-base", good}, "name the same file"},
		{"truncated base", 1, []string{"--text", text, "--ctx", "64", "--kl-base", truncated}, "truncated: 190768 bytes, but its header (vocab 512, ctx 64, 93 scored tokens, f32) needs 190868"},
		{"other vocabulary", 2, []string{"--text", text, "--ctx", "64", "--kl-base", otherVocab, "--save-logits", saveTo}, "saved with vocab 1000 and --ctx 64; this run has vocab 512 and --ctx 64"},
		{"other ctx", 2, []string{"--text", text, "--ctx", "32", "--kl-base", good}, "saved with vocab 512 and --ctx 64; this run has vocab 512 and --ctx 32"},
		{"other text", 1, []string{"--text", text2, "--ctx", "64", "--kl-base", good, "--save-logits", saveTo}, "(not the same text)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := gelo(t, append(base, tc.args...)...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, want %d; stderr %s, want %q", code, tc.code, errs, tc.want)
			}
		})
	}
	if _, err := os.Stat(saveTo); err == nil {
		t.Error("a failed run left its --save-logits file")
	}
	if m, _ := filepath.Glob(saveTo + "*"); len(m) > 0 {
		t.Errorf("a failed run left %v", m)
	}
}

// writeZeroLogits writes a valid saved-logits file of flat rows.
func writeZeroLogits(t *testing.T, path string, h eval.Header) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lw, err := eval.NewLogitsWriter(f, h)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float32, h.Vocab)
	for range h.Count {
		if err := lw.Write(0, row); err != nil {
			t.Fatal(err)
		}
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPerplexityStdin: --text - reads standard input.
func TestPerplexityStdin(t *testing.T) {
	data, err := os.ReadFile(idText(t, 70))
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.Write(data); w.Close() }()
	defer func(old *os.File) { os.Stdin = old }(os.Stdin)
	os.Stdin = r
	out, errs, code := gelo(t, "perplexity", "--text", "-", "--ids", "--ctx", "32", "--security", "none")
	if code != 0 || !strings.HasPrefix(out, "[1]") || !strings.Contains(errs, "70 tokens, 2 windows of 32") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}
