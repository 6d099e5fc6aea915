package runtime_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

// countingBackend counts the decode graphs compiled, to tell a captured
// step (compiled once per kv bucket) from an eager one (every step).
type countingBackend struct {
	runtime.Backend
	decodes int
}

func (c *countingBackend) Compile(g *ir.Graph, bind map[string]int) (runtime.Executable, error) {
	if g.Name == "decode" {
		c.decodes++
	}
	return c.Backend.Compile(g, bind)
}

func tinyModule(t *testing.T) (*ir.Module, *models.Weights) {
	t.Helper()
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, err := models.SynthesizeAs(cfg, 9, "f32")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.Trace(cfg, models.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.Pipeline(passes.DefaultProtect()).Run(m); err != nil {
		t.Fatal(err)
	}
	return m, w
}

func countingCPU(t *testing.T, w *models.Weights) *countingBackend {
	be := cpu.New(w, cpu.Options{SessionKey: []byte("gelo runtime test key")})
	t.Cleanup(be.Close)
	return &countingBackend{Backend: runtime.Adapt(be.Name(), be.Compile)}
}

// TestBatchEager: a Batch honours Options.Eager (it used to ignore it and
// capture anyway): eager lowers every decode step anew, captured once per
// kv bucket, and the logits are bit-identical.
func TestBatchEager(t *testing.T) {
	m, w := tinyModule(t)
	prompts := [][]int32{{1, 2, 3}, {7}, {5, 9}}
	const steps = 5
	run := func(eager bool) ([][]float32, int) {
		be := countingCPU(t, w)
		bt, err := runtime.NewBatch(m, be, len(prompts), runtime.Options{MaxContext: 32, Eager: eager})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range prompts {
			if _, err := bt.Prefill(i, p); err != nil {
				t.Fatal(err)
			}
		}
		var out [][]float32
		toks := []int32{4, 5, 6}
		for range steps {
			l, err := bt.Decode(toks)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, slices.Clone(l))
		}
		return out, be.decodes
	}
	eager, ne := run(true)
	captured, nc := run(false)
	if ne != steps || nc != 1 {
		t.Fatalf("decode compiles: eager %d (want %d), captured %d (want 1)", ne, steps, nc)
	}
	for s := range eager {
		for j := range eager[s] {
			if math.Float32bits(eager[s][j]) != math.Float32bits(captured[s][j]) {
				t.Fatalf("step %d logit %d: eager %v, replayed %v", s, j, eager[s][j], captured[s][j])
			}
		}
	}
}

// TestSessionIsBatchOfOne: a Session and a Batch of size 1 over the same
// plan and key give the same bits, step for step.
func TestSessionIsBatchOfOne(t *testing.T) {
	m, w := tinyModule(t)
	s, err := runtime.NewSession(m, countingCPU(t, w), runtime.Options{MaxContext: 32})
	if err != nil {
		t.Fatal(err)
	}
	bt, err := runtime.NewBatch(m, countingCPU(t, w), 1, runtime.Options{MaxContext: 32})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Prefill([]int32{3, 1, 4})
	if err != nil {
		t.Fatal(err)
	}
	b, err := bt.Prefill(0, []int32{3, 1, 4})
	if err != nil {
		t.Fatal(err)
	}
	for step := 0; ; step++ {
		if !slices.Equal(a, b) {
			t.Fatalf("step %d: session and batch of one differ", step)
		}
		if step == 4 {
			break
		}
		tok := int32(runtime.Argmax(a))
		if a, err = s.Decode(tok); err != nil {
			t.Fatal(err)
		}
		if b, err = bt.Decode([]int32{tok}); err != nil {
			t.Fatal(err)
		}
	}
	if s.Pos() != bt.Pos(0) || !slices.Equal(s.Captured(), bt.Captured()) {
		t.Fatalf("pos %d vs %d, captured %v vs %v", s.Pos(), bt.Pos(0), s.Captured(), bt.Captured())
	}
	// A Session's errors read as before it was a batch.
	want := fmt.Sprintf("decode: token -1 at index 0 is outside the vocabulary [0, %d)", s.Vocab())
	if _, err := s.Decode(-1); err == nil || err.Error() != want {
		t.Fatalf("session error %v, want %q", err, want)
	}
	if _, err := s.Prefill(nil); err == nil || err.Error() != "prefill: empty prompt" {
		t.Fatalf("session error %v", err)
	}
}

