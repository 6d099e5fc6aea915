package runtime

import (
	"errors"
	"fmt"
	"slices"

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
// position. It compiles the prefill graph once per prompt length and the
// decode graph once, all bound to the same cache storage.
type Session struct {
	module  *ir.Module
	backend Backend
	maxT    int
	vocab   int

	caches  map[string][]float32
	prefill map[int]*step
	decode  map[int]*step // captured decode steps by kv bucket
	eager   bool
	pos     int
	tok     [1]int32 // decode's token, kept here so a step allocates nothing
	// pass numbers forward passes; it only grows (Reset keeps it), because
	// the mask stream is keyed by it and must never repeat in a session.
	pass uint64
}

// NewSession prepares a session over a compiled module.
func NewSession(m *ir.Module, be Backend, opt Options) (*Session, error) {
	if opt.MaxContext <= 0 {
		return nil, fmt.Errorf("session: max context must be positive, got %d", opt.MaxContext)
	}
	s := &Session{module: m, backend: be, maxT: opt.MaxContext, caches: map[string][]float32{},
		prefill: map[int]*step{}, decode: map[int]*step{}, eager: opt.Eager}
	for _, name := range []string{"prefill", "decode"} {
		if m.Graph(name) == nil {
			return nil, fmt.Errorf("session: module has no %s graph", name)
		}
	}
	dec := m.Graph("decode")
	for _, o := range dec.Outputs {
		if o.Name == outLogits {
			t := dec.Node(o.Value).Type
			if t.Rank() != 2 || t.Shape[1].IsSym() {
				return nil, fmt.Errorf("session: decode logits have type %v, want [B, vocab]", t)
			}
			s.vocab = t.Shape[1].Size
		}
	}
	if s.vocab == 0 {
		return nil, errors.New("session: decode graph has no logits output")
	}
	return s, nil
}

// step is a compiled executable with its input and output buffers looked
// up once, so running it again touches no map and allocates nothing.
type step struct {
	exe                 Executable
	ids, pos, seq, pass []int32
	logits              []float32
	caches              []string // names of its KV cache inputs
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
		if n.Op == "input" && n.Type.DType == ir.F32 && n.Type.Rank() == 3 {
			name, _ := n.Attrs.Str("name")
			st.caches = append(st.caches, name)
		}
	}
	return st, nil
}

// compile lowers g and binds every KV cache input to session storage.
func (s *Session) compile(g *ir.Graph, bind map[string]int) (*step, error) {
	st, err := compileStep(s.backend, g, bind)
	if err != nil {
		return nil, err
	}
	for _, name := range st.caches {
		size, err := st.exe.Elems(name)
		if err != nil {
			return nil, fmt.Errorf("session: %w", err)
		}
		store, ok := s.caches[name]
		if !ok {
			store = make([]float32, size)
			s.caches[name] = store
		}
		if err := st.exe.BindFloat32(name, store); err != nil {
			return nil, fmt.Errorf("session: cache %s: %w", name, err)
		}
	}
	return st, nil
}

// Pos is the number of tokens in the cache.
func (s *Session) Pos() int { return s.pos }

// MaxContext is the cache capacity.
func (s *Session) MaxContext() int { return s.maxT }

// Vocab is the logits width.
func (s *Session) Vocab() int { return s.vocab }

// Cache returns the storage of a named KV cache (k.L or v.L) for tests
// and the leak harness; it stays in the TEE and must not be modified.
func (s *Session) Cache(name string) ([]float32, bool) {
	c, ok := s.caches[name]
	return c, ok
}

// Reset empties the cache so the session can serve a new prompt.
func (s *Session) Reset() {
	for _, c := range s.caches {
		clear(c)
	}
	s.pos = 0
}

// run writes a step's inputs (tokens, positions, sequence slots, the pass
// counter) into its arena slots and runs it: one forward pass.
func (s *Session) run(st *step, tokens []int32, start int) error {
	for i, t := range tokens {
		if t < 0 || int(t) >= s.vocab {
			return fmt.Errorf("token %d at index %d is outside the vocabulary [0, %d)", t, i, s.vocab)
		}
		st.ids[i] = t
		st.pos[i] = int32(start + i)
		st.seq[i] = 0
	}
	if st.pass != nil {
		st.pass[0], st.pass[1] = int32(uint32(s.pass)), int32(uint32(s.pass>>32))
	}
	s.pass++
	return st.exe.Run()
}

// Prefill runs the prompt through the model, appending it to the cache,
// and returns the logits the prefill graph outputs (the last row's, or
// every row's when traced with AllLogits). The slice is valid until the
// next step.
func (s *Session) Prefill(tokens []int32) ([]float32, error) {
	n := len(tokens)
	if n == 0 {
		return nil, errors.New("prefill: empty prompt")
	}
	if s.pos+n > s.maxT {
		return nil, fmt.Errorf("prefill: %d tokens after %d cached exceed the context of %d", n, s.pos, s.maxT)
	}
	st, ok := s.prefill[n]
	if !ok {
		var err error
		st, err = s.compile(s.module.Graph("prefill"), map[string]int{"n": n, "T": s.maxT})
		if err != nil {
			return nil, err
		}
		s.prefill[n] = st
	}
	if err := s.run(st, tokens, s.pos); err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	s.pos += n
	return st.logits, nil
}

// Decode appends one token and returns the next-token logits (valid until
// the next step).
func (s *Session) Decode(token int32) ([]float32, error) {
	if s.pos >= s.maxT {
		return nil, fmt.Errorf("decode: context of %d tokens is full", s.maxT)
	}
	bucket := Bucket(s.pos+1, s.maxT)
	st, captured := s.decode[bucket]
	if !captured || s.eager {
		var err error
		if st, err = s.compile(s.module.Graph("decode"), map[string]int{"B": 1, "T": s.maxT, "L": bucket}); err != nil {
			return nil, err
		}
		if !s.eager {
			s.decode[bucket] = st // run this step eagerly, replay it from now on
		}
	}
	s.tok[0] = token
	if err := s.run(st, s.tok[:], s.pos); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	s.pos++
	return st.logits, nil
}

// Captured lists the kv buckets that have a recorded decode step.
func (s *Session) Captured() []int {
	var bs []int
	for b := range s.decode {
		bs = append(bs, b)
	}
	slices.Sort(bs)
	return bs
}
