package models

import (
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strings"

	"gelo/models/gguf"
	"gelo/models/safetensors"
)

// GGUF tensor names (llama.cpp's) against gelo's (Hugging Face's): per
// layer "blk.N." + the GGUF suffix is model.layers.N. + the HF suffix.
var ggufLayerNames = [][2]string{
	{"attn_norm.weight", "input_layernorm.weight"},
	{"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
	{"attn_k.weight", "self_attn.k_proj.weight"}, {"attn_k.bias", "self_attn.k_proj.bias"},
	{"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_v.bias", "self_attn.v_proj.bias"},
	{"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_output.bias", "self_attn.o_proj.bias"},
	{"attn_q_norm.weight", "self_attn.q_norm.weight"}, {"attn_k_norm.weight", "self_attn.k_norm.weight"},
	{"ffn_norm.weight", "post_attention_layernorm.weight"},
	{"ffn_gate.weight", "mlp.gate_proj.weight"}, {"ffn_up.weight", "mlp.up_proj.weight"}, {"ffn_down.weight", "mlp.down_proj.weight"},
}

var ggufGlobalNames = [][2]string{
	{"token_embd.weight", EmbedName}, {"output_norm.weight", FinalNormName}, {"output.weight", LMHeadName},
}

// GGUFName maps a gelo tensor name to llama.cpp's ("" if it has none).
func GGUFName(hf string) string {
	for _, p := range ggufGlobalNames {
		if p[1] == hf {
			return p[0]
		}
	}
	rest, ok := strings.CutPrefix(hf, "model.layers.")
	if !ok {
		return ""
	}
	idx, suffix, _ := strings.Cut(rest, ".")
	for _, p := range ggufLayerNames {
		if p[1] == suffix {
			return "blk." + idx + "." + p[0]
		}
	}
	return ""
}

// ggufArch maps general.architecture to the config's model_type: llama.cpp
// writes mistral models as llama.
var ggufArch = map[string]string{"qwen3": "qwen3", "qwen2": "qwen2", "llama": "llama", "mistral": "llama"}

// ggufClass is the Hugging Face architecture class of each model type.
var ggufClass = map[string]string{"qwen3": "Qwen3ForCausalLM", "qwen2": "Qwen2ForCausalLM", "llama": "LlamaForCausalLM"}

// IsGGUF reports whether path is a regular file that starts with the GGUF
// magic.
func IsGGUF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	var b [4]byte
	n, _ := f.Read(b[:])
	return n == 4 && string(b[:]) == gguf.Magic
}

