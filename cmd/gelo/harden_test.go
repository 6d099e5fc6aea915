package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gelo/models"
	"gelo/models/safetensors"
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
		{[]string{"--kv-dtype", "fixes these"}, []string{"generate", "--plan", p, "--kv-dtype", "bf16"}},
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

// TestBoundsBeforeAllocation: every count is range-checked and the memory
// a run needs is computed before anything is allocated; a count out of
// range is a usage error (exit 2), a run above the memory limit exit 1,
// and nothing panics or dies of memory.
func TestBoundsBeforeAllocation(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		code  int
		wants []string
		args  []string
	}{
		{2, []string{"--max-tokens 9223372036854775807 can never be reached"}, []string{"generate", "--max-tokens", "9223372036854775807"}},
		{2, []string{"invalid value \"1e9\""}, []string{"generate", "--max-tokens", "1e9"}},
		{2, []string{"--max-context 1099511627776 is outside [1, 4096]"}, []string{"generate", "--max-context", "1099511627776"}},
		{2, []string{"--max-context 4611686018427387904 is outside"}, []string{"generate", "--max-context", "4611686018427387904"}},
		{2, []string{"--max-context 4097 is outside [1, 4096] (the model's max_position_embeddings)"}, []string{"generate", "--max-context", "4097"}},
		{2, []string{"--workers 1000000 is outside [0, 1024]"}, []string{"generate", "--workers", "1000000"}},
		{2, []string{"--shield 1000000 rows is outside [0, 65536]"}, []string{"generate", "--shield", "1000000,4"}},
		{2, []string{"--workers 1000000"}, []string{"replay", "--workers", "1000000"}},
		{2, []string{"--max-context 1099511627776"}, []string{"record", "--out", filepath.Join(dir, "r.safetensors"), "--max-context", "1099511627776"}},
		{2, []string{"--max-memory: \"lots\" is not a size"}, []string{"generate", "--max-memory", "lots"}},
		{1, []string{"needs about", "above the --max-memory of 1.0 MiB", "lower --max-context"}, []string{"generate", "--max-memory", "1M"}},
		// The 8B built-in is refused before its 32 GB are synthesized.
		{1, []string{"needs about 3", "weights 30.5 GiB", "above the --max-memory of 1.0 GiB"}, []string{"generate", "--model", "qwen3-8b", "--max-memory", "1G"}},
		{1, []string{"needs about", "above the --max-memory"}, []string{"compile", "--model", "qwen3-8b", "--max-memory", "1G", "--out", filepath.Join(dir, "8b.gelo")}},
	} {
		usageCase(t, tc.code, tc.wants, tc.args...)
	}

	// synth: a layer count out of range leaves no directory behind.
	out := filepath.Join(dir, "big")
	usageCase(t, 2, []string{"num_hidden_layers: 1000000000 exceeds 4096"}, "synth", "--layers", "1000000000", "--out", out)
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused synth left its output directory")
	}
	// A config with 2^40 layers is refused naming the field.
	cfg, _ := models.Variant("qwen3-tiny")
	m := filepath.Join(dir, "m")
	if err := models.WriteSynthetic(m, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(m, "config.json"))
	big := strings.Replace(string(raw), `"num_hidden_layers": 2`, `"num_hidden_layers": 1099511627776`, 1)
	if big == string(raw) {
		t.Fatalf("config has no num_hidden_layers 2:\n%s", raw)
	}
	os.WriteFile(filepath.Join(m, "config.json"), []byte(big), 0o644)
	usageCase(t, 1, []string{"num_hidden_layers: 1099511627776 exceeds 4096"}, "generate", "--model", m)
	usageCase(t, 1, []string{"num_hidden_layers: 1099511627776 exceeds 4096"}, "compile", "--model", m)

	// k_min far above any shield in IR text: refused naming the node.
	irPath := filepath.Join(dir, "a.ir")
	must(t, "compile", "--security", "gelo-8x4", "--out", irPath)
	text, _ := os.ReadFile(irPath)
	// Without its digest line it reads as hand-written IR.
	lines := strings.SplitN(string(text), "\n", 3)
	edited := lines[0] + "\n" + strings.Replace(lines[2], "k_min=8", "k_min=100000000", 1)
	os.WriteFile(irPath, []byte(edited), 0o644)
	usageCase(t, 1, []string{"k_min 100000000 is outside [0, 65536]", "shield_stack"}, "generate", "--plan", irPath)
}

