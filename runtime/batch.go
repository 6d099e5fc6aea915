package runtime

import (
	"errors"
	"fmt"
	"slices"

	"gelo/ir"
	"gelo/models"
)

// Batch keeps B sequences in flight: each is prefilled on its own into its
// slot of the KV cache (B slots per layer, each one sequence's cache in the
// backend's layout), then all decode together, one row each, at their own
// positions. The device sees
// one many-row matmul per linear instead of B matvecs; under the default
// per-sequence topology every sequence still has its own mask and shield.
//
// It is the one state machine of a running plan: a Session is a Batch of
// one. It compiles the prefill graph once per prompt length and captures
// the decode graph once per kv bucket (or, with Options.Eager, lowers it
// anew for every step), all bound to the same cache storage.
type Batch struct {
	module  *ir.Module
	backend Backend
	maxT    int
	vocab   int
	b       int
	single  bool // a Session's batch: errors read as the session's

	caches  map[string][]float32 // per layer: B slots of one sequence's cache, as 32-bit words
	prefill map[int]*step
	decode  map[int]*step         // captured decode steps by kv bucket
	decodeK map[int]map[int]*step // DecodePrefix's narrower steps: by width, then bucket
	eager   bool
	pos     []int
	// hold marks sequences that finished inside Generate: they keep
	// stepping (the batch shape never changes) on their last cache slot
	// instead of advancing, so a finished sequence never fills the
	// context for the others.
	hold []bool
	// park marks slots that are empty or part-way through a chunked
	// prefill: a decode step that spans one writes its next cache row as
	// scratch (the next Prefill overwrites it) and never advances it.
	park []bool
	// pass numbers forward passes; it only grows (a Session's Reset keeps
	// it), because the mask stream is keyed by it and must never repeat.
	pass uint64
}

// NewBatch prepares b sequence slots over a compiled module.
func NewBatch(m *ir.Module, be Backend, b int, opt Options) (*Batch, error) {
	if b <= 0 {
		return nil, fmt.Errorf("batch: size must be positive, got %d", b)
	}
	return newBatch(m, be, b, opt)
}

// newBatch validates the module and options (the session's checks) and
// prepares b slots.
func newBatch(m *ir.Module, be Backend, b int, opt Options) (*Batch, error) {
	if opt.MaxContext <= 0 || opt.MaxContext > models.MaxDim {
		return nil, fmt.Errorf("session: max context must be in [1, %d], got %d", models.MaxDim, opt.MaxContext)
	}
	for _, name := range []string{"prefill", "decode"} {
		if m.Graph(name) == nil {
			return nil, fmt.Errorf("session: module has no %s graph", name)
		}
	}
	bt := &Batch{module: m, backend: be, maxT: opt.MaxContext, b: b, caches: map[string][]float32{},
		prefill: map[int]*step{}, decode: map[int]*step{}, decodeK: map[int]map[int]*step{}, eager: opt.Eager, pos: make([]int, b), hold: make([]bool, b), park: make([]bool, b)}
	dec := m.Graph("decode")
	for _, o := range dec.Outputs {
		if o.Name == outLogits {
			t := dec.Node(o.Value).Type
			if t.Rank() != 2 || t.Shape[1].IsSym() {
				return nil, fmt.Errorf("session: decode logits have type %v, want [B, vocab]", t)
			}
			bt.vocab = t.Shape[1].Size
		}
	}
	if bt.vocab == 0 {
		return nil, errors.New("session: decode graph has no logits output")
	}
	return bt, nil
}

// Size is B.
func (bt *Batch) Size() int { return bt.b }

// Pos is the number of tokens cached for sequence i.
func (bt *Batch) Pos(i int) int { return bt.pos[i] }

// op names a step in errors: a Session's read "prefill: ...", a Batch's
// "batch prefill: ...".
func (bt *Batch) op(name string) string {
	if bt.single {
		return name
	}
	switch name { // constants: a step must not allocate
	case "prefill":
		return "batch prefill"
	case "decode":
		return "batch decode"
	}
	return "batch " + name
}

// seqOf names sequence i in errors (nothing for a Session).
func (bt *Batch) seqOf(i int) string {
	if bt.single {
		return ""
	}
	return fmt.Sprintf("sequence %d: ", i)
}

// storage returns (allocating once) a cache's (B, T, kv) storage.
func (bt *Batch) storage(name string, perSeq int) []float32 {
	c, ok := bt.caches[name]
	if !ok {
		c = make([]float32, bt.b*perSeq)
		bt.caches[name] = c
	}
	return c
}

