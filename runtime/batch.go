package runtime

import (
	"errors"
	"fmt"
	"slices"

	"gelo/ir"
)

// Batch keeps B sequences in flight: each is prefilled on its own into its
// slot of the KV cache, laid out (B, max_cache, kv_dim) per layer, then all
// decode together, one row each, at their own positions. The device sees
// one many-row matmul per linear instead of B matvecs; under the default
// per-sequence topology every sequence still has its own mask and shield.
type Batch struct {
	module  *ir.Module
	backend Backend
	maxT    int
	vocab   int
	b       int

	caches  map[string][]float32 // [B, T, kv] per layer
	prefill map[int]*step
	decode  map[int]*step // captured by kv bucket
	pos     []int
	pass    uint64
}

// NewBatch prepares b sequence slots over a compiled module.
func NewBatch(m *ir.Module, be Backend, b int, opt Options) (*Batch, error) {
	if b <= 0 {
		return nil, fmt.Errorf("batch: size must be positive, got %d", b)
	}
	s, err := NewSession(m, be, opt) // validates the module and options
	if err != nil {
		return nil, err
	}
	return &Batch{module: m, backend: be, maxT: opt.MaxContext, vocab: s.vocab, b: b,
		caches: map[string][]float32{}, prefill: map[int]*step{}, decode: map[int]*step{}, pos: make([]int, b)}, nil
}

// Size is B.
func (bt *Batch) Size() int { return bt.b }

// Pos is the number of tokens cached for sequence i.
func (bt *Batch) Pos(i int) int { return bt.pos[i] }

// storage returns (allocating once) a cache's (B, T, kv) storage.
func (bt *Batch) storage(name string, perSeq int) []float32 {
	c, ok := bt.caches[name]
	if !ok {
		c = make([]float32, bt.b*perSeq)
		bt.caches[name] = c
	}
	return c
}

// Prefill runs sequence i's prompt into its cache slot and returns its
// last-row logits (valid until the next step).
func (bt *Batch) Prefill(i int, tokens []int32) ([]float32, error) {
	if i < 0 || i >= bt.b {
		return nil, fmt.Errorf("batch prefill: sequence %d outside [0, %d)", i, bt.b)
	}
	n := len(tokens)
	if n == 0 {
		return nil, errors.New("batch prefill: empty prompt")
	}
	if bt.pos[i]+n > bt.maxT {
		return nil, fmt.Errorf("batch prefill: sequence %d: %d tokens after %d cached exceed the context of %d", i, n, bt.pos[i], bt.maxT)
	}
	st, ok := bt.prefill[n]
	if !ok {
		var err error
		if st, err = compileStep(bt.backend, bt.module.Graph("prefill"), map[string]int{"n": n, "T": bt.maxT}); err != nil {
			return nil, err
		}
		bt.prefill[n] = st
	}
	// The prefill graph sees one sequence: bind its slot of every cache.
	for _, name := range st.caches {
		per, err := st.exe.Elems(name)
		if err != nil {
			return nil, err
		}
		if err := st.exe.BindFloat32(name, bt.storage(name, per)[i*per:(i+1)*per]); err != nil {
			return nil, fmt.Errorf("batch prefill: cache %s: %w", name, err)
		}
	}
	for j, t := range tokens {
		if t < 0 || int(t) >= bt.vocab {
			return nil, fmt.Errorf("batch prefill: token %d at index %d is outside the vocabulary [0, %d)", t, j, bt.vocab)
		}
		st.ids[j], st.pos[j], st.seq[j] = t, int32(bt.pos[i]+j), 0
	}
	if err := bt.runPass(st); err != nil {
		return nil, fmt.Errorf("batch prefill: %w", err)
	}
	bt.pos[i] += n
	return st.logits, nil
}

func (bt *Batch) runPass(st *step) error {
	if st.pass != nil {
		st.pass[0], st.pass[1] = int32(uint32(bt.pass)), int32(uint32(bt.pass>>32))
	}
	bt.pass++
	return st.exe.Run()
}