// TestOutputNotReplaced: --out that is a FIFO or a symbolic link is
// refused before any work (exit 2) and left as it was; the library writer
// refuses them too (a device such as /dev/full the same way).
func TestOutputNotReplaced(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	target := filepath.Join(dir, "target.ir")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link.ir")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	linkPlan := filepath.Join(dir, "link.gelo")
	os.Symlink(target, linkPlan)
	for _, tc := range []struct {
		want string
		args []string
	}{
		{"it is a named pipe", []string{"compile", "--out", fifo}},
		{"it is a symbolic link", []string{"compile", "--out", link}},
		{"it is a symbolic link", []string{"compile", "--out", linkPlan}},
		{"it is a named pipe", []string{"record", "--out", fifo}},
	} {
		usageCase(t, 2, []string{tc.want}, tc.args...)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target changed: %q", b)
	}
	// A device is only ever Lstat-ed here: a test must not risk writing
	// onto a real one.
	if st, err := os.Lstat("/dev/null"); err == nil && st.Mode()&os.ModeDevice != 0 {
		if err := safetensors.Replaceable("/dev/null"); err == nil || !strings.Contains(err.Error(), "it is a device") {
			t.Errorf("Replaceable(/dev/null): %v", err)
		}
	}
	if err := writeAtomic(fifo, []byte("x")); err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("writeAtomic onto a FIFO: %v", err)
	}
	// A regular file and a new path are written.
	must(t, "compile", "--out", target)
	must(t, "compile", "--out", filepath.Join(dir, "new.ir"))
}

// TestPromptFileAndSafeChat: --prompt-file reads the prompt (the same
// tokens as --prompt), an empty one is a usage error, and --chat encodes
// message text as text unless --chat-raw.
func TestPromptFileAndSafeChat(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := models.Variant("qwen3-tiny")
	m := filepath.Join(dir, "m")
	if err := models.WriteSynthetic(m, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(m, "tokenizer.json"), tinyTokenizer(true), 0o644)
	pf := filepath.Join(dir, "prompt.txt")
	os.WriteFile(pf, []byte("abab"), 0o644)
	a, errs := must(t, "generate", "--model", m, "--prompt-file", pf, "--max-tokens", "2")
	if !strings.Contains(errs, ": 2 prompt tokens") {
		t.Errorf("--prompt-file abab:\n%s", errs)
	}
	b, _ := must(t, "generate", "--model", m, "--prompt", "abab", "--max-tokens", "2")
	if a != b {
		t.Errorf("--prompt-file %q vs --prompt %q", a, b)
	}
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, nil, 0o644)
	usageCase(t, 2, []string{"--prompt-file " + empty + " is empty"}, "generate", "--model", m, "--prompt-file", empty)
	usageCase(t, 2, []string{"give one of --prompt and --prompt-file"}, "generate", "--prompt", "x", "--prompt-file", pf)
	usageCase(t, 1, []string{"missing.txt"}, "generate", "--prompt-file", filepath.Join(dir, "missing.txt"))
	usageCase(t, 2, []string{"--chat-raw applies only with --chat"}, "generate", "--chat-raw")
}

// TestBenchPreflightSequences: the memory preflight of bench counts B
// sequences of KV cache only for the suites that decode a batch; the masks
// suite holds one (before, a long-context masks run was refused for the
// batch suite's slots).
func TestBenchPreflightSequences(t *testing.T) {
	kv := func(suite string) string {
		errs := usageCase(t, 1, []string{"needs about", "above the --max-memory"},
			"bench", "--suite", suite, "--batch", "8", "--max-memory", "1K")
		_, rest, ok := strings.Cut(errs, "KV cache ")
		if !ok {
			t.Fatalf("bench --suite %s: no KV cache figure:\n%s", suite, errs)
		}
		size, _, _ := strings.Cut(rest, ",")
		return size
	}
	masks, batch := kv("masks"), kv("batch")
	if masks == batch {
		t.Fatalf("masks and batch suites preflight the same KV cache (%s)", masks)
	}
	var m, b float64
	var mu, bu string
	fmt.Sscanf(masks, "%g %s", &m, &mu)
	fmt.Sscanf(batch, "%g %s", &b, &bu)
	if mu == bu && b < 7*m {
		t.Fatalf("batch suite KV %s is not about 8 times the masks suite's %s", batch, masks)
	}
}