// bind points every KV cache input of st at sequence slot's part of the
// storage (slot < 0: all B slots, the decode layout). A step already bound
// to that slot is left alone.
func (bt *Batch) bind(st *step, slot int) error {
	if st.bound && st.slot == slot {
		return nil
	}
	for i, name := range st.caches {
		n, err := st.cacheWords(i)
		if err != nil {
			return fmt.Errorf("session: %w", err)
		}
		var buf []float32
		if slot >= 0 { // n is one sequence's part
			buf = bt.storage(name, n)[slot*n : (slot+1)*n]
		} else {
			buf = bt.storage(name, n/bt.b)
		}
		if err := st.exe.BindFloat32(name, buf); err != nil {
			return fmt.Errorf("session: cache %s: %w", name, err)
		}
	}
	st.bound, st.slot = true, slot
	return nil
}

// Prefill runs sequence i's prompt into its cache slot and returns the
// logits the prefill graph outputs (the last row's, or every row's when
// traced with AllLogits; valid until the next step).
func (bt *Batch) Prefill(i int, tokens []int32) ([]float32, error) {
	op := bt.op("prefill")
	if i < 0 || i >= bt.b {
		return nil, fmt.Errorf("%s: sequence %d outside [0, %d)", op, i, bt.b)
	}
	n := len(tokens)
	if n == 0 {
		return nil, fmt.Errorf("%s: empty prompt", op)
	}
	if bt.pos[i]+n > bt.maxT {
		return nil, fmt.Errorf("%s: %s%d tokens after %d cached exceed the context of %d", op, bt.seqOf(i), n, bt.pos[i], bt.maxT)
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
	if err := bt.bind(st, i); err != nil {
		return nil, err
	}
	for j, t := range tokens {
		if t < 0 || int(t) >= bt.vocab {
			return nil, fmt.Errorf("%s: token %d at index %d is outside the vocabulary [0, %d)", op, t, j, bt.vocab)
		}
		st.ids[j], st.pos[j], st.seq[j] = t, int32(bt.pos[i]+j), 0
	}
	if err := bt.runPass(st); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	bt.pos[i] += n
	bt.hold[i], bt.park[i] = false, false // a Released or Parked slot steps again
	return st.logits, nil
}

// runPass writes the pass counter into its arena slots and runs st: one
// forward pass.
func (bt *Batch) runPass(st *step) error {
	if st.pass != nil {
		st.pass[0], st.pass[1] = int32(uint32(bt.pass)), int32(uint32(bt.pass>>32))
	}
	bt.pass++
	return st.exe.Run()
}

// Decode appends one token to every sequence and returns the B x vocab
// logits (valid until the next step). The first step of each kv bucket
// runs eagerly and is recorded; later steps in the bucket replay it.
// With Options.Eager every step is lowered anew instead.
func (bt *Batch) Decode(tokens []int32) ([]float32, error) {
	if len(tokens) != bt.b {
		return nil, fmt.Errorf("%s: %d tokens for %d sequences", bt.op("decode"), len(tokens), bt.b)
	}
	return bt.DecodePrefix(tokens)
}

// DecodePrefix is Decode over the first len(tokens) slots only (1 to B):
// the later slots neither step nor advance. The cache layout (B slots, each
// contiguous) keeps slots 0..k-1 contiguous, so a k-wide step is the same graph bound
// to a prefix of the storage, and a server's batch width can follow its
// load instead of paying for B rows every step. Each width has its own
// captured steps.
func (bt *Batch) DecodePrefix(tokens []int32) ([]float32, error) {
	op := bt.op("decode")
	k := len(tokens)
	if k < 1 || k > bt.b {
		return nil, fmt.Errorf("%s: %d tokens for a batch of %d sequences", op, k, bt.b)
	}
	longest := 0
	for j := range k {
		longest = max(longest, bt.at(j))
	}
	if longest >= bt.maxT {
		return nil, fmt.Errorf("%s: context of %d tokens is full", op, bt.maxT)
	}
	bucket := Bucket(longest+1, bt.maxT)
	steps := bt.decode
	if k < bt.b {
		if bt.decodeK[k] == nil {
			bt.decodeK[k] = map[int]*step{}
		}
		steps = bt.decodeK[k]
	}
	st, captured := steps[bucket]
	if !captured || bt.eager {
		var err error
		if st, err = compileStep(bt.backend, bt.module.Graph("decode"), map[string]int{"B": k, "T": bt.maxT, "L": bucket}); err != nil {
			return nil, err
		}
		if err := bt.bindPrefix(st, k); err != nil {
			return nil, err
		}
		if !bt.eager {
			steps[bucket] = st // run this step eagerly, replay it from now on
		}
	}
	for j, t := range tokens {
		if t < 0 || int(t) >= bt.vocab {
			if bt.single {
				return nil, fmt.Errorf("%s: token %d at index %d is outside the vocabulary [0, %d)", op, t, j, bt.vocab)
			}
			return nil, fmt.Errorf("%s: token %d of sequence %d is outside the vocabulary [0, %d)", op, t, j, bt.vocab)
		}
		st.ids[j], st.pos[j], st.seq[j] = t, int32(bt.at(j)), int32(j)
	}
	if err := bt.runPass(st); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	for j := range k {
		if !bt.hold[j] && !bt.park[j] {
			bt.pos[j]++
		}
	}
	return st.logits, nil
}

// bindPrefix binds a k-wide decode step to the first k slots of every
// cache (k == B: the whole storage, as bind(st, -1)).
func (bt *Batch) bindPrefix(st *step, k int) error {
	if k == bt.b {
		return bt.bind(st, -1)
	}
	for i, name := range st.caches {
		n, err := st.cacheWords(i)
		if err != nil {
			return fmt.Errorf("session: %w", err)
		}
		if err := st.exe.BindFloat32(name, bt.storage(name, n/k)[:n]); err != nil {
			return fmt.Errorf("session: cache %s: %w", name, err)
		}
	}
	st.bound, st.slot = true, -1-k
	return nil
}

// Release empties slot i for its next sequence: every cache row of the
// slot is zeroised (the KV cache is secret state), its position reset and
// the slot parked until Prefill refills it.
func (bt *Batch) Release(i int) error {
	if i < 0 || i >= bt.b {
		return fmt.Errorf("%s: sequence %d outside [0, %d)", bt.op("release"), i, bt.b)
	}
	for _, c := range bt.caches {
		per := len(c) / bt.b
		clear(c[i*per : (i+1)*per])
	}
	bt.pos[i], bt.hold[i], bt.park[i] = 0, false, true
	return nil
}

// Park stops slot i stepping until its next Prefill, keeping its cache:
// a decode step that spans it writes its next row as scratch (which that
// Prefill overwrites) and does not advance it. A server parks a sequence
// between the chunks of its prefill while the others decode.
func (bt *Batch) Park(i int) error {
	if i < 0 || i >= bt.b {
		return fmt.Errorf("%s: sequence %d outside [0, %d)", bt.op("park"), i, bt.b)
	}
	if bt.pos[i] >= bt.maxT {
		return fmt.Errorf("%s: %ssequence is at the end of the context (%d): no row to park on", bt.op("park"), bt.seqOf(i), bt.maxT)
	}
	bt.park[i] = true
	return nil
}

// Slot returns sequence i's part of a named KV cache (k.L or v.L), for
// tests that check Release; it stays in the TEE and must not be modified.
func (bt *Batch) Slot(name string, i int) ([]float32, bool) {
	c, ok := bt.caches[name]
	if !ok || i < 0 || i >= bt.b {
		return nil, false
	}
	per := len(c) / bt.b
	return c[i*per : (i+1)*per], true
}

// at is the position sequence j decodes at: its next one (also while it
// is parked), or its last one again while it is held.
func (bt *Batch) at(j int) int {
	if bt.hold[j] && !bt.park[j] && bt.pos[j] > 0 {
		return bt.pos[j] - 1
	}
	return bt.pos[j]
}

// Captured lists the kv buckets that have a recorded decode step.
func (bt *Batch) Captured() []int {
	var bs []int
	for b := range bt.decode {
		bs = append(bs, b)
	}
	slices.Sort(bs)
	return bs
}

// Generate prefills every prompt into its slot and decodes greedily in
// lockstep (one sampler shared in sequence order, so a seed reproduces the
// batch) until each sequence has hit an EOS id, MaxTokens or the context;
// each sequence stops on its own. A finished sequence keeps stepping on its
// last cache slot (its output is ignored, its cache is scratch afterwards)
// so the batch shape never changes. Emit, if set, receives (sequence,
// token).
func (bt *Batch) Generate(prompts [][]int32, opt GenerateOptions, emit func(seq, tok int) error) ([][]int, error) {
	cs, err := bt.Complete(prompts, opt, emit)
	out := make([][]int, len(cs))
	for i, c := range cs {
		out[i] = c.Tokens
	}
	return out, err
}

// Complete is Generate that also says why each sequence stopped.
func (bt *Batch) Complete(prompts [][]int32, opt GenerateOptions, emit func(seq, tok int) error) ([]Completion, error) {
	if len(prompts) != bt.b {
		return nil, fmt.Errorf("batch generate: %d prompts for %d sequences", len(prompts), bt.b)
	}
	if opt.MaxTokens <= 0 {
		return nil, fmt.Errorf("batch generate: max tokens must be positive, got %d", opt.MaxTokens)
	}
	defer clear(bt.hold)
	out := make([]Completion, bt.b)
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
			out[i].Tokens = append(out[i].Tokens, tok)
			if emit != nil {
				if err := emit(i, tok); err != nil {
					return out, err
				}
			}
			if c, stop := opt.finish(out[i].Tokens, tok, bt.pos[i], bt.maxT); stop {
				out[i], done[i], bt.hold[i] = c, true, true
			} else {
				finished = false
			}
		}
		if finished {
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
