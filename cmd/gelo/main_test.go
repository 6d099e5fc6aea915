package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gelo/ir"
	"gelo/models"
)

func gelo(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestInspectIsDeterministic(t *testing.T) {
	a, _, code := gelo(t, "inspect", "--model", "qwen3-tiny", "--security", "gelo-8x4")
	if code != 0 {
		t.Fatalf("inspect exited %d", code)
	}
	b, _, _ := gelo(t, "inspect", "--model", "qwen3-tiny", "--security", "gelo-8x4")
	if a != b {
		t.Fatal("two inspects of qwen3-tiny differ")
	}
	for _, want := range []string{"graph prefill(n, T, S_n, S_1)", "graph decode(B, T, S_B)", "device matmuls per block: 2 blocks x 4, outside blocks 1", "placement table"} {
		if !strings.Contains(a, want) {
			t.Errorf("inspect output lacks %q", want)
		}
	}
}

func TestCompileInspectRoundTrip(t *testing.T) {
	dir := t.TempDir()
	art := filepath.Join(dir, "tiny.ir")
	if _, errs, code := gelo(t, "compile", "--out", art); code != 0 {
		t.Fatalf("compile: %s", errs)
	}
	direct, _, _ := gelo(t, "inspect")
	fromFile, errs, code := gelo(t, "inspect", art)
	if code != 0 {
		t.Fatalf("inspect %s: %s", art, errs)
	}
	if direct != fromFile {
		t.Error("inspect of the written artifact differs from inspect of a fresh compile")
	}
}

// TestDiffReportsChangedDimension compiles qwen3-tiny and the same model
// with a different intermediate size and checks the structural diff
// names exactly the nodes whose types change: per layer and phase the
// gate, up and down weights, the stacked gate|up weights and their
// matmul with its unmask and shield_strip, the fused swiglu, and the
// shield_stack and mask that send its product to the down projection
// (whose own output keeps its type). Prefill also centres its crossings
// with the mean row's product computed in the TEE, which adds per layer
// the TEE's f32 copies of the three weights, their stack, the gate|up
// mean product and its add_row, and the mean and centring of the
// product sent to down. In decode the gate|up strip is folded into the
// swiglu (fuse_epilogue), so only prefill keeps one.
func TestDiffReportsChangedDimension(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := models.Variant("qwen3-tiny")
	cfg.IntermediateSize = 96
	mdir := filepath.Join(dir, "wide")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mdir, "config.json"), cfg.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.ir"), filepath.Join(dir, "b.ir")
	if _, errs, code := gelo(t, "compile", "--model", "qwen3-tiny", "--security", "gelo-8x4", "--out", a); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := gelo(t, "compile", "--security", "gelo-8x4", "--model", mdir, "--out", b); code != 0 {
		t.Fatal(errs)
	}
	out, errs, code := gelo(t, "diff", a, b)
	if code != 0 {
		t.Fatal(errs)
	}
	ma, _ := readArtifact(a)
	mb, _ := readArtifact(b)
	var nodes, other int
	perOp := map[string]int{}
	for _, c := range ir.Diff(ma, mb) {
		switch {
		case c.What == ir.ChangeNode && c.Kind == ir.Changed:
			nodes++
			n := mb.Graph(c.Graph).Node(c.B)
			op := n.Op
			if op == "weight" {
				op, _ = n.Attrs.Str("name")
				op = op[strings.LastIndex(op[:len(op)-len(".weight")], ".")+1:]
			}
			perOp[op]++
		case c.What == ir.ChangeMeta:
		default:
			other++
			t.Errorf("unexpected change: %+v", c)
		}
	}
	// 2 layers x 2 phases.
	want := map[string]int{"gate_proj.weight": 6, "up_proj.weight": 6, "down_proj.weight": 6, "concat_weights": 6,
		"matmul": 6, "unmask": 4, "shield_strip": 2, "swiglu": 4, "shield_stack": 4, "mask": 4,
		"add_row": 2, "mean_rows": 2, "sub_row": 2, "probe": 4}
	if nodes != 58 || other != 0 || len(perOp) != len(want) {
		t.Errorf("diff reports %d changed nodes %v (want 58: %v)\n%s", nodes, perOp, want, out)
	}
	for op, n := range want {
		if perOp[op] != n {
			t.Errorf("%s: %d changed, want %d", op, perOp[op], n)
		}
	}
}

// trainedGolden is the greedy continuation of "In the beginning" by the
// built-in model, pinned by tests/trained_test.go.
const trainedGolden = "../../tests/testdata/trained_greedy.json"