// Decode appends one token to every sequence and returns the B x vocab
// logits (valid until the next step).
func (bt *Batch) Decode(tokens []int32) ([]float32, error) {
	if len(tokens) != bt.b {
		return nil, fmt.Errorf("batch decode: %d tokens for %d sequences", len(tokens), bt.b)
	}
	longest := slices.Max(bt.pos)
	if longest >= bt.maxT {
		return nil, fmt.Errorf("batch decode: context of %d tokens is full", bt.maxT)
	}
	bucket := Bucket(longest+1, bt.maxT)
	st, ok := bt.decode[bucket]
	if !ok {
		var err error
		if st, err = compileStep(bt.backend, bt.module.Graph("decode"), map[string]int{"B": bt.b, "T": bt.maxT, "L": bucket}); err != nil {
			return nil, err
		}
		for _, name := range st.caches {
			total, err := st.exe.Elems(name)
			if err != nil {
				return nil, err
			}
			if err := st.exe.BindFloat32(name, bt.storage(name, total/bt.b)); err != nil {
				return nil, fmt.Errorf("batch decode: cache %s: %w", name, err)
			}
		}
		bt.decode[bucket] = st
	}
	for j, t := range tokens {
		if t < 0 || int(t) >= bt.vocab {
			return nil, fmt.Errorf("batch decode: token %d of sequence %d is outside the vocabulary [0, %d)", t, j, bt.vocab)
		}
		st.ids[j], st.pos[j], st.seq[j] = t, int32(bt.pos[j]), int32(j)
	}
	if err := bt.runPass(st); err != nil {
		return nil, fmt.Errorf("batch decode: %w", err)
	}
	for j := range bt.pos {
		bt.pos[j]++
	}
	return st.logits, nil
}

// Generate prefills every prompt into its slot and decodes greedily in
// lockstep (one sampler shared in sequence order, so a seed reproduces the
// batch) until each sequence has hit an EOS id or MaxTokens; a finished
// sequence keeps stepping on its last token (its output is ignored) so the
// batch shape never changes. Emit, if set, receives (sequence, token).
func (bt *Batch) Generate(prompts [][]int32, opt GenerateOptions, emit func(seq, tok int) error) ([][]int, error) {
	if len(prompts) != bt.b {
		return nil, fmt.Errorf("batch generate: %d prompts for %d sequences", len(prompts), bt.b)
	}
	if opt.MaxTokens <= 0 {
		return nil, fmt.Errorf("batch generate: max tokens must be positive, got %d", opt.MaxTokens)
	}
	out := make([][]int, bt.b)
	next := make([]int32, bt.b)
	done := make([]bool, bt.b)
	history := make([][]int, bt.b)
	for i, p := range prompts {
		logits, err := bt.Prefill(i, p)
		if err != nil {
			return out, err
		}
		for _, t := range p {
			history[i] = append(history[i], int(t))
		}
		tok, err := opt.pick(logits, history[i])
		if err != nil {
			return out, fmt.Errorf("batch generate: %w", err)
		}
		next[i] = int32(tok)
		history[i] = append(history[i], tok)
	}
	for {
		finished := true
		for i := range next {
			if done[i] {
				continue
			}
			tok := int(next[i])
			out[i] = append(out[i], tok)
			if emit != nil {
				if err := emit(i, tok); err != nil {
					return out, err
				}
			}
			if slices.Contains(opt.EOS, tok) || len(out[i]) >= opt.MaxTokens || bt.pos[i] >= bt.maxT {
				done[i] = true
			} else {
				finished = false
			}
		}
		if finished || slices.Max(bt.pos) >= bt.maxT {
			return out, nil
		}
		logits, err := bt.Decode(next)
		if err != nil {
			return out, err
		}
		for i := range next {
			if !done[i] {
				tok, err := opt.pick(logits[i*bt.vocab:(i+1)*bt.vocab], history[i])
				if err != nil {
					return out, fmt.Errorf("batch generate: %w", err)
				}
				next[i] = int32(tok)
				history[i] = append(history[i], tok)
			}
		}
	}
}