// OpenGGUF maps and parses a GGUF file.
func OpenGGUF(path string) (*gguf.File, error) {
	b, unmap, err := safetensors.MapFile(path)
	if err != nil {
		return nil, fmt.Errorf("gguf %s: %w", path, err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		if unmap != nil {
			unmap()
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.SetCloser(unmap)
	f.Path = path
	return f, nil
}

// GGUFConfig reads the model config from a GGUF file's metadata, checked
// against its tensors.
func GGUFConfig(f *gguf.File) (*Config, error) {
	archV, ok := f.Meta["general.architecture"]
	arch, _ := archV.String()
	mt, supported := ggufArch[arch]
	if !ok || !supported {
		return nil, fmt.Errorf("gguf: general.architecture %q is not supported (want qwen3, qwen2, llama or mistral)", arch)
	}
	num := func(key string, need bool) (int, error) {
		v, ok := f.Meta[arch+"."+key]
		if !ok {
			if need {
				return 0, fmt.Errorf("gguf: metadata %s.%s is missing", arch, key)
			}
			return 0, nil
		}
		n, ok := v.Int()
		if !ok || n < 0 || n > MaxDim*MaxDim {
			return 0, fmt.Errorf("gguf: metadata %s.%s is not a size", arch, key)
		}
		return int(n), nil
	}
	flt := func(key string, def float64) (float64, error) {
		v, ok := f.Meta[arch+"."+key]
		if !ok {
			return def, nil
		}
		x, ok := v.Float()
		if !ok {
			return 0, fmt.Errorf("gguf: metadata %s.%s is not a number", arch, key)
		}
		return x, nil
	}
	c := &Config{ModelType: mt, HiddenAct: "silu", TorchDType: "float32", Architectures: []string{ggufClass[mt]}}
	var err error
	for _, fld := range []struct {
		key  string
		dst  *int
		need bool
	}{
		{"block_count", &c.NumHiddenLayers, true}, {"embedding_length", &c.HiddenSize, true},
		{"feed_forward_length", &c.IntermediateSize, true}, {"attention.head_count", &c.NumAttentionHeads, true},
		{"attention.head_count_kv", &c.NumKeyValueHeads, false}, {"attention.key_length", &c.HeadDim, false},
		{"context_length", &c.MaxPositionEmbeddings, true},
	} {
		if *fld.dst, err = num(fld.key, fld.need); err != nil {
			return nil, err
		}
	}
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if c.RopeTheta, err = flt("rope.freq_base", 10000); err != nil {
		return nil, err
	}
	if c.RMSNormEps, err = flt("attention.layer_norm_rms_epsilon", 1e-6); err != nil {
		return nil, err
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return nil, fmt.Errorf("gguf: tensor token_embd.weight is missing or not a matrix")
	}
	c.VocabSize = int(emb.Dims[1])
	if toks, ok := f.Meta["tokenizer.ggml.tokens"]; ok && toks.Len() > c.VocabSize {
		return nil, fmt.Errorf("gguf: %d tokenizer tokens for a vocabulary of %d", toks.Len(), c.VocabSize)
	}
	_, hasOut := f.Tensor("output.weight")
	c.TieWordEmbeddings = !hasOut
	if _, ok := f.Tensor("blk.0.attn_q.bias"); ok && mt != "qwen2" {
		c.AttentionBias = true
	}
	if v, ok := f.Meta["tokenizer.ggml.bos_token_id"]; ok {
		if n, ok := v.Int(); ok {
			c.BOSTokenID = int(n)
		}
	}
	if v, ok := f.Meta["tokenizer.ggml.eos_token_id"]; ok {
		if n, ok := v.Int(); ok {
			c.EOSTokenIDs = TokenIDs{int(n)}
		}
	}
	if c.HeadDim == c.HiddenSize/max(c.NumAttentionHeads, 1) && c.HiddenSize%max(c.NumAttentionHeads, 1) == 0 && mt != "qwen3" {
		c.HeadDim = 0 // implied
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("gguf: config from the metadata: %w", err)
	}
	return c, nil
}

// GGUFConversion says what loading a GGUF file converts: gelo's weights
// are f32 to the TEE, so a tensor is dequantized (exactly: each value is
// what ggml's own dequantization gives) as it is read, a chunk of rows at
// a time from the mapped file, and never held whole as f32 unless a plan
// multiplies it in f32.
type GGUFConversion struct {
	Types map[gguf.TensorType]int // tensors per stored type
	Bytes int64                   // the tensors' bytes as f32
}

func (c GGUFConversion) String() string {
	if len(c.Types) == 0 || (len(c.Types) == 1 && c.Types[gguf.F32] > 0) {
		return "" // nothing converted
	}
	var parts []string
	keys := make([]gguf.TensorType, 0, len(c.Types))
	for t := range c.Types {
		keys = append(keys, t)
	}
	slices.Sort(keys)
	for _, t := range keys {
		parts = append(parts, fmt.Sprintf("%d %v", c.Types[t], t))
	}
	kept := ""
	if c.Types[gguf.Q4_K] > 0 {
		kept = "; a q4_k plan multiplies the Q4_K tensors' own blocks"
	}
	return fmt.Sprintf("gguf: %s tensors, dequantized exactly as the plan reads them (a chunk at a time from the mapped file; %d MiB as f32, held whole only by an f32 plan); a quantized plan requantizes them to its device format%s", strings.Join(parts, ", "), c.Bytes>>20, kept)
}

// ggufTensor reads a tensor from a GGUF file's blocks on demand: the
// source of a lazy tensor of LoadGGUF's weights.
type ggufTensor struct {
	name     string // gelo's, for errors
	typ      gguf.TensorType
	data     []byte // the tensor's blocks, rows in the file's order (nil once sealed)
	cols     int    // values a row
	rowBytes int
	// heads > 0 marks a llama q/k projection, stored in llama.cpp's
	// permutation of its rows (PermuteQK with this many heads).
	heads, half int
	mapped      bool         // data is a view of the mapping: its pages are dropped after each read
	fileOff     int64        // where the blocks start in the file
	sealed      *sealedRange // after Private: the blocks read from the file and checked
}

// storedRow is the file's row holding gelo row r (PermuteQK's map).
func (g *ggufTensor) storedRow(r int) int {
	if g.heads == 0 {
		return r
	}
	h, i, j := r/(2*g.half), r%(2*g.half)/g.half, r%g.half
	return h*2*g.half + j*2 + i
}

// rowBytesOf returns the blocks of the file's rows [a, b) and a function
// to call when done with them (it drops the mapped pages read, or gives a
// sealed read's buffer back).
func (g *ggufTensor) rowBytesOf(a, b int) ([]byte, func(), error) {
	lo, hi := a*g.rowBytes, b*g.rowBytes
	if g.sealed == nil {
		v := g.data[lo:hi]
		return v, func() { g.drop(v) }, nil
	}
	return g.sealed.readBuf(int64(lo), int64(hi))
}

// fill writes elements [lo, hi) of the tensor, in gelo's row order, into
// dst as float32 (a fillFunc), then drops the mapped pages it read.
func (g *ggufTensor) fill(lo, hi int, dst []float32) error {
	c := g.cols
	if g.heads == 0 && lo%c == 0 && hi%c == 0 {
		// Rows a step: about sealStep bytes of blocks, so a sealed read
		// of a whole tensor needs no buffer of its size.
		step := max(1, sealStep/g.rowBytes)
		for a := lo / c; a < hi/c; a += step {
			e := min(hi/c, a+step)
			b, done, err := g.rowBytesOf(a, e)
			if err != nil {
				return fmt.Errorf("gguf: %w", err)
			}
			err = gguf.Dequantize(g.typ, b, dst[a*c-lo:e*c-lo])
			done()
			if err != nil {
				return fmt.Errorf("gguf: tensor %s: %w", g.name, err)
			}
		}
		return nil
	}
	var scratch []float32
	for r := lo / c; r*c < hi; r++ {
		s := g.storedRow(r)
		b, done, err := g.rowBytesOf(s, s+1)
		if err != nil {
			return fmt.Errorf("gguf: %w", err)
		}
		a, e := max(lo, r*c), min(hi, (r+1)*c) // the part of row r wanted
		out := dst[a-lo : e-lo]
		if e-a < c {
			if scratch == nil {
				scratch = make([]float32, c)
			}
			out = scratch
		}
		err = gguf.Dequantize(g.typ, b, out)
		done()
		if err != nil {
			return fmt.Errorf("gguf: tensor %s: %w", g.name, err)
		}
		if e-a < c {
			copy(dst[a-lo:e-lo], scratch[a-r*c:e-r*c])
		}
	}
	return nil
}

func (g *ggufTensor) drop(b []byte) {
	if g.mapped {
		safetensors.DropMapped(b)
	}
}

// private returns g reading its own copy of the blocks (data, when not
// nil, already holds them: a tensor's stored blocks share the copy).
func (g *ggufTensor) private(data []byte) *ggufTensor {
	p := *g
	if data == nil {
		data = append([]byte(nil), g.data...)
	}
	g.drop(g.data)
	p.data, p.mapped = data, false
	return &p
}

// seal returns g reading its blocks from f (the file at path), checked
// against digests taken now (Private's).
func (g *ggufTensor) seal(f io.ReaderAt, path string) (*ggufTensor, error) {
	sr, err := sealRange(f, path, g.name, g.fileOff, int64(len(g.data)))
	if err != nil {
		return nil, err
	}
	p := *g
	p.data, p.mapped, p.sealed = nil, false, sr
	return &p, nil
}

// LoadGGUF reads the weights of a GGUF file for cfg (from GGUFConfig):
// every tensor the config needs, mapped to its gelo name and its shape
// checked. Each is lazy: dequantized to f32 (and llama.cpp's Q/K row
// permutation undone, for llama-architecture files) when it is read, from
// the file's blocks, so the model is never whole in memory as f32. Every
// value is checked finite here, streamed through scratch with the file's
// pages dropped behind it. The weights take f: it stays open until their
// Close, which closes it (and closes it at once when LoadGGUF fails).
func LoadGGUF(f *gguf.File, cfg *Config) (*Weights, GGUFConversion, error) {
	fail := func(err error, conv GGUFConversion) (*Weights, GGUFConversion, error) {
		_ = f.Close()
		return nil, conv, err
	}
	specs := cfg.TensorSpecs()
	srcs, blocks, conv, err := ggufSources(f, cfg, specs, true)
	if err != nil {
		return fail(err, conv)
	}
	err = forEachTensor(specs, func(i int, scratch []float32) error { return srcs[i].check(specs[i], scratch, nil) }, nil)
	if err != nil {
		return fail(fmt.Errorf("gguf: %w", err), conv)
	}
	w := newWeights(cfg, specs, nil, nil)
	for i, s := range specs {
		t := w.tensors[s.Name]
		t.fill, t.gguf = srcs[i].fill, srcs[i]
		t.mapped = srcs[i].mapped
		w.tensors[s.Name] = t
	}
	w.blocks = blocks
	w.closeSource, w.ggufPath = f.Close, f.Path
	return w, conv, nil
}

// multipliedAsStored reports whether a plan may multiply a tensor of type
// t and shape sh as its file stores it (a Q4_K matrix).
func multipliedAsStored(t gguf.TensorType, sh []int) bool { return t == gguf.Q4_K && len(sh) == 2 }

// check reads the whole tensor (spec s) through scratch and refuses NaN
// or Inf, and a 16-bit tensor whose values look like F32 bytes: F16 or
// BF16 holding float32 data reads each float32 as two values, its low
// half first. Random low halves give, among many values, NaN and Inf
// (F16) or absurd magnitudes with NaN (BF16): the finite check refuses
// those, and says what the label may hide. Values rounded to bf16 and
// then written as F32 have zero low halves: every even-indexed value is
// 0 and the odd ones are not, a pattern no real weight matrix has. What
// cannot be told apart is a mislabel whose values stay finite and
// irregular (F16 bytes read as BF16, say): those load as what the label
// says, and the identity binds them so.
//
// When h is not nil, the values (as little-endian float32, in gelo's row
// order) are written to it.
func (g *ggufTensor) check(s TensorSpec, scratch []float32, h hash.Hash) error {
	var le []byte
	sum := func(v []float32) {
		if h != nil {
			le = putF32LE(le, v)
			h.Write(le)
		}
	}
	if g.typ != gguf.F16 && g.typ != gguf.BF16 {
		return checkFiniteSeen(s, g.fill, scratch, func(_ int, v []float32) { sum(v) })
	}
	var n, even, odd int
	err := checkFiniteSeen(s, g.fill, scratch, func(base int, v []float32) {
		sum(v)
		for i, x := range v {
			if x == 0 {
				if (base+i)%2 == 0 {
					even++
				} else {
					odd++
				}
			}
		}
		n += len(v)
	})
	if err != nil {
		return fmt.Errorf("%w (a %v tensor holding F32 bytes reads as such)", err, g.typ)
	}
	if half := n / 2; n >= 64 && 10*even >= 9*half && 10*odd <= half {
		return fmt.Errorf("tensor %q is labelled %v, but %d of its %d even-indexed values are 0 and %d of the odd ones: F32 data (bf16-rounded values) read as %v, not %v weights",
			s.Name, g.typ, even, half, odd, g.typ, g.typ)
	}
	return nil
}

// ggufSources finds, for each of specs, its tensor in f with the shape the
// config implies, and returns their readers (views of f's bytes, not read
// yet) and, when withBlocks, the stored blocks a plan may multiply as they
// are (Q4_K matrices: views, or for a llama q/k projection a copy in
// gelo's row order, which reads the mapping).
func ggufSources(f *gguf.File, cfg *Config, specs []TensorSpec, withBlocks bool) ([]*ggufTensor, map[string]StoredBlocks, GGUFConversion, error) {
	conv := GGUFConversion{Types: map[gguf.TensorType]int{}}
	arch, _ := f.Meta["general.architecture"].String()
	srcs := make([]*ggufTensor, len(specs))
	blocks := map[string]StoredBlocks{}
	for i, s := range specs {
		gname := GGUFName(s.Name)
		t, ok := f.Tensor(gname)
		if !ok {
			return nil, nil, conv, fmt.Errorf("gguf: tensor %s (gelo's %s) is missing", gname, s.Name)
		}
		if !slices.Equal(t.Shape(), s.Shape) {
			return nil, nil, conv, fmt.Errorf("gguf: tensor %s has shape %v, the metadata implies %v", gname, t.Shape(), s.Shape)
		}
		g := &ggufTensor{name: s.Name, typ: t.Type, data: f.Data(t), cols: cols(s.Shape), mapped: f.Mapped(), fileOff: f.FileOffset(t)}
		rows := s.Elems() / g.cols
		if rows == 0 || len(g.data)%rows != 0 {
			return nil, nil, conv, fmt.Errorf("gguf: tensor %s: %d bytes are not %d rows", gname, len(g.data), rows)
		}
		g.rowBytes = len(g.data) / rows
		if arch == "llama" || arch == "mistral" {
			switch {
			case strings.HasSuffix(s.Name, "q_proj.weight"):
				g.heads = cfg.NumAttentionHeads
			case strings.HasSuffix(s.Name, "k_proj.weight"):
				g.heads = cfg.NumKeyValueHeads
			}
			if g.heads > 0 {
				g.half = rows / g.heads / 2
			}
		}
		if withBlocks && multipliedAsStored(t.Type, s.Shape) {
			// Multiplied as stored: a view of the mapping (Private copies
			// it), or in gelo's row order when the file permuted the rows.
			raw := g.data
			if g.heads > 0 {
				raw = permuteRowBytes(raw, rows, g.heads, true)
			}
			blocks[s.Name] = StoredBlocks{Type: t.Type, Data: raw}
		}
		srcs[i] = g
		conv.Types[t.Type]++
		conv.Bytes += 4 * int64(s.Elems())
	}
	return srcs, blocks, conv, nil
}

// PermuteRowBytes is PermuteQK on rows of stored blocks (a row moves as
// a whole).
func PermuteRowBytes(b []byte, rows, heads int) []byte { return permuteRowBytes(b, rows, heads, false) }

// permuteRowBytes is permuteRows on rows of stored bytes.
func permuteRowBytes(b []byte, rows, heads int, inverse bool) []byte {
	rb := len(b) / rows
	out := make([]byte, len(b))
	half := rows / heads / 2
	for h := range heads {
		for i := range 2 {
			for j := range half {
				src, dst := h*2*half+i*half+j, h*2*half+j*2+i
				if inverse {
					src, dst = dst, src
				}
				copy(out[dst*rb:(dst+1)*rb], b[src*rb:(src+1)*rb])
			}
		}
	}
	return out
}

// PermuteQK is llama.cpp's reordering of a llama q/k projection's rows
// (its converter's permute): within each head, the rows of the two rotary
// halves interleaved, row (h, i, j) of [heads, 2, half] taken to (h, j, i).
func PermuteQK(w []float32, shape []int, heads int) []float32 {
	return permuteRows(w, shape, heads, false)
}

func unpermuteQK(w []float32, shape []int, heads int) []float32 {
	return permuteRows(w, shape, heads, true)
}

func permuteRows(w []float32, shape []int, heads int, inverse bool) []float32 {
	rows, cols := shape[0], shape[1]
	half := rows / heads / 2
	out := make([]float32, len(w))
	for h := range heads {
		for i := range 2 {
			for j := range half {
				src := h*2*half + i*half + j // HF row
				dst := h*2*half + j*2 + i    // GGUF row
				if inverse {
					src, dst = dst, src
				}
				copy(out[dst*cols:(dst+1)*cols], w[src*cols:(src+1)*cols])
			}
		}
	}
	return out
}

// GGUF token types (llama.cpp's llama_token_type).
const (
	GGUFTokenNormal      = 1
	GGUFTokenUnknown     = 2
	GGUFTokenControl     = 3
	GGUFTokenUserDefined = 4
	GGUFTokenUnused      = 5
	GGUFTokenByte        = 6
)

// qwen2Pretokenizer is the byte-level split tokenizer.ggml.pre "qwen2"
// names (what a Qwen tokenizer.json spells out).
const qwen2Pretokenizer = `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]}`

// GGUFTokenizer builds the tokenizer.json and tokenizer_config.json that
// a GGUF file's own tokenizer (tokenizer.ggml.*: a gpt2 byte-level BPE
// with the qwen2 pre-tokenizer) amounts to: normal tokens form the BPE
// vocabulary, control and user-defined tokens the added tokens (control
// ones special), with the merges, the eos/pad tokens and the chat
// template. A file without a tokenizer gives nil, nil.
func GGUFTokenizer(f *gguf.File) (tokenizerJSON, configJSON []byte, err error) {
	modelV, ok := f.Meta["tokenizer.ggml.model"]
	if !ok {
		return nil, nil, nil
	}
	if m, _ := modelV.String(); m != "gpt2" {
		return nil, nil, fmt.Errorf("gguf: tokenizer.ggml.model %q is not supported (gelo reads gpt2 byte-level BPE)", m)
	}
	if v, ok := f.Meta["tokenizer.ggml.pre"]; ok {
		if p, _ := v.String(); p != "qwen2" {
			return nil, nil, fmt.Errorf("gguf: tokenizer.ggml.pre %q is not supported (gelo reads qwen2)", p)
		}
	}
	tokens, ok := f.Meta["tokenizer.ggml.tokens"].Strings()
	if !ok {
		return nil, nil, fmt.Errorf("gguf: tokenizer.ggml.tokens is missing or not strings")
	}
	types, _ := f.Meta["tokenizer.ggml.token_type"].Ints()
	if types != nil && len(types) != len(tokens) {
		return nil, nil, fmt.Errorf("gguf: %d token types for %d tokens", len(types), len(tokens))
	}
	merges, ok := f.Meta["tokenizer.ggml.merges"].Strings()
	if !ok {
		return nil, nil, fmt.Errorf("gguf: tokenizer.ggml.merges is missing or not strings")
	}
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	vocab := map[string]int{}
	var adds []added
	for id, tok := range tokens {
		ty := int64(GGUFTokenNormal)
		if types != nil {
			ty = types[id]
		}
		switch ty {
		case GGUFTokenUnused:
			// llama.cpp's padding up to the embedding's rows: no text maps there.
		case GGUFTokenControl, GGUFTokenUserDefined:
			adds = append(adds, added{ID: id, Content: tok, Special: ty == GGUFTokenControl})
		default:
			if _, dup := vocab[tok]; dup {
				return nil, nil, fmt.Errorf("gguf: token %q appears twice in the vocabulary", tok)
			}
			vocab[tok] = id
		}
	}
	mergeList := make([]string, len(merges))
	copy(mergeList, merges)
	tj := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": adds,
		"normalizer":     map[string]any{"type": "NFC"},
		"pre_tokenizer":  rawJSON(qwen2Pretokenizer),
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": mergeList},
	}
	if tokenizerJSON, err = json.Marshal(tj); err != nil {
		return nil, nil, err
	}
	cfg := map[string]any{"add_bos_token": false, "add_prefix_space": false, "errors": "replace",
		"clean_up_tokenization_spaces": false, "split_special_tokens": false, "bos_token": nil, "unk_token": nil}
	tokenAt := func(key string) any {
		v, ok := f.Meta[key]
		if !ok {
			return nil
		}
		n, ok := v.Int()
		if !ok || n < 0 || int(n) >= len(tokens) {
			return nil
		}
		return tokens[n]
	}
	cfg["eos_token"] = tokenAt("tokenizer.ggml.eos_token_id")
	cfg["pad_token"] = tokenAt("tokenizer.ggml.padding_token_id")
	if v, ok := f.Meta["tokenizer.chat_template"]; ok {
		if t, ok := v.String(); ok {
			cfg["chat_template"] = t
		}
	}
	if configJSON, err = json.Marshal(cfg); err != nil {
		return nil, nil, err
	}
	return tokenizerJSON, configJSON, nil
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }
