package models

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"gelo/fanout"
	"gelo/models/gguf"
	"gelo/models/safetensors"
)

// Weights holds every tensor of a model as float32, by Hugging Face name,
// with the config they were checked against. The slices Get returns are
// shared and read-only: weights loaded from an F32 checkpoint alias the
// memory-mapped file, and writing to them may crash the process. Get is
// safe for concurrent use; Close must not race with it.
//
// A tensor may be lazy: synthetic weights and a checkpoint's 16-bit
// tensors are produced from their source (the generator, the mapped file)
// on the first Get, not at load. ReadRows and Reader read a tensor without
// making it resident, so an engine that converts every matrix to its
// plan's format, and the identity hash, never hold the whole model as f32.
type Weights struct {
	// Config is the architecture the tensors match.
	Config *Config

	names   []string // canonical order (TensorSpecs)
	tensors map[string]weight
	bytes   int64
	set     *safetensors.Set // open while tensors alias its mapping
	closed  bool
	mu      sync.Mutex           // guards tensors and stacks
	stacks  map[string][]float32 // Stack's buffers by joined names
	err     error                // set by Synthesize for an invalid config
	// blocks are tensors as a GGUF file stored them, in a block format a
	// plan can multiply as they are (Q4_K): rows in gelo's order.
	blocks map[string]StoredBlocks
	// closeSource releases a source other than set that the tensors
	// read (a GGUF file's mapping, Private's open files); nil if none.
	closeSource func() error
	ggufPath    string // the GGUF file the tensors read, if any
	private     bool   // Private ran
	// sums are, by tensor, the SHA-256 of its values as little-endian
	// float32 (what Reader streams) and their byte count, taken by
	// OpenPrivate while it read and sealed the tensor (F32Digest).
	sums map[string]tensorSum
}

// tensorSum is a tensor's F32Digest.
type tensorSum struct {
	sum [sha256.Size]byte
	n   int64
}

