package runtime

import (
	"fmt"

	"gelo/ir"
)

// Graph input and output names the session drives (the tracer's contract).
const (
	inTokens  = "tokens"
	inPos     = "pos"
	inSeq     = "seq"
	outLogits = "logits"
	inPass    = "pass" // counter slot of protected graphs (ir.PassInput)
)

// Options configure a session.
type Options struct {
	// MaxContext is the KV-cache capacity in tokens (prompt + generated).
	MaxContext int
	// Eager runs every decode step from scratch: the graph is lowered,
	// buffers allocated and instructions built anew, as an op-by-op
	// framework would. The default captures: the first step of each
	// kv-length bucket runs eagerly, is recorded, and every later step
	// in that bucket replays the recording. Results are bit-identical.
	Eager bool
}

// MinBucket is the smallest kv-length bucket of captured decode steps.
const MinBucket = 64

// Bucket returns the kv-length bucket of a decode step that brings the
// cache to kv tokens: the smallest power of two >= kv (at least
// MinBucket), capped at the cache capacity. Each bucket has its own
// captured step; within it every step replays the same recording.
func Bucket(kv, maxT int) int {
	b := MinBucket
	for b < kv {
		b *= 2
	}
	return min(b, maxT)
}

// Session holds one sequence's state in the TEE: its KV cache and
// position. It is a Batch of one (the same state machine: prefill steps by
// prompt length, captured decode steps by kv bucket, one cache storage).
type Session struct {
	bt  *Batch
	tok [1]int32 // decode's token, kept here so a step allocates nothing
}

// NewSession prepares a session over a compiled module.
func NewSession(m *ir.Module, be Backend, opt Options) (*Session, error) {
	bt, err := newBatch(m, be, 1, opt)
	if err != nil {
		return nil, err
	}
	bt.single = true
	return &Session{bt: bt}, nil
}

// step is a compiled executable with its input and output buffers looked
// up once, so running it again touches no map and allocates nothing.
type step struct {
	exe                 Executable
	ids, pos, seq, pass []int32
	logits              []float32
	caches              []string // names of its KV cache inputs
	cacheBytes          []int    // bytes of one element of each (4, or 2 for f16/bf16)
	bound               bool     // its caches are bound, to slot
	slot                int      // (a sequence, or -1 for all B)
}

// compileStep lowers g and looks up its step buffers.
func compileStep(be Backend, g *ir.Graph, bind map[string]int) (*step, error) {
	exe, err := be.Compile(g, bind)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	st := &step{exe: exe}
	for _, in := range []struct {
		name string
		dst  *[]int32
	}{{inTokens, &st.ids}, {inPos, &st.pos}, {inSeq, &st.seq}} {
		if *in.dst, err = exe.Int32(in.name); err != nil {
			return nil, fmt.Errorf("session: %w", err)
		}
	}
	st.pass, _ = exe.Int32(inPass) // only protected graphs have one
	if st.logits, err = exe.Float32(outLogits); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	for _, n := range g.Nodes {
		if n.Op == "input" && n.Type.DType.Info().Float && n.Type.Rank() == 3 {
			name, _ := n.Attrs.Str("name")
			st.caches = append(st.caches, name)
			st.cacheBytes = append(st.cacheBytes, n.Type.DType.Bytes(1))
		}
	}
	return st, nil
}

// cacheWords is the storage of cache i of st in 32-bit words: a 16-bit
// cache (f16, bf16) packs two elements a word. The runtime only
// allocates, binds and zeroises cache storage; the backend reads it.
func (st *step) cacheWords(i int) (int, error) {
	n, err := st.exe.Elems(st.caches[i])
	if err != nil {
		return 0, err
	}
	if b := n * st.cacheBytes[i]; b%4 == 0 {
		return b / 4, nil
	}
	return 0, fmt.Errorf("cache %s: %d values of %d bytes do not fill whole 32-bit words", st.caches[i], n, st.cacheBytes[i])
}

// Pos is the number of tokens in the cache.
func (s *Session) Pos() int { return s.bt.pos[0] }

// MaxContext is the cache capacity.
func (s *Session) MaxContext() int { return s.bt.maxT }

// Vocab is the logits width.
func (s *Session) Vocab() int { return s.bt.vocab }

// Cache returns the storage of a named KV cache (k.L or v.L) for tests
// and the leak harness, in the backend's layout (the cpu backend's is
// head-major, kernels.KV; a 16-bit cache holds two elements a word); it
// stays in the TEE and must not be modified.
func (s *Session) Cache(name string) ([]float32, bool) {
	c, ok := s.bt.caches[name]
	return c, ok
}

// Reset empties the cache so the session can serve a new prompt. The
// pass counter keeps growing: the mask stream must never repeat.
func (s *Session) Reset() {
	for _, c := range s.bt.caches {
		clear(c)
	}
	s.bt.pos[0] = 0
}

// Prefill runs the prompt through the model, appending it to the cache,
// and returns the logits the prefill graph outputs (the last row's, or
// every row's when traced with AllLogits). The slice is valid until the
// next step.
func (s *Session) Prefill(tokens []int32) ([]float32, error) { return s.bt.Prefill(0, tokens) }

// Decode appends one token and returns the next-token logits (valid until
// the next step).
func (s *Session) Decode(token int32) ([]float32, error) {
	s.tok[0] = token
	return s.bt.Decode(s.tok[:])
}

// Captured lists the kv buckets that have a recorded decode step.
func (s *Session) Captured() []int { return s.bt.Captured() }