// TestGenerateDefault: gelo generate with no flags runs the built-in
// trained model on its default prompt and prints text, streamed a token
// at a time as it is sampled: the greedy continuation the golden file
// pins, the same on every run. A synthetic variant, which has no
// tokenizer, still prints ids from default ids.
func TestGenerateDefault(t *testing.T) {
	var golden struct{ Prompt, Text string }
	b, err := os.ReadFile(trainedGolden)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &golden); err != nil || golden.Prompt != defaultText {
		t.Fatalf("%s: %v (prompt %q, want %q)", trainedGolden, err, golden.Prompt, defaultText)
	}
	var out writes
	var errb bytes.Buffer
	if code := run([]string{"generate"}, &out, &errb); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errb.String())
	}
	errs := errb.String()
	if got := strings.TrimSuffix(out.String(), "\n"); got != golden.Text {
		t.Errorf("generate printed %q, want the golden %q", got, golden.Text)
	}
	if !regexp.MustCompile(`^[ A-Za-z,.;:]*[A-Za-z]{3}`).MatchString(out.String()) {
		t.Errorf("generate printed %q: want words", out.String())
	}
	if out.n < 10 {
		t.Errorf("stdout took %d writes for 32 tokens: want the text streamed as it is sampled", out.n)
	}
	for _, want := range []string{`no prompt given: using "In the beginning"`, "model qwen3-kjv", "TTFT"} {
		if !strings.Contains(errs, want) {
			t.Errorf("generate stderr lacks %q: %q", want, errs)
		}
	}
	again, _, _ := gelo(t, "generate")
	if again != out.String() {
		t.Errorf("two runs differ: %q vs %q", out.String(), again)
	}

	ids, errs, code := gelo(t, "generate", "--model", "qwen3-tiny", "--max-tokens", "8")
	if code != 0 {
		t.Fatalf("generate --model qwen3-tiny: %s", errs)
	}
	if n := len(strings.Fields(ids)); n != 8 || !strings.Contains(errs, "using ids "+defaultPrompt) {
		t.Errorf("qwen3-tiny printed %d tokens, want 8 ids from the default ids: %q\n%s", n, ids, errs)
	}
}

// writes keeps what is written and counts the non-empty writes (it has
// no WriteString, so io.WriteString goes through Write too).
type writes struct {
	buf bytes.Buffer
	n   int
}

func (w *writes) Write(p []byte) (int, error) {
	if len(p) > 0 {
		w.n++
	}
	return w.buf.Write(p)
}

func (w *writes) String() string { return w.buf.String() }

func TestGenerateFromArtifactMatches(t *testing.T) {
	art := filepath.Join(t.TempDir(), "tiny.ir")
	if _, errs, code := gelo(t, "compile", "--out", art); code != 0 {
		t.Fatal(errs)
	}
	a, _, _ := gelo(t, "generate", "--prompt-ids", "5,6,7", "--max-tokens", "6")
	b, errs, code := gelo(t, "generate", "--plan", art, "--prompt-ids", "5,6,7", "--max-tokens", "6")
	if code != 0 || a != b {
		t.Errorf("artifact run %q (%s) differs from on-the-fly %q", b, errs, a)
	}
}