// F32Digest returns the SHA-256 of a tensor's values as little-endian
// float32, the bytes Reader streams, and their count, when the loader
// took it as it read the tensor (OpenPrivate does, for a checkpoint or a
// GGUF file: every later read is checked against what it read, so the
// digest is that of any read's values); ok is false otherwise. It stays
// known after Release.
func (w *Weights) F32Digest(name string) (sum [sha256.Size]byte, n int64, ok bool) {
	if w == nil {
		return sum, 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.sums[name]
	if !ok || w.closed {
		return sum, 0, false
	}
	return t.sum, t.n, true
}

// putF32LE appends v as little-endian float32 bytes to dst[:0].
func putF32LE(dst []byte, v []float32) []byte {
	dst = dst[:0]
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

// StoredBlocks is a tensor's bytes as its file stored them: type t,
// row-major in gelo's row order (Rows rows of the tensor's blocks).
type StoredBlocks struct {
	Type gguf.TensorType
	Data []byte
}

// Blocks returns the tensor's stored blocks, when the file held it in a
// format a plan multiplies natively; ok is false otherwise.
func (w *Weights) Blocks(name string) (StoredBlocks, bool) {
	if w == nil {
		return StoredBlocks{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.blocks[name]
	return b, ok && !w.closed
}

// CopyBlocks copies a tensor's stored blocks (Blocks) into dst, exactly
// their size, and drops the mapped file's pages it read from the resident
// set: an engine that stacks stored blocks with others (a fused q/k/v)
// holds them once, in its stack.
func (w *Weights) CopyBlocks(name string, dst []byte) error {
	if w == nil {
		return errors.New("weights: nil")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.blocks[name]
	if !ok || w.closed {
		return fmt.Errorf("weights: tensor %q has no stored blocks", name)
	}
	if len(b.Data) != len(dst) {
		return fmt.Errorf("weights: tensor %q: %d bytes of stored blocks into %d", name, len(b.Data), len(dst))
	}
	copy(dst, b.Data)
	if t := w.tensors[name]; t.gguf != nil && t.gguf.mapped && &t.gguf.data[0] == &b.Data[0] {
		safetensors.DropMapped(b.Data)
	}
	return nil
}

type weight struct {
	data     []float32
	shape    []int
	view     bool // aliases the mapped file
	released bool // dropped by Release: the plan holds it in another format
	// fill, when not nil, produces elements [lo, hi) of the tensor into
	// dst from its source; data is nil until the first Get.
	fill   fillFunc
	mapped bool // fill reads the mapped file (Private seals it)
	// gguf is fill's source for a GGUF file's tensor: Private copies its
	// blocks, not their f32 values.
	gguf *ggufTensor
	// ownFill: fill is Private's (the sealed file, or a GGUF tensor's
	// copied blocks); Release, or the values becoming resident, drops it
	// and what it holds.
	ownFill bool
}

// fillFunc writes elements [lo, hi) of a tensor, as float32, into dst
// (len hi-lo). It must give the same bits on every call.
type fillFunc func(lo, hi int, dst []float32) error

// elems is the element count of shape sh.
func elems(sh []int) int {
	n := 1
	for _, d := range sh {
		n *= d
	}
	return n
}

// cols is the row length of a tensor of shape sh: its last dimension (a
// vector is one row).
func cols(sh []int) int {
	if len(sh) == 0 {
		return 1
	}
	return max(sh[len(sh)-1], 1)
}

func newWeights(cfg *Config, specs []TensorSpec, data map[string][]float32, set *safetensors.Set) *Weights {
	c := *cfg
	w := &Weights{Config: &c, tensors: make(map[string]weight, len(specs)), set: set}
	for _, s := range specs {
		w.names = append(w.names, s.Name)
		w.tensors[s.Name] = weight{data: data[s.Name], shape: append([]int(nil), s.Shape...)}
		w.bytes += 4 * int64(s.Elems())
	}
	return w
}

// NewWeights wraps in-memory tensors (hand-built test models): data must
// hold exactly the tensors of cfg.TensorSpecs(), each with the element
// count of its shape. The slices are kept, not copied.
func NewWeights(cfg *Config, data map[string][]float32) (*Weights, error) {
	if cfg == nil {
		return nil, errors.New("weights: nil config")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("weights: config: %w", err)
	}
	specs := cfg.TensorSpecs()
	want := map[string]bool{}
	for _, s := range specs {
		want[s.Name] = true
		d, ok := data[s.Name]
		if !ok {
			return nil, fmt.Errorf("weights: tensor %q (shape %s per config) is missing", s.Name, shapeStr(s.Shape))
		}
		if len(d) != s.Elems() {
			return nil, fmt.Errorf("weights: tensor %q has %d values, shape %s needs %d", s.Name, len(d), shapeStr(s.Shape), s.Elems())
		}
	}
	for name := range data {
		if !want[name] {
			return nil, fmt.Errorf("weights: tensor %q is not in the config's tensor list", name)
		}
	}
	return newWeights(cfg, specs, data, nil), nil
}

// Err reports why the weights are unusable (only Synthesize with an
// invalid config produces such weights).
func (w *Weights) Err() error {
	if w == nil {
		return errors.New("weights: nil")
	}
	return w.err
}

// Get returns a tensor's values (read-only, shared) and its shape.
func (w *Weights) Get(name string) ([]float32, []int, error) {
	if w == nil {
		return nil, nil, errors.New("weights: nil")
	}
	if w.err != nil {
		return nil, nil, w.err
	}
	t, err := w.resident(name)
	if err != nil {
		return nil, nil, err
	}
	return t.data, append([]int(nil), t.shape...), nil
}

// lookup returns a tensor's entry (w.mu held).
func (w *Weights) lookup(name string) (weight, error) {
	if w.closed {
		return weight{}, fmt.Errorf("weights: tensor %q: weights are closed", name)
	}
	t, ok := w.tensors[name]
	if !ok {
		return weight{}, fmt.Errorf("weights: no tensor %q", name)
	}
	return t, nil
}

// resident returns a tensor's entry with its values in memory, producing
// a lazy tensor's from its source first (outside the lock, so other
// tensors can be read meanwhile).
func (w *Weights) resident(name string) (weight, error) {
	w.mu.Lock()
	t, err := w.lookup(name)
	w.mu.Unlock()
	if err != nil {
		return weight{}, err
	}
	if t.released {
		return weight{}, fmt.Errorf("weights: tensor %q was released: an engine that owned these weights holds it in another format", name)
	}
	if t.data != nil || t.fill == nil {
		return t, nil
	}
	n := elems(t.shape)
	buf := make([]float32, n)
	if err := t.fill(0, n, buf); err != nil {
		return weight{}, fmt.Errorf("weights: tensor %q: %w", name, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	cur, err := w.lookup(name)
	if err != nil {
		return weight{}, err
	}
	if cur.released {
		return weight{}, fmt.Errorf("weights: tensor %q was released while it was read", name)
	}
	if cur.data == nil { // else another Get produced it first: keep that one
		cur.data = buf
		if cur.ownFill { // the values are here now: Private's source goes
			cur.fill, cur.gguf, cur.ownFill = nil, nil, false
		}
		w.tensors[name] = cur
	}
	return cur, nil
}

// ReadRows copies rows [lo, hi) of a tensor (rows of its last dimension)
// into dst as float32 without making the tensor resident: from memory if
// it is, else from its source. A released tensor is read from its source
// (the identity hashes what a converted tensor was made from); one that
// has none fails, as Get does.
func (w *Weights) ReadRows(name string, lo, hi int, dst []float32) error {
	if w == nil {
		return errors.New("weights: nil")
	}
	if w.err != nil {
		return w.err
	}
	w.mu.Lock()
	t, err := w.lookup(name)
	w.mu.Unlock()
	if err != nil {
		return err
	}
	c, n := cols(t.shape), elems(t.shape)
	if lo < 0 || hi < lo || hi*c > n {
		return fmt.Errorf("weights: tensor %q: rows [%d, %d) of %d", name, lo, hi, n/c)
	}
	if len(dst) != (hi-lo)*c {
		return fmt.Errorf("weights: tensor %q: rows [%d, %d) are %d values, dst holds %d", name, lo, hi, (hi-lo)*c, len(dst))
	}
	switch {
	case t.data != nil:
		copy(dst, t.data[lo*c:hi*c])
	case t.fill != nil:
		if err := t.fill(lo*c, hi*c, dst); err != nil {
			return fmt.Errorf("weights: tensor %q: %w", name, err)
		}
	case t.released:
		return fmt.Errorf("weights: tensor %q was released: an engine that owned these weights holds it in another format", name)
	default:
		return fmt.Errorf("weights: tensor %q has no values", name)
	}
	return nil
}

// readChunk is how many values Reader and the loaders move at a time.
const readChunk = 1 << 18

// Reader streams a tensor's values as little-endian float32 bytes (what
// the identity hashes), a chunk of rows at a time through ReadRows, and
// returns its shape.
func (w *Weights) Reader(name string) (io.Reader, []int, error) {
	if w == nil {
		return nil, nil, errors.New("weights: nil")
	}
	if w.err != nil {
		return nil, nil, w.err
	}
	w.mu.Lock()
	t, err := w.lookup(name)
	w.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if t.released && t.fill == nil {
		return nil, nil, fmt.Errorf("weights: tensor %q was released: an engine that owned these weights holds it in another format", name)
	}
	rows := 1
	for _, d := range t.shape[:max(len(t.shape)-1, 0)] {
		rows *= d
	}
	return &tensorReader{w: w, name: name, rows: rows, cols: cols(t.shape)}, append([]int(nil), t.shape...), nil
}

type tensorReader struct {
	w          *Weights
	name       string
	rows, cols int
	next       int // next row to read
	raw        []byte
	off        int // raw[off:] is read but not yet returned
	vals       []float32
	buf        *readerBuf // raw's and vals' memory, from readerBufs
}

// readerBuf is a tensorReader's chunk memory. Readers take it from
// readerBufs and give it back at EOF: hashing a model's tensors one after
// another then reuses two buffers instead of leaving two per tensor to the
// garbage collector (which, with the model's own weights live, lets the
// heap grow by about their size before it collects).
type readerBuf struct {
	vals []float32
	raw  []byte
}

var readerBufs = sync.Pool{New: func() any { return new(readerBuf) }}

func (r *tensorReader) Read(p []byte) (int, error) {
	if r.off == len(r.raw) {
		if r.next >= r.rows {
			if r.buf != nil {
				r.buf.vals, r.buf.raw = r.vals[:0], r.raw[:0]
				readerBufs.Put(r.buf)
				r.buf, r.vals, r.raw, r.off = nil, nil, nil, 0
			}
			return 0, io.EOF
		}
		if r.buf == nil {
			r.buf = readerBufs.Get().(*readerBuf)
			r.vals, r.raw = r.buf.vals, r.buf.raw
		}
		n := max(1, readChunk/r.cols)
		hi := min(r.rows, r.next+n)
		if need := (hi - r.next) * r.cols; cap(r.vals) < need {
			r.vals = make([]float32, need)
		}
		vals := r.vals[:(hi-r.next)*r.cols]
		if err := r.w.ReadRows(r.name, r.next, hi, vals); err != nil {
			return 0, err
		}
		r.next = hi
		if need := 4 * len(vals); cap(r.raw) < need {
			r.raw = make([]byte, need)
		}
		r.raw, r.off = r.raw[:4*len(vals)], 0
		for i, v := range vals {
			binary.LittleEndian.PutUint32(r.raw[4*i:], math.Float32bits(v))
		}
	}
	n := copy(p, r.raw[r.off:])
	r.off += n
	return n, nil
}

// Release drops a tensor's f32 values (an engine that owns the weights
// and holds the tensor converted to its plan's format, bf16 or blocks, has
// no use for them): the memory is freed once no slice from Get is held.
// Later Gets of it fail, naming it; its shape stays in Names. A tensor
// that aliases a mapped file is dropped from the process's view only (the
// mapping stays until Close). After Private it can no longer be read, and
// what Private keeps for it (digests, a GGUF tensor's copied blocks and
// stored blocks) goes too.
// Releasing twice is fine.
func (w *Weights) Release(name string) error {
	if w == nil {
		return errors.New("weights: nil")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("weights: release %q: weights are closed", name)
	}
	t, ok := w.tensors[name]
	if !ok {
		return fmt.Errorf("weights: release: no tensor %q", name)
	}
	t.data, t.released = nil, true
	if t.ownFill {
		// Private's source (digests, or a GGUF tensor's copied blocks,
		// stored blocks included: an engine that multiplies them as they
		// are holds its own reference) is freed; a mapped source costs
		// nothing and stays readable.
		t.fill, t.gguf, t.ownFill = nil, nil, false
		delete(w.blocks, name)
	}
	w.tensors[name] = t
	for key := range w.stacks {
		for _, part := range strings.Split(key, "\x00") {
			if part == name {
				delete(w.stacks, key) // the stack no longer holds every part
			}
		}
	}
	return nil
}

// Stack returns the named tensors' values end to end in one buffer (the
// rows of a fused projection: q, k and v, or gate and up) and makes each
// tensor a view of its part, so the model holds one copy and a kernel
// reads one matrix. Values and shapes are unchanged; slices from an
// earlier Get still read the same values (and keep the old memory alive
// until dropped). Stacking names that are already stacked in that order
// returns the same buffer without copying.
func (w *Weights) Stack(names []string) ([]float32, error) {
	if w == nil {
		return nil, errors.New("weights: nil")
	}
	if w.err != nil {
		return nil, w.err
	}
	if len(names) == 0 {
		return nil, errors.New("weights: stack of no tensors")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errors.New("weights: stack: weights are closed")
	}
	key := strings.Join(names, "\x00")
	if buf, ok := w.stacks[key]; ok {
		return buf, nil
	}
	total := 0
	for _, name := range names {
		t, ok := w.tensors[name]
		if !ok {
			return nil, fmt.Errorf("weights: stack: no tensor %q", name)
		}
		if t.released {
			return nil, fmt.Errorf("weights: stack: tensor %q was released", name)
		}
		if t.data == nil && t.fill == nil {
			return nil, fmt.Errorf("weights: stack: tensor %q has no values", name)
		}
		total += elems(t.shape)
	}
	// A lazy part is produced straight into its place in the stack, not
	// made resident on its own first.
	buf := make([]float32, total)
	off := 0
	for _, name := range names {
		t := w.tensors[name]
		n := elems(t.shape)
		part := buf[off : off+n : off+n]
		if t.data != nil {
			copy(part, t.data)
		} else if err := t.fill(0, n, part); err != nil {
			return nil, fmt.Errorf("weights: stack: tensor %q: %w", name, err)
		}
		t.data, t.view = part, false
		if t.ownFill {
			t.fill, t.gguf, t.ownFill = nil, nil, false
		}
		w.tensors[name] = t
		off += n
	}
	if w.stacks == nil {
		w.stacks = map[string][]float32{}
	}
	w.stacks[key] = buf
	return buf, nil
}

// Names lists the tensors in canonical order (Config.TensorSpecs).
func (w *Weights) Names() []string {
	if w == nil {
		return nil
	}
	return append([]string(nil), w.names...)
}

// TotalBytes is the size of all tensors as float32.
func (w *Weights) TotalBytes() int64 {
	if w == nil {
		return 0
	}
	return w.bytes
}

// Close releases the file mapping that F32 checkpoints are read through;
// tensors from Get must not be used afterwards. Closing twice is fine.
func (w *Weights) Close() error {
	if w == nil || w.closed {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.tensors, w.stacks, w.blocks = nil, nil, nil
	return w.closeSources()
}

// closeSources closes the mapped files the tensors read (w.mu held).
func (w *Weights) closeSources() error {
	var err error
	if w.set != nil {
		err = w.set.Close()
		w.set = nil
	}
	if w.closeSource != nil {
		if e := w.closeSource(); err == nil {
			err = e
		}
		w.closeSource = nil
	}
	if err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	return nil
}

// Load reads a Hugging Face checkpoint directory: config.json and the
// safetensors weights (model.safetensors or an index and its shards).
//
// Every tensor cfg.TensorSpecs() lists must be present with exactly its
// shape, in F32, BF16 or F16; BF16 and F16 are converted to float32 here,
// F32 tensors are used in place from the mapped file. Extra tensors whose
// names end in ".weight" or ".bias" are rejected, since they mean the
// config does not describe the file (a wrong layer count, biases the
// family lacks); other extras, such as rotary "inv_freq" buffers, are
// ignored. A tied model (tie_word_embeddings) may still carry
// lm_head.weight, as some exporters write it: it is accepted only when it
// equals model.embed_tokens.weight, and then ignored; a different one
// means the checkpoint is untied and is an error.
func Load(dir string) (*Weights, error) { return LoadWithProgress(dir, nil) }

// LoadWithProgress is Load reporting, after each tensor is converted, the
// elements done out of the total (progress may be nil; it is called from
// the loading goroutines one at a time).
func LoadWithProgress(dir string, progress func(done, total int64)) (*Weights, error) {
	cfg, err := ReadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("weights %s: %w", dir, err)
	}
	set, err := safetensors.OpenModel(dir)
	if err != nil {
		return nil, fmt.Errorf("weights %s: %w", dir, err)
	}
	w, err := load(dir, cfg, set, progress)
	if err != nil {
		_ = set.Close()
		return nil, err
	}
	return w, nil
}

func load(dir string, cfg *Config, set *safetensors.Set, progress func(done, total int64)) (*Weights, error) {
	specs, tiedHead, err := checkSet(dir, cfg, set)
	if err != nil {
		return nil, err
	}

	// Every tensor is checked now, streamed through a scratch buffer with
	// its pages dropped behind it, and read again only when used: an F32
	// tensor as a view of the mapping, a 16-bit one converted on its
	// first Get or a chunk at a time by ReadRows. The file is never
	// resident whole in this process.
	err = checkFiniteAll(specs, func(i, lo, hi int, dst []float32) error {
		return set.DecodeRange(specs[i].Name, int64(lo), int64(hi), dst)
	}, progress)
	if err != nil {
		return nil, fmt.Errorf("weights %s: %w", dir, err)
	}
	if tiedHead {
		err := sameTensor(func(lo, hi int, dst []float32) error { return set.DecodeRange(LMHeadName, int64(lo), int64(hi), dst) },
			func(lo, hi int, dst []float32) error { return set.DecodeRange(EmbedName, int64(lo), int64(hi), dst) },
			LMHeadName, EmbedName, cfg.VocabSize*cfg.HiddenSize)
		if err != nil {
			file, _ := set.FileOf(LMHeadName)
			return nil, fmt.Errorf("weights %s: %w", file, err)
		}
	}
	byName := make(map[string][]float32, len(specs))
	for _, s := range specs {
		if set.IsView(s.Name) {
			v, err := set.Float32(s.Name)
			if err != nil {
				return nil, fmt.Errorf("weights %s: %w", dir, err)
			}
			byName[s.Name] = v
		}
	}
	w := newWeights(cfg, specs, byName, set)
	for _, s := range specs {
		t := w.tensors[s.Name]
		if byName[s.Name] != nil {
			t.view = true
		} else {
			name := s.Name
			t.fill = func(lo, hi int, dst []float32) error {
				return set.DecodeRange(name, int64(lo), int64(hi), dst)
			}
			t.mapped = true
		}
		w.tensors[s.Name] = t
	}
	return w, nil
}

// checkSet checks that set holds the tensors cfg lists, with their shapes
// and a dtype that agrees with torch_dtype, and no weight the config does
// not imply; tiedHead says that a tied model's file carries an
// lm_head.weight too (to be compared with the embedding).
func checkSet(dir string, cfg *Config, set *safetensors.Set) (specs []TensorSpec, tiedHead bool, err error) {
	specs = cfg.TensorSpecs()
	where := safetensors.SingleFile
	if files := set.Files(); len(files) != 1 || filepath.Base(files[0]) != safetensors.SingleFile {
		where = "the shards of " + safetensors.IndexFile
	}
	want := map[string]bool{}
	for _, s := range specs {
		want[s.Name] = true
		in, err := set.Info(s.Name)
		if err != nil {
			return nil, false, fmt.Errorf("weights %s: tensor %q (shape %s per config.json) is missing from %s", dir, s.Name, shapeStr(s.Shape), where)
		}
		if !slices.Equal(in.Shape, s.Shape) {
			file, _ := set.FileOf(s.Name)
			return nil, false, fmt.Errorf("weights %s: tensor %q: shape %s in the file vs config's %s", file, s.Name, shapeStr(in.Shape), shapeStr(s.Shape))
		}
		if other, ok := halfMismatch(cfg.TorchDType, in.DType); ok {
			file, _ := set.FileOf(s.Name)
			return nil, false, fmt.Errorf("weights %s: tensor %q is %s but config.json's torch_dtype is %s (%s bytes read as %s would load silently wrong)",
				file, s.Name, in.DType, cfg.TorchDType, other, in.DType)
		}
	}
	for _, name := range set.Names() {
		if want[name] {
			continue
		}
		file, _ := set.FileOf(name)
		if name == LMHeadName && cfg.TieWordEmbeddings {
			in, _ := set.Info(name)
			if d := []int{cfg.VocabSize, cfg.HiddenSize}; !slices.Equal(in.Shape, d) {
				return nil, false, fmt.Errorf("weights %s: tensor %q: shape %s in the file vs config's %s", file, name, shapeStr(in.Shape), shapeStr(d))
			}
			tiedHead = true
			continue
		}
		if strings.HasSuffix(name, ".weight") || strings.HasSuffix(name, ".bias") {
			return nil, false, fmt.Errorf("weights %s: unexpected tensor %q: config.json implies no such weight (does the config match the checkpoint?)", file, name)
		}
	}
	return specs, tiedHead, nil
}

// checkFiniteAll streams every tensor of specs through scratch, read by
// read (elements [lo, hi) of specs[i] into dst), on GOMAXPROCS goroutines,
// and refuses NaN or Inf, naming the first tensor in specs' order that
// holds one. progress, when not nil, is called after each tensor with the
// elements done out of the total, one call at a time.
func checkFiniteAll(specs []TensorSpec, read func(i, lo, hi int, dst []float32) error, progress func(done, total int64)) error {
	return forEachTensor(specs, func(i int, scratch []float32) error {
		return checkFinite(specs[i], func(lo, hi int, dst []float32) error { return read(i, lo, hi, dst) }, scratch)
	}, progress)
}

// forEachTensor runs do for every tensor of specs (its index, and a
// scratch buffer of readChunk values the goroutine owns) on GOMAXPROCS
// goroutines and returns the error of the first tensor in specs' order
// that failed. progress, when not nil, is called after each tensor with
// the elements done out of the total, one call at a time.
func forEachTensor(specs []TensorSpec, do func(i int, scratch []float32) error, progress func(done, total int64)) error {
	var total, done int64
	for _, s := range specs {
		total += int64(s.Elems())
	}
	scratch := make([][]float32, fanout.Workers(len(specs), 0)) // one per goroutine, made on its first tensor
	var mu sync.Mutex
	return fanout.EachErr(len(specs), 0, func(w, i int) error {
		if scratch[w] == nil {
			scratch[w] = make([]float32, readChunk)
		}
		err := do(i, scratch[w])
		if progress != nil {
			mu.Lock()
			done += int64(specs[i].Elems())
			progress(done, total)
			mu.Unlock()
		}
		return err
	})
}

// checkFinite streams tensor s through scratch, a chunk of whole rows at
// a time where a row fits, and refuses NaN or Inf.
func checkFinite(s TensorSpec, read fillFunc, scratch []float32) error {
	return checkFiniteSeen(s, read, scratch, nil)
}

// checkFiniteSeen is checkFinite that also shows each chunk to seen
// (when not nil), with the index of its first element.
func checkFiniteSeen(s TensorSpec, read fillFunc, scratch []float32, seen func(base int, v []float32)) error {
	n, step := s.Elems(), len(scratch)
	if c := cols(s.Shape); c <= step {
		step -= step % c
	}
	for lo := 0; lo < n; lo += step {
		hi := min(n, lo+step)
		v := scratch[:hi-lo]
		if err := read(lo, hi, v); err != nil {
			return err
		}
		if err := finiteAt(s.Name, v, lo); err != nil {
			return err
		}
		if seen != nil {
			seen(lo, v)
		}
	}
	return nil
}

// sameTensor checks, a chunk at a time, that tensors a and b (read by
// ra and rb, n elements each) hold the same bits: a tied checkpoint's
// duplicate head.
func sameTensor(ra, rb fillFunc, a, b string, n int) error {
	x, y := make([]float32, readChunk), make([]float32, readChunk)
	for lo := 0; lo < n; lo += readChunk {
		hi := min(n, lo+readChunk)
		if err := ra(lo, hi, x[:hi-lo]); err != nil {
			return err
		}
		if err := rb(lo, hi, y[:hi-lo]); err != nil {
			return err
		}
		if !sameBits(x[:hi-lo], y[:hi-lo]) {
			return fmt.Errorf("tensor %q differs from %q but config.json ties word embeddings (an untied checkpoint? set tie_word_embeddings to false)", a, b)
		}
	}
	return nil
}

// Private makes every tensor that reads the mapped file read memory of
// its own, and releases the mapping, so a later write to the file (which
// a shared mapping would show) cannot change what was hashed and
// computes. It takes no copy of the model: each tensor's bytes are read
// once now, a SHA-256 digest kept per 64 KiB piece, and every later read
// (pread into the process's own memory) is checked against them, so a
// changed file fails the read, naming the tensor. A GGUF tensor's stored
// blocks, which an engine may multiply as they lie, are copied. Tensors
// released before Private can no longer be read; Release frees a tensor's
// digests. It is a no-op for weights held in memory already.
func (w *Weights) Private() error {
	if w == nil || w.closed || w.private || (w.set == nil && w.closeSource == nil) {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	files := map[string]safetensors.ReadAtCloser{}
	closeFiles := func() error {
		var first error
		for _, f := range files {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	// Each file is opened again from where it was read: a checkpoint's
	// through its set (a built-in model's from the binary, never a file
	// of the same name on disk), a GGUF file by its path.
	open := func(path string) (safetensors.ReadAtCloser, error) {
		if f, ok := files[path]; ok {
			return f, nil
		}
		var f safetensors.ReadAtCloser
		var err error
		if w.set != nil {
			f, err = w.set.Reopen(path)
		} else {
			f, err = os.Open(path)
		}
		if err != nil {
			return nil, fmt.Errorf("weights: %w", err)
		}
		files[path] = f
		return f, nil
	}
	for _, name := range w.names {
		t := w.tensors[name]
		err := w.privateTensor(name, &t, open)
		if err != nil {
			_ = closeFiles()
			return err
		}
		w.tensors[name] = t
	}
	if err := w.closeSources(); err != nil {
		_ = closeFiles()
		return err
	}
	w.closeSource, w.private = closeFiles, true
	return nil
}

// privateTensor is Private for one tensor (w.mu held).
func (w *Weights) privateTensor(name string, t *weight, open func(string) (safetensors.ReadAtCloser, error)) error {
	if t.released {
		t.data, t.fill, t.gguf, t.view, t.mapped = nil, nil, nil, false, false
		delete(w.blocks, name)
		return nil
	}
	switch {
	case t.gguf != nil && t.gguf.mapped:
		if sb, ok := w.blocks[name]; ok {
			if &sb.Data[0] == &t.gguf.data[0] {
				// The stored blocks are the tensor's: one copy for both.
				sb.Data = append([]byte(nil), sb.Data...)
				w.blocks[name] = sb
				t.gguf = t.gguf.private(sb.Data)
				t.fill, t.ownFill, t.mapped = t.gguf.fill, true, false
				return nil
			}
			// Else the blocks are a copy in gelo's row order already.
		}
		f, err := open(w.ggufPath)
		if err != nil {
			return err
		}
		g, err := t.gguf.seal(f, w.ggufPath)
		if err != nil {
			return fmt.Errorf("weights: %w", err)
		}
		t.gguf, t.fill, t.ownFill, t.mapped = g, g.fill, true, false
	case t.view || t.mapped:
		if t.data != nil && !t.view {
			return nil // resident in memory of its own already
		}
		path, off, size, dtype, err := w.set.Where(name)
		if err != nil {
			return fmt.Errorf("weights: %w", err)
		}
		esize, err := safetensors.DTypeSize(dtype)
		if err != nil {
			return fmt.Errorf("weights: tensor %q: %w", name, err)
		}
		f, err := open(path)
		if err != nil {
			return err
		}
		sr, err := sealRange(f, path, name, off, size)
		if err != nil {
			return fmt.Errorf("weights: %w", err)
		}
		t.fill = sr.fill(dtype, esize)
		t.data, t.view, t.mapped, t.ownFill = nil, false, false, true
	}
	return nil
}

// halfMismatch reports a 16-bit tensor dtype that contradicts the
// config's torch_dtype (the other 16-bit format): the two have the same
// size, so a mislabelled file would load as noise. F32 tensors (often the
// norms of a bf16 checkpoint) and configs without torch_dtype pass.
func halfMismatch(torch, dtype string) (string, bool) {
	switch {
	case torch == "bfloat16" && dtype == safetensors.F16:
		return safetensors.BF16, true
	case torch == "float16" && dtype == safetensors.BF16:
		return safetensors.F16, true
	}
	return "", false
}

// finite refuses a tensor holding NaN or Inf, naming it and the first bad
// element: such weights would reach the identity and the device.
func finite(name string, v []float32) error { return finiteAt(name, v, 0) }

// finiteAt is finite for the part of a tensor that starts at element base.
func finiteAt(name string, v []float32, base int) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("tensor %q: element %d is %v (weights must be finite)", name, base+i, x)
		}
	}
	return nil
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func shapeStr(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Shape returns a tensor's shape and whether its values are in memory now
// (a lazy tensor's are not until its first Get), without producing them.
func (w *Weights) Shape(name string) (resident bool, shape []int, err error) {
	if w == nil {
		return false, nil, errors.New("weights: nil")
	}
	if w.err != nil {
		return false, nil, w.err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t, err := w.lookup(name)
	if err != nil {
		return false, nil, err
	}
	return t.data != nil, append([]int(nil), t.shape...), nil
}
