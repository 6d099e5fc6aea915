package models

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"path/filepath"

	"gelo/models/gguf"
	"gelo/models/safetensors"
)

// EmbeddedTokenizer is the tokenizer a GGUF file carries (GGUFTokenizer),
// taken from the same reading of the file as its config and weights.
type EmbeddedTokenizer struct {
	// JSON and Config are the tokenizer.json and tokenizer_config.json it
	// amounts to; JSON is nil when the file has none.
	JSON, Config []byte
	// Err says why the file's tokenizer cannot be used (nil if it can).
	Err error
}

// OpenPrivate is OpenAs for a model whose bytes must be the ones that
// compute, whatever happens to its files afterwards (what an identity is
// computed over, and a server runs): every tensor is read once, with
// pread from the file that was opened and parsed, while it is checked,
// and a SHA-256 digest is kept of each 64 KiB piece; every later read
// (pread into the process's own memory) is checked against them, and no
// mapping of the file stays. A write to a file after that cannot change a
// value nor crash the process (no SIGBUS from a truncated mapping): a
// read that sees it fails, naming the file and the tensor. A file written
// while it is read (its size or modification time differ at the end of
// the reading from when it was opened) is refused, naming it; so is a
// GGUF file whose metadata differ from what Resolve read. It costs no
// copy of the model (the digests are 1/2048 of its bytes; a Q4_K matrix a
// plan may multiply as stored is copied, as Private does), and one more
// SHA-256 of the file's bytes at each full read of the weights.
//
// A GGUF model's tokenizer (Model.Tokenizer) comes from the same reading.
func OpenPrivate(spec string, seed uint64, synthDType string, progress func(done, total int64)) (*Model, error) {
	return openPrivate(spec, seed, synthDType, true, progress)
}

// OpenPrivateUnhashed is OpenPrivate without the digests of the values
// that spare an identity a second reading (F32Digest): for a caller that
// computes no identity (one float32 hash of the model's values fewer,
// about 0.6 s of CPU a GB of float32 here); the sealing is the same.
func OpenPrivateUnhashed(spec string, seed uint64, synthDType string, progress func(done, total int64)) (*Model, error) {
	return openPrivate(spec, seed, synthDType, false, progress)
}

func openPrivate(spec string, seed uint64, synthDType string, digests bool, progress func(done, total int64)) (*Model, error) {
	src, cfg, err := Resolve(spec, seed, synthDType)
	if err != nil {
		return nil, err
	}
	switch {
	case src.GGUF != "":
		w, conv, tok, err := loadGGUFPrivate(src.GGUF, cfg, digests, progress)
		if err != nil {
			return nil, err
		}
		return &Model{Source: src, Weights: w, Notice: conv.String(), Tokenizer: tok}, nil
	case src.IsDir():
		w, err := loadDirPrivate(src.Dir, digests, progress)
		if err != nil {
			return nil, err
		}
		return &Model{Source: src, Weights: w}, nil
	case src.Builtin != "":
		w, err := loadBuiltinPrivate(src.Builtin, digests, progress)
		if err != nil {
			return nil, err
		}
		return &Model{Source: src, Weights: w}, nil
	}
	w, err := SynthesizeAs(cfg, src.Seed, src.SynthDType) // in memory: nothing to seal
	if err != nil {
		return nil, err
	}
	return &Model{Source: src, Weights: w}, nil
}

// sealedHook, when not nil, runs once a model's first tensor (in the
// config's order) is sealed, with the path of its file, before the others
// are read: a test's way to change the file in the middle of a load
// deterministically.
var sealedHook func(path string)

// loadDirPrivate is LoadWithProgress read as OpenPrivate says.
func loadDirPrivate(dir string, digests bool, progress func(done, total int64)) (*Weights, error) {
	cfg, err := ReadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("weights %s: %w", dir, err)
	}
	set, err := safetensors.OpenModel(dir)
	if err != nil {
		return nil, fmt.Errorf("weights %s: %w", dir, err)
	}
	w, err := sealSet(dir, cfg, set, digests, progress)
	if err != nil {
		_ = set.Close()
		return nil, err
	}
	return w, nil
}