func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.ir")
	os.WriteFile(bad, []byte("gelo-ir v1\ngraph g() {\n  %0 = matmull\n}\n"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"frobnicate"}, 2, `unknown verb "frobnicate"`},
		{[]string{"generate", "--prompt-ids", "1,x"}, 2, `"x" is not a token id`},
		{[]string{"generate", "--max-tokens", "0"}, 2, "--max-tokens must be positive"},
		{[]string{"generate", "--prompt-ids", "99999"}, 1, "token 99999 at index 0 is outside the vocabulary"},
		{[]string{"generate", "--model", "qwen9"}, 1, `unknown variant "qwen9"`},
		{[]string{"generate", "--model", dir}, 1, "config.json"},
		{[]string{"generate", "--no-such-flag"}, 2, "flag provided but not defined"},
		{[]string{"compile", "--dump-after", "plcae"}, 1, "--dump-after=plcae: no such pass"},
		{[]string{"inspect", bad}, 1, bad + ": line 3"},
		{[]string{"inspect", filepath.Join(dir, "missing.ir")}, 1, "missing.ir"},
		{[]string{"diff", bad}, 2, "diff takes two artifacts"},
		{[]string{"synth"}, 2, "--out is required"},
		{[]string{"synth", "--variant", "qwen3-99b", "--out", dir}, 2, `unknown variant "qwen3-99b"`},
		// A prompt longer than the context is a usage error, found before the model loads.
		{[]string{"generate", "--prompt-ids", "1,2,3,4,5", "--max-context", "4"}, 2, "a prompt of 5 tokens does not fit --max-context 4"},
	}
	for _, tc := range cases {
		_, errs, code := gelo(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("gelo %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

func TestDumpAfter(t *testing.T) {
	_, errs, code := gelo(t, "compile", "--dump-after", "trace,place")
	if code != 0 {
		t.Fatal(errs)
	}
	for _, want := range []string{"IR after trace", "IR after place"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
}

func TestGenerateBatchAndSampling(t *testing.T) {
	out, errs, code := gelo(t, "generate", "--prompt-ids", "1,2,3;4,5", "--max-tokens", "4")
	if code != 0 || !strings.Contains(out, "[0]") || !strings.Contains(out, "[1]") {
		t.Fatalf("batch generate: exit %d, %q, %s", code, out, errs)
	}
	a, _, _ := gelo(t, "generate", "--temperature", "0.9", "--sample-seed", "4", "--max-tokens", "8")
	b, _, _ := gelo(t, "generate", "--temperature", "0.9", "--sample-seed", "4", "--max-tokens", "8")
	if a != b {
		t.Errorf("same --sample-seed, different tokens: %q vs %q", a, b)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "--temperature", "-1"}, "temperature -1 must be >= 0"},
		{[]string{"generate", "--top-p", "1.5"}, "top-p 1.5 must be in (0, 1]"},
		{[]string{"generate", "--model", "qwen3-tiny", "--prompt", "hi"}, "need a tokenizer"},
		{[]string{"generate", "--prompt", "hi", "--prompt-ids", "1"}, "give one of"},
		{[]string{"compile", "--weights", "q3_k"}, `--weights "q3_k"`},
		{[]string{"compile", "--no-fuse", "bogus"}, "--no-fuse=bogus: no such fusion"},
		{[]string{"compile", "--topology", "mesh"}, `--topology "mesh"`},
	} {
		_, errs, code := gelo(t, tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("gelo %v: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestGenerateText runs text in, text out with the real Qwen3 tokenizer
// on a 2-layer model of the 0.6B widths (whose vocabulary covers it).
func TestGenerateText(t *testing.T) {
	tokDir := filepath.Join("..", "..", "..", "shared", "tokenizers", "qwen3")
	if _, err := os.Stat(filepath.Join(tokDir, "tokenizer.json")); err != nil {
		t.Skipf("Qwen3 tokenizer files not found at %s: skipping the text round trip", tokDir)
	}
	dir := t.TempDir()
	if _, errs, code := gelo(t, "synth", "--variant", "qwen3-0.6b", "--layers", "1", "--out", dir); code != 0 {
		t.Fatal(errs)
	}
	out, errs, code := gelo(t, "generate", "--model", dir, "--tokenizer", tokDir, "--chat", "Hello", "--max-tokens", "5", "--show-ids")
	if code != 0 || !strings.Contains(out, "ids: [") {
		t.Fatalf("chat generate: exit %d, %q, %s", code, out, errs)
	}
	if !strings.Contains(errs, "prompt tokens") {
		t.Errorf("stderr: %q", errs)
	}
}

// TestDeviceFlag: the gomlx device gives the local device's tokens, and
// an XLA device without XLA support is a clear error.
func TestDeviceFlag(t *testing.T) {
	local, _, _ := gelo(t, "generate", "--max-tokens", "6", "--session-key", "000102030405060708090a0b0c0d0e0f")
	g, errs, code := gelo(t, "generate", "--max-tokens", "6", "--device", "gomlx:go", "--session-key", "000102030405060708090a0b0c0d0e0f")
	if code != 0 || g != local {
		t.Errorf("gomlx:go device: %q (%s), local %q", g, errs, local)
	}
	_, errs, code = gelo(t, "generate", "--device", "gomlx:xla:cpu")
	if code == 0 || !(strings.Contains(errs, "XLA") || strings.Contains(errs, "PJRT")) {
		t.Errorf("xla device: exit %d, %q", code, errs)
	}
	if _, errs, code = gelo(t, "generate", "--device", "tpu"); code != 2 || !strings.Contains(errs, `--device "tpu"`) {
		t.Errorf("bad device: exit %d, %q", code, errs)
	}
}

// TestBackendGomlx: the whole unprotected forward on gomlx gives the cpu
// backend's tokens; a protected plan on --backend gomlx keeps its TEE side
// on the cpu kernels and its device side on gomlx, with the same tokens.
func TestBackendGomlx(t *testing.T) {
	for _, mask := range []string{"none", "hd3"} {
		args := []string{"generate", "--mask", mask, "--max-tokens", "6", "--session-key", "000102030405060708090a0b0c0d0e0f"}
		want, _, _ := gelo(t, args...)
		got, errs, code := gelo(t, append(args, "--backend", "gomlx")...)
		if code != 0 || got != want {
			t.Errorf("mask %s: gomlx %q (%s), cpu %q", mask, got, errs, want)
		}
	}
	if _, errs, code := gelo(t, "generate", "--backend", "tpu"); code != 2 || !strings.Contains(errs, `--backend "tpu"`) {
		t.Errorf("bad backend: exit %d, %q", code, errs)
	}
}