// TestBatchDecodeAllocatesNothing: a replayed batched decode step
// allocates nothing in the runtime (the backend's own count is gated in
// tests/replay_test.go).
func TestBatchDecodeAllocatesNothing(t *testing.T) {
	m, w := tinyModule(t)
	bt, err := runtime.NewBatch(m, countingCPU(t, w), 2, runtime.Options{MaxContext: 64})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := bt.Prefill(i, []int32{1, 2}); err != nil {
			t.Fatal(err)
		}
	}
	toks := []int32{3, 4}
	if _, err := bt.Decode(toks); err != nil { // captures the bucket
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(5, func() { _, _ = bt.Decode(toks) }); a != 0 {
		t.Fatalf("a replayed batched decode step allocates %v times", a)
	}
}

// TestFinishReasons: a generation cut at the context says so, and in a
// batch a sequence that fills the context stops alone: the others run to
// MaxTokens with the tokens they get on their own.
func TestFinishReasons(t *testing.T) {
	m, w := tinyModule(t)
	s, err := runtime.NewSession(m, countingCPU(t, w), runtime.Options{MaxContext: 5})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Complete([]int32{1, 2, 3}, runtime.GenerateOptions{MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tokens) != 3 || c.Finish != runtime.FinishLength || !c.ContextFull {
		t.Fatalf("3-token prompt in a 5-token context: %+v, want 3 tokens, length, context full", c)
	}

	alone, err := runtime.NewSession(m, countingCPU(t, w), runtime.Options{MaxContext: 8})
	if err != nil {
		t.Fatal(err)
	}
	want, err := alone.Complete([]int32{7}, runtime.GenerateOptions{MaxTokens: 6})
	if err != nil {
		t.Fatal(err)
	}
	if want.Finish != runtime.FinishLength || want.ContextFull || len(want.Tokens) != 6 {
		t.Fatalf("alone: %+v", want)
	}
	bt, err := runtime.NewBatch(m, countingCPU(t, w), 2, runtime.Options{MaxContext: 8})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := bt.Complete([][]int32{{1, 2, 3, 4, 5, 6}, {7}}, runtime.GenerateOptions{MaxTokens: 6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs[0].Tokens) != 3 || !cs[0].ContextFull || cs[0].Finish != runtime.FinishLength {
		t.Errorf("the long sequence: %+v, want 3 tokens and a full context", cs[0])
	}
	if !slices.Equal(cs[1].Tokens, want.Tokens) || cs[1].ContextFull || cs[1].Finish != runtime.FinishLength {
		t.Errorf("the short sequence: %+v, want %v (its tokens alone) and max tokens", cs[1], want.Tokens)
	}
	// EOS is a stop.
	alone.Reset()
	if c, err = alone.Complete([]int32{7}, runtime.GenerateOptions{MaxTokens: 4, EOS: []int{want.Tokens[0]}}); err != nil {
		t.Fatal(err)
	}
	if len(c.Tokens) != 1 || c.Finish != runtime.FinishStop || c.ContextFull {
		t.Errorf("EOS first: %+v, want one token and stop", c)
	}
}

// TestBatchPrefixRelease: a k-wide DecodePrefix gives the first k rows of
// the full-width Decode bit for bit (what a server's batch width relies
// on), Release zeroises exactly its slot, and a released slot refilled
// with a new prompt decodes as a fresh batch does.
// Every KV cache dtype (a 16-bit cache packs two values a storage word).
func TestBatchPrefixRelease(t *testing.T) {
	for _, dt := range models.KVDTypes {
		t.Run(dt.String(), func(t *testing.T) { batchPrefixRelease(t, dt) })
	}
}

func batchPrefixRelease(t *testing.T, dt ir.DType) {
	// Unprotected: a protected step's masks differ with the batch shape,
	// and with them the rounding.
	_, w := tinyModule(t)
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.Trace(cfg, models.TraceOptions{KVDType: dt})
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.Pipeline(passes.ProtectOptions{Mask: passes.MaskNone, Cadence: passes.PerForward}).Run(m); err != nil {
		t.Fatal(err)
	}
	const maxT = 32
	newBatch := func() *runtime.Batch { // each its own backend: pass numbers start at 0
		bt, err := runtime.NewBatch(m, countingCPU(t, w), 3, runtime.Options{MaxContext: maxT})
		if err != nil {
			t.Fatal(err)
		}
		return bt
	}
	prompts := [][]int32{{1, 2, 3}, {7}, {5, 9}}
	full, part := newBatch(), newBatch()
	for i, p := range prompts {
		if _, err := full.Prefill(i, p); err != nil {
			t.Fatal(err)
		}
		if _, err := part.Prefill(i, p); err != nil {
			t.Fatal(err)
		}
	}
	lf, err := full.Decode([]int32{4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(lf[:2*len(lf)/3])
	lp, err := part.DecodePrefix([]int32{4, 5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lp, want) {
		t.Fatal("DecodePrefix(2) logits differ from the first two rows of Decode")
	}
	if part.Pos(2) != 2 || part.Pos(0) != 4 {
		t.Fatalf("positions after DecodePrefix(2): %d %d %d, want 4 2 2", part.Pos(0), part.Pos(1), part.Pos(2))
	}
	if _, err := part.DecodePrefix(nil); err == nil {
		t.Fatal("DecodePrefix of no tokens: no error")
	}

	// Release slot 1: its rows are zero, the others are not.
	if err := part.Release(1); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"k.0", "v.0"} {
		s1, ok := part.Slot(name, 1)
		if !ok {
			t.Fatalf("no cache %s", name)
		}
		if slices.ContainsFunc(s1, func(v float32) bool { return v != 0 }) {
			t.Fatalf("%s slot 1 not zeroised by Release", name)
		}
		s0, _ := part.Slot(name, 0)
		if !slices.ContainsFunc(s0, func(v float32) bool { return v != 0 }) {
			t.Fatalf("%s slot 0 zeroised by Release(1)", name)
		}
	}
	if part.Pos(1) != 0 {
		t.Fatalf("released slot at position %d, want 0", part.Pos(1))
	}
	// A held slot does not advance.
	if _, err := part.DecodePrefix([]int32{4, 0, 6}); err != nil {
		t.Fatal(err)
	}
	if part.Pos(1) != 0 {
		t.Fatalf("released slot advanced to %d", part.Pos(1))
	}
	// Refilled, it decodes as slot 1 of a fresh batch given the same prompt.
	p := []int32{11, 12}
	fresh := newBatch()
	lgF, err := fresh.Prefill(1, p)
	if err != nil {
		t.Fatal(err)
	}
	lgF = slices.Clone(lgF)
	lgP, err := part.Prefill(1, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lgP, lgF) {
		t.Fatal("prefill into a released slot differs from a fresh slot")
	}
	if err := part.Release(5); err == nil {
		t.Fatal("Release(5) of a batch of 3: no error")
	}
}

// TestBatchParkChunked: a prompt prefilled in chunks, parked while the
// batch decodes between them, gives the logits of its whole prefill (the
// scratch row a decode step writes into a parked slot is overwritten by
// the next chunk), and a parked slot does not advance; for every KV cache
// dtype.
func TestBatchParkChunked(t *testing.T) {
	for _, dt := range models.KVDTypes {
		t.Run(dt.String(), func(t *testing.T) { batchParkChunked(t, dt) })
	}
}

func batchParkChunked(t *testing.T, dt ir.DType) {
	_, w := tinyModule(t)
	cfg, _ := models.Variant("qwen3-tiny")
	m, err := models.Trace(cfg, models.TraceOptions{KVDType: dt})
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.Pipeline(passes.ProtectOptions{Mask: passes.MaskNone, Cadence: passes.PerForward}).Run(m); err != nil {
		t.Fatal(err)
	}
	prompt := []int32{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}
	newB := func() *runtime.Batch {
		bt, err := runtime.NewBatch(m, countingCPU(t, w), 2, runtime.Options{MaxContext: 32})
		if err != nil {
			t.Fatal(err)
		}
		return bt
	}
	whole := newB()
	want, err := whole.Prefill(1, prompt)
	if err != nil {
		t.Fatal(err)
	}
	want = slices.Clone(want)

	bt := newB()
	if _, err := bt.Prefill(0, []int32{7, 8}); err != nil {
		t.Fatal(err)
	}
	var got []float32
	for c := 0; c < len(prompt); c += 4 {
		l, err := bt.Prefill(1, prompt[c:min(c+4, len(prompt))])
		if err != nil {
			t.Fatal(err)
		}
		got = slices.Clone(l)
		if c+4 >= len(prompt) {
			break
		}
		if err := bt.Park(1); err != nil {
			t.Fatal(err)
		}
		at := bt.Pos(1)
		if _, err := bt.Decode([]int32{11, 0}); err != nil {
			t.Fatal(err)
		}
		if bt.Pos(1) != at {
			t.Fatalf("a parked slot advanced from %d to %d", at, bt.Pos(1))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatal("chunked prefill with decode steps between the chunks differs from the whole prefill")
	}
	if bt.Pos(0) != 4 {
		t.Fatalf("the decoding slot is at %d, want 4", bt.Pos(0))
	}
	if err := bt.Park(7); err == nil {
		t.Fatal("Park(7) of a batch of 2: no error")
	}
}