// sealSet checks set against cfg (as load does) and seals every tensor
// while it checks it finite; the mappings are released, the files stay
// open for the checked reads until the weights' Close.
func sealSet(dir string, cfg *Config, set *safetensors.Set, digests bool, progress func(done, total int64)) (*Weights, error) {
	specs, tiedHead, err := checkSet(dir, cfg, set)
	if err != nil {
		return nil, err
	}
	fills := make([]fillFunc, len(specs))
	sums := make([]tensorSum, len(specs))
	err = forEachTensor(specs, func(i int, scratch []float32) error {
		fill, sum, err := sealTensor(set, specs[i].Name, scratch, digests)
		fills[i], sums[i] = fill, sum
		if i == 0 && err == nil && sealedHook != nil {
			path, _ := set.FileOf(specs[i].Name)
			sealedHook(path)
		}
		return err
	}, progress)
	if err != nil {
		return nil, fmt.Errorf("weights %s: %w", dir, err)
	}
	if tiedHead {
		var embed fillFunc
		for i, s := range specs {
			if s.Name == EmbedName {
				embed = fills[i]
			}
		}
		head, err := readTensor(set, LMHeadName)
		if err != nil {
			return nil, fmt.Errorf("weights %s: %w", dir, err)
		}
		if err := sameTensor(head, embed, LMHeadName, EmbedName, cfg.VocabSize*cfg.HiddenSize); err != nil {
			file, _ := set.FileOf(LMHeadName)
			return nil, fmt.Errorf("weights %s: %w", file, err)
		}
	}
	if err := set.Unchanged(); err != nil {
		return nil, err
	}
	if err := set.Unmap(); err != nil {
		return nil, fmt.Errorf("weights %s: %w", dir, err)
	}
	w := newWeights(cfg, specs, nil, set) // Close closes the files
	for i, s := range specs {
		t := w.tensors[s.Name]
		t.fill, t.ownFill = fills[i], true
		w.tensors[s.Name] = t
	}
	w.private = true
	if digests {
		w.setSums(specs, sums)
	}
	return w, nil
}

// setSums records the loader's digests of specs' tensors (F32Digest).
func (w *Weights) setSums(specs []TensorSpec, sums []tensorSum) {
	w.sums = make(map[string]tensorSum, len(specs))
	for i, s := range specs {
		w.sums[s.Name] = sums[i]
	}
}

// sealTensor reads a tensor of set from its open file a piece at a time,
// keeps each piece's digest, and refuses NaN or Inf (scratch holds a
// piece's values); it returns the checked reader of what it read and,
// when digest, the digest of its values as little-endian float32
// (F32Digest).
func sealTensor(set *safetensors.Set, name string, scratch []float32, digest bool) (fill fillFunc, ts tensorSum, err error) {
	path, off, size, dtype, err := set.Where(name)
	if err != nil {
		return nil, ts, err
	}
	esize, err := safetensors.DTypeSize(dtype)
	if err != nil || !safetensors.IsFloat(dtype) {
		return nil, ts, fmt.Errorf("%s: tensor %q: unsupported dtype %s (want F32, BF16 or F16)", path, name, dtype)
	}
	f, err := set.Handle(name)
	if err != nil {
		return nil, ts, err
	}
	h := sha256.New()
	var le []byte
	s := &sealedRange{f: f, path: path, name: name, off: off, size: size}
	bp := sealBufs.Get().(*[]byte)
	defer sealBufs.Put(bp)
	for lo := int64(0); lo < size; lo += sealPiece {
		b := (*bp)[:min(sealPiece, size-lo)]
		if _, err := f.ReadAt(b, off+lo); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, ts, fmt.Errorf("%s: tensor %q: %w", path, name, err)
		}
		s.sums = append(s.sums, sha256.Sum256(b))
		v := scratch[:len(b)/esize] // sealPiece is a multiple of every esize
		if err := safetensors.DecodeFloat32(dtype, b, v); err != nil {
			return nil, ts, fmt.Errorf("%s: tensor %q: %w", path, name, err)
		}
		if err := finiteAt(name, v, int(lo)/esize); err != nil {
			return nil, ts, err
		}
		switch {
		case !digest:
		case dtype == safetensors.F32:
			h.Write(b) // the values' bytes already
		default:
			le = putF32LE(le, v)
			h.Write(le)
		}
		ts.n += 4 * int64(len(v))
	}
	h.Sum(ts.sum[:0])
	return s.fill(dtype, esize), ts, nil
}

// readTensor is an unchecked reader of a tensor of set through its open
// file (for a comparison made before the files are checked unchanged).
func readTensor(set *safetensors.Set, name string) (fillFunc, error) {
	path, off, size, dtype, err := set.Where(name)
	if err != nil {
		return nil, err
	}
	esize, err := safetensors.DTypeSize(dtype)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", path, name, err)
	}
	f, err := set.Handle(name)
	if err != nil {
		return nil, err
	}
	return func(lo, hi int, dst []float32) error {
		if int64(hi*esize) > size {
			return fmt.Errorf("%s: tensor %q: elements [%d, %d) of %d", path, name, lo, hi, size/int64(esize))
		}
		b := make([]byte, (hi-lo)*esize)
		if _, err := f.ReadAt(b, off+int64(lo*esize)); err != nil {
			return fmt.Errorf("%s: tensor %q: %w", path, name, err)
		}
		return safetensors.DecodeFloat32(dtype, b, dst)
	}, nil
}

