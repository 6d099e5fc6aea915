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
