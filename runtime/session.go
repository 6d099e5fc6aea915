package runtime

import (
	"errors"
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
	prefill map[int]Executable
	decode  Executable
	pos     int
	// pass numbers forward passes; it only grows (Reset keeps it), because
	// the mask stream is keyed by it and must never repeat in a session.
	pass uint64
}

// NewSession prepares a session over a compiled module.
func NewSession(m *ir.Module, be Backend, opt Options) (*Session, error) {
	if opt.MaxContext <= 0 {
		return nil, fmt.Errorf("session: max context must be positive, got %d", opt.MaxContext)
	}
	s := &Session{module: m, backend: be, maxT: opt.MaxContext, caches: map[string][]float32{}, prefill: map[int]Executable{}}
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
	exe, err := s.compile(dec, map[string]int{"B": 1, "T": s.maxT})
	if err != nil {
		return nil, err
	}
	s.decode = exe
	return s, nil
}

// caches binds every rank-3 f32 input (a KV cache) of g to session storage.
func (s *Session) compile(g *ir.Graph, bind map[string]int) (Executable, error) {
	exe, err := s.backend.Compile(g, bind)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	for _, n := range g.Nodes {
		if n.Op != "input" || n.Type.DType != ir.F32 || n.Type.Rank() != 3 {
			continue
		}
		name, _ := n.Attrs.Str("name")
		size, err := exe.Elems(name)
		if err != nil {
			return nil, fmt.Errorf("session: %w", err)
		}
		store, ok := s.caches[name]
		if !ok {
			store = make([]float32, size)
			s.caches[name] = store
		}
		if err := exe.BindFloat32(name, store); err != nil {
			return nil, fmt.Errorf("session: cache %s: %w", name, err)
		}
	}
	return exe, nil
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

func (s *Session) fill(exe Executable, tokens []int32, start int) error {
	ids, err := exe.Int32(inTokens)
	if err != nil {
		return err
	}
	pos, err := exe.Int32(inPos)
	if err != nil {
		return err
	}
	seq, err := exe.Int32(inSeq)
	if err != nil {
		return err
	}
	if c, err := exe.Int32(inPass); err == nil {
		c[0], c[1] = int32(uint32(s.pass)), int32(uint32(s.pass>>32))
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= s.vocab {
			return fmt.Errorf("token %d at index %d is outside the vocabulary [0, %d)", t, i, s.vocab)
		}
		ids[i] = t
		pos[i] = int32(start + i)
		seq[i] = 0
	}
	return nil
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
	exe, ok := s.prefill[n]
	if !ok {
		var err error
		exe, err = s.compile(s.module.Graph("prefill"), map[string]int{"n": n, "T": s.maxT})
		if err != nil {
			return nil, err
		}
		s.prefill[n] = exe
	}
	if err := s.fill(exe, tokens, s.pos); err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	s.pass++
	if err := exe.Run(); err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	s.pos += n
	return exe.Float32(outLogits)
}

// Decode appends one token and returns the next-token logits (valid until
// the next step).
func (s *Session) Decode(token int32) ([]float32, error) {
	if s.pos >= s.maxT {
		return nil, fmt.Errorf("decode: context of %d tokens is full", s.maxT)
	}
	if err := s.fill(s.decode, []int32{token}, s.pos); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	s.pass++
	if err := s.decode.Run(); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	s.pos++
	return s.decode.Float32(outLogits)
}