// loadGGUFPrivate is LoadGGUF read as OpenPrivate says: config, tokenizer
// and tensors from one opening of path, whose config must be want's.
func loadGGUFPrivate(path string, want *Config, digests bool, progress func(done, total int64)) (*Weights, GGUFConversion, *EmbeddedTokenizer, error) {
	m, err := safetensors.MapOpen(path)
	if err != nil {
		return nil, GGUFConversion{}, nil, fmt.Errorf("gguf %s: %w", path, err)
	}
	w, conv, tok, err := sealGGUF(path, m, want, digests, progress)
	if err != nil {
		_ = m.Close()
		return nil, conv, nil, err
	}
	return w, conv, tok, nil
}

func sealGGUF(path string, m *safetensors.Mapped, want *Config, digests bool, progress func(done, total int64)) (*Weights, GGUFConversion, *EmbeddedTokenizer, error) {
	f, err := gguf.Parse(m.Buf)
	if err != nil {
		return nil, GGUFConversion{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Path = path
	cfg, err := GGUFConfig(f)
	if err != nil {
		return nil, GGUFConversion{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	if want != nil && !bytes.Equal(cfg.JSON(), want.JSON()) {
		return nil, GGUFConversion{}, nil, fmt.Errorf("%s changed while it was being loaded (its metadata differ from the first reading)", path)
	}
	tok := &EmbeddedTokenizer{}
	tok.JSON, tok.Config, tok.Err = GGUFTokenizer(f)
	specs := cfg.TensorSpecs()
	srcs, _, conv, err := ggufSources(f, cfg, specs, false)
	if err != nil {
		return nil, conv, nil, fmt.Errorf("%s: %w", path, err)
	}
	// Each tensor is sealed (read and digested), then checked finite
	// through checked reads, its values hashed for the identity: what the
	// check saw is what was sealed.
	sums := make([]tensorSum, len(specs))
	err = forEachTensor(specs, func(i int, scratch []float32) error {
		g, err := srcs[i].seal(m.File, path)
		if err != nil {
			return err
		}
		srcs[i] = g
		if i == 0 && sealedHook != nil {
			sealedHook(path)
		}
		var h hash.Hash
		if digests {
			h = sha256.New()
		}
		if err := g.check(specs[i], scratch, h); err != nil {
			return err
		}
		if h != nil {
			h.Sum(sums[i].sum[:0])
		}
		sums[i].n = 4 * int64(specs[i].Elems())
		return nil
	}, progress)
	if err != nil {
		return nil, conv, nil, fmt.Errorf("gguf: %w", err)
	}
	blocks := map[string]StoredBlocks{}
	for i, s := range specs {
		g := srcs[i]
		if !multipliedAsStored(g.typ, s.Shape) {
			continue
		}
		data := make([]byte, g.sealed.size)
		if err := g.sealed.read(0, g.sealed.size, data); err != nil {
			return nil, conv, nil, fmt.Errorf("gguf: %w", err)
		}
		if g.heads > 0 {
			// In gelo's row order for the plan; the tensor keeps reading
			// the file's order through its sealed range.
			blocks[s.Name] = StoredBlocks{Type: g.typ, Data: permuteRowBytes(data, s.Elems()/g.cols, g.heads, true)}
			continue
		}
		blocks[s.Name] = StoredBlocks{Type: g.typ, Data: data}
		p := g.private(data) // one copy for both, read unchecked: it is ours
		p.sealed = nil
		srcs[i] = p
	}
	if err := m.Unchanged(); err != nil {
		return nil, conv, nil, err
	}
	if err := m.Unmap(); err != nil {
		return nil, conv, nil, fmt.Errorf("gguf %s: %w", path, err)
	}
	w := newWeights(cfg, specs, nil, nil)
	for i, s := range specs {
		t := w.tensors[s.Name]
		t.fill, t.gguf, t.ownFill = srcs[i].fill, srcs[i], true
		w.tensors[s.Name] = t
	}
	w.blocks = blocks
	w.closeSource, w.ggufPath, w.private = m.File.Close, path, true
	if digests {
		w.setSums(specs, sums)
	}
	return w, conv, tok, nil
}
