package attest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"gelo/fanout"
)

// TensorInput is one tensor of the model, as it is loaded. Exactly one of Sum, Reader and
// Data carries its bytes: Sum when it is not nil, else Reader when it is not nil (it is read
// to EOF, once), Data otherwise. Data is hashed in place, never copied, so a memory-mapped
// safetensors shard can be passed as sub-slices.
type TensorInput struct {
	Name   string
	DType  string // as the file names it, e.g. "BF16", "F32"
	Shape  []int
	Data   []byte
	Reader io.Reader
	// Sum, when not nil, is the SHA-256 of the tensor's bytes and Bytes their count, taken
	// by whoever read them (a loader that hashed each tensor while it checked and sealed
	// it, so that what any later read gives is these bytes): nothing is read again.
	Sum   *[sha256.Size]byte
	Bytes int64
}

// IdentityInput is everything that makes up a model's identity. Tensors must be in the
// canonical order the loader defines (the order is part of the identity).
type IdentityInput struct {
	// Config is the config.json file, byte for byte. Required.
	Config []byte
	// Tensors in canonical order. Names must be unique and non-empty.
	Tensors []TensorInput
	// Tokenizer is the tokenizer file, byte for byte; nil when the model has none. An empty
	// non-nil slice is a present, empty file.
	Tokenizer []byte
	// Flags are the settings that change numerics ("qk_norm"="true", "weights"="f32"). They are
	// hashed in sorted key order. Keys must be non-empty.
	Flags map[string]string
	// Workers bounds how many Data-backed tensors are hashed at once (0: GOMAXPROCS). Tensors
	// given as a Reader are always read one at a time, in order, so readers may share a stream.
	Workers int
}

// TensorDigest is what an Identity keeps of one tensor.
type TensorDigest struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	Bytes int64  `json:"bytes"`
	// Data is the SHA-256 of the tensor's bytes alone.
	Data Digest `json:"data"`
}

// digest returns the framed digest of the tensor (tensor_i in the package documentation).
func (t *TensorDigest) digest() Digest {
	h := sha256.New()
	writeFrameString(h, identityTag+"/tensor")
	writeFrameString(h, t.Name)
	writeFrameString(h, t.DType)
	writeU64(h, uint64(len(t.Shape)))
	for _, d := range t.Shape {
		writeU64(h, uint64(d))
	}
	writeU64(h, uint64(t.Bytes))
	writeFrame(h, t.Data[:])
	return Digest(h.Sum(nil))
}

// Identity is a model's identity: one digest over the parts, the digest of each part, and the
// per-tensor digests and flag values that let Compare say exactly what differs.
//
// An Identity read back from a file may omit Tensors and Flags (then Compare can only say
// which part differs); Validate checks that what it does carry is consistent.
type Identity struct {
	Digest       Digest            `json:"digest"`
	Config       Digest            `json:"config"`
	Weights      Digest            `json:"weights"`
	Tokenizer    Digest            `json:"tokenizer"`
	HasTokenizer bool              `json:"has_tokenizer"`
	FlagsDigest  Digest            `json:"flags_digest"`
	Flags        map[string]string `json:"flags,omitempty"`
	Tensors      []TensorDigest    `json:"tensors,omitempty"`
}

// String returns the identity digest as 64 hex digits.
func (id Identity) String() string { return id.Digest.String() }

// dtypeSizes are the element sizes of the dtypes whose byte length ComputeIdentity checks
// against the shape. Other dtypes are hashed without that check.
var dtypeSizes = map[string]int64{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1,
	"I64": 8, "U64": 8, "I32": 4, "U32": 4, "I16": 2, "U16": 2, "I8": 1, "U8": 1, "BOOL": 1,
}

// expectedBytes returns the byte length a tensor of this dtype and shape must have, and
// whether the dtype is known.
func expectedBytes(name, dtype string, shape []int) (int64, bool, error) {
	size, ok := dtypeSizes[strings.ToUpper(dtype)]
	n := uint64(1)
	for i, d := range shape {
		if d < 0 {
			return 0, false, fmt.Errorf("tensor %q: shape dimension %d is negative (%d)", name, i, d)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false, fmt.Errorf("tensor %q: shape %v has too many elements", name, shape)
		}
		n = lo
	}
	if !ok {
		return 0, false, nil
	}
	hi, lo := bits.Mul64(n, uint64(size))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false, fmt.Errorf("tensor %q: shape %v of %s is too large", name, shape, dtype)
	}
	return int64(lo), true, nil
}

// ComputeIdentity hashes a model's parts into its identity. It fails on an empty config, a
// tensor without a name or with a duplicate name, a negative dimension, a tensor whose byte
// length does not match its dtype and shape (for the usual safetensors dtypes), an empty flag
// key, or a reader error; each error names the tensor or field.
func ComputeIdentity(in IdentityInput) (Identity, error) {
	var id Identity
	if len(in.Config) == 0 {
		return id, errors.New("model identity: config.json is empty")
	}
	for k := range in.Flags {
		if k == "" {
			return id, errors.New("model identity: a numerics flag has an empty name")
		}
	}

	n := len(in.Tensors)
	tensors := make([]TensorDigest, n)
	want := make([]int64, n) // expected byte length, -1 when unknown
	seen := make(map[string]int, n)
	for i := range in.Tensors {
		t := &in.Tensors[i]
		if t.Name == "" {
			return id, fmt.Errorf("model identity: tensor %d has no name", i)
		}
		if j, dup := seen[t.Name]; dup {
			return id, fmt.Errorf("model identity: tensor %q appears twice (positions %d and %d)", t.Name, j, i)
		}
		seen[t.Name] = i
		exp, known, err := expectedBytes(t.Name, t.DType, t.Shape)
		if err != nil {
			return id, fmt.Errorf("model identity: %v", err)
		}
		want[i] = -1
		if known {
			want[i] = exp
		}
		tensors[i] = TensorDigest{Name: t.Name, DType: t.DType, Shape: slices.Clone(t.Shape)}
	}

	errs := make([]error, n)
	hashOne := func(i int, buf []byte) {
		t := &in.Tensors[i]
		td := &tensors[i]
		if t.Sum != nil {
			td.Bytes = t.Bytes
			td.Data = Digest(*t.Sum)
		} else if t.Reader != nil {
			h := sha256.New()
			nr, err := io.CopyBuffer(h, t.Reader, buf)
			if err != nil {
				errs[i] = fmt.Errorf("model identity: tensor %q: reading its data: %v", t.Name, err)
				return
			}
			td.Bytes = nr
			td.Data = Digest(h.Sum(nil))
		} else {
			td.Bytes = int64(len(t.Data))
			td.Data = sha256.Sum256(t.Data)
		}
		if want[i] >= 0 && td.Bytes != want[i] {
			errs[i] = fmt.Errorf("model identity: tensor %q: dtype %s with shape %v needs %d bytes, got %d",
				t.Name, t.DType, t.Shape, want[i], td.Bytes)
		}
	}

	var dataIdx []int
	for i := range in.Tensors {
		if in.Tensors[i].Reader == nil || in.Tensors[i].Sum != nil {
			dataIdx = append(dataIdx, i)
		}
	}
	// The in-memory tensors hash on in.Workers goroutines while this one
	// reads the readers' tensors in order.
	wait := fanout.Start(len(dataIdx), in.Workers, func(_, j int) { hashOne(dataIdx[j], nil) })
	// Readers, in order, on this goroutine.
	var buf []byte
	for i := range in.Tensors {
		if in.Tensors[i].Reader != nil && in.Tensors[i].Sum == nil {
			if buf == nil {
				buf = make([]byte, 1<<20)
			}
			hashOne(i, buf)
		}
	}
	wait()
	for _, err := range errs {
		if err != nil {
			return Identity{}, err
		}
	}

	id.Tensors = tensors
	id.Config = configDigest(in.Config)
	id.Weights = weightsDigest(tensors)
	id.HasTokenizer = in.Tokenizer != nil
	id.Tokenizer = tokenizerDigest(in.Tokenizer)
	if len(in.Flags) > 0 {
		id.Flags = make(map[string]string, len(in.Flags))
		for k, v := range in.Flags {
			id.Flags[k] = v
		}
	}
	id.FlagsDigest = flagsDigest(in.Flags)
	id.Digest = id.combine()
	return id, nil
}

// ConfigDigest is the digest an identity binds for config.json bytes, so a
// plan file's config section can be checked against its identity.
func ConfigDigest(config []byte) Digest { return configDigest(config) }

func configDigest(config []byte) Digest {
	h := sha256.New()
	writeFrameString(h, identityTag+"/config")
	writeFrame(h, config)
	return Digest(h.Sum(nil))
}

func weightsDigest(tensors []TensorDigest) Digest {
	h := sha256.New()
	writeFrameString(h, identityTag+"/weights")
	writeU64(h, uint64(len(tensors)))
	for i := range tensors {
		d := tensors[i].digest()
		writeFrame(h, d[:])
	}
	return Digest(h.Sum(nil))
}

func tokenizerDigest(tok []byte) Digest {
	h := sha256.New()
	writeFrameString(h, identityTag+"/tokenizer")
	writeBool(h, tok != nil)
	if tok != nil {
		writeFrame(h, tok)
	}
	return Digest(h.Sum(nil))
}

func flagsDigest(flags map[string]string) Digest {
	keys := make([]string, 0, len(flags))
	for k := range flags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	writeFrameString(h, identityTag+"/flags")
	writeU64(h, uint64(len(keys)))
	for _, k := range keys {
		writeFrameString(h, k)
		writeFrameString(h, flags[k])
	}
	return Digest(h.Sum(nil))
}

// combine computes the identity digest from the part digests.
func (id *Identity) combine() Digest {
	h := sha256.New()
	writeFrameString(h, identityTag)
	writeFrame(h, id.Config[:])
	writeFrame(h, id.Weights[:])
	writeFrame(h, id.Tokenizer[:])
	writeFrame(h, id.FlagsDigest[:])
	return Digest(h.Sum(nil))
}

// Validate checks that an Identity (typically one read back from a file) is consistent: the
// identity digest must follow from the part digests, the weights digest from Tensors when
// Tensors is not empty, the flags digest from Flags when Flags is not empty, and the tokenizer
// digest must be the absent-tokenizer digest exactly when HasTokenizer is false.
func (id Identity) Validate() error {
	if got := id.combine(); got != id.Digest {
		return fmt.Errorf("model identity %s is inconsistent: its part digests combine to %s", id.Digest, got)
	}
	if len(id.Tensors) > 0 {
		seen := make(map[string]bool, len(id.Tensors))
		for i := range id.Tensors {
			t := &id.Tensors[i]
			if t.Name == "" || seen[t.Name] {
				return fmt.Errorf("model identity %s: tensor %d has an empty or repeated name %q", id.Digest.Short(), i, t.Name)
			}
			seen[t.Name] = true
			if t.Bytes < 0 {
				return fmt.Errorf("model identity %s: tensor %q has a negative byte length", id.Digest.Short(), t.Name)
			}
			for _, d := range t.Shape {
				if d < 0 {
					return fmt.Errorf("model identity %s: tensor %q has a negative dimension", id.Digest.Short(), t.Name)
				}
			}
		}
		if got := weightsDigest(id.Tensors); got != id.Weights {
			return fmt.Errorf("model identity %s is inconsistent: its tensor list hashes to weights %s, it records %s",
				id.Digest.Short(), got, id.Weights)
		}
	}
	if len(id.Flags) > 0 {
		if got := flagsDigest(id.Flags); got != id.FlagsDigest {
			return fmt.Errorf("model identity %s is inconsistent: its flags hash to %s, it records %s",
				id.Digest.Short(), got, id.FlagsDigest)
		}
	}
	if absent := tokenizerDigest(nil); (id.Tokenizer == absent) == id.HasTokenizer {
		return fmt.Errorf("model identity %s is inconsistent: has_tokenizer=%v does not match its tokenizer digest",
			id.Digest.Short(), id.HasTokenizer)
	}
	return nil
}

// MismatchError lists every way two identities differ, most useful first.
type MismatchError struct {
	Want, Got Digest
	Diffs     []string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("model identity mismatch (want %s, got %s): %s",
		e.Want.Short(), e.Got.Short(), strings.Join(e.Diffs, "; "))
}

// maxListed bounds how many tensors one message names.
const maxListed = 5

// Compare returns nil when the two identities are equal, and otherwise a *MismatchError that
// names what differs. Call it as want.Compare(got): messages say "want ..., got ...". Parts
// are named as precisely as the two identities allow (per tensor and per flag when both carry
// that detail, per part otherwise).
func (id Identity) Compare(got Identity) error {
	if id.Digest == got.Digest {
		return nil
	}
	e := &MismatchError{Want: id.Digest, Got: got.Digest}
	add := func(format string, args ...any) { e.Diffs = append(e.Diffs, fmt.Sprintf(format, args...)) }

	if id.Weights != got.Weights {
		if len(id.Tensors) > 0 && len(got.Tensors) > 0 {
			for _, d := range diffTensors(id.Tensors, got.Tensors) {
				add("weights differ: %s", d)
			}
		} else {
			add("weights differ (want %s, got %s)", id.Weights.Short(), got.Weights.Short())
		}
	}
	if id.Config != got.Config {
		add("config.json differs (want %s, got %s)", id.Config.Short(), got.Config.Short())
	}
	switch {
	case id.HasTokenizer && !got.HasTokenizer:
		add("tokenizer: want one, got none")
	case !id.HasTokenizer && got.HasTokenizer:
		add("tokenizer: want none, got one")
	case id.Tokenizer != got.Tokenizer:
		add("tokenizer differs (want %s, got %s)", id.Tokenizer.Short(), got.Tokenizer.Short())
	}
	if id.FlagsDigest != got.FlagsDigest {
		wantDetail := len(id.Flags) > 0 || id.FlagsDigest == flagsDigest(nil)
		gotDetail := len(got.Flags) > 0 || got.FlagsDigest == flagsDigest(nil)
		if wantDetail && gotDetail {
			for _, d := range diffFlags(id.Flags, got.Flags) {
				add("%s", d)
			}
		} else {
			add("numerics flags differ (want %s, got %s)", id.FlagsDigest.Short(), got.FlagsDigest.Short())
		}
	}
	if len(e.Diffs) == 0 {
		add("the identity digests differ although every part agrees; one of them is inconsistent (see Identity.Validate)")
	}
	return e
}

func diffTensors(want, got []TensorDigest) []string {
	var out []string
	wantIdx := make(map[string]int, len(want))
	for i := range want {
		wantIdx[want[i].Name] = i
	}
	gotIdx := make(map[string]int, len(got))
	for i := range got {
		gotIdx[got[i].Name] = i
	}
	var missing, extra, changed []string
	for i := range want {
		j, ok := gotIdx[want[i].Name]
		if !ok {
			missing = append(missing, want[i].Name)
			continue
		}
		w, g := &want[i], &got[j]
		switch {
		case w.DType != g.DType:
			changed = append(changed, fmt.Sprintf("tensor %s: dtype want %s, got %s", w.Name, w.DType, g.DType))
		case !slices.Equal(w.Shape, g.Shape):
			changed = append(changed, fmt.Sprintf("tensor %s: shape want %v, got %v", w.Name, w.Shape, g.Shape))
		case w.Bytes != g.Bytes:
			changed = append(changed, fmt.Sprintf("tensor %s: length want %d bytes, got %d", w.Name, w.Bytes, g.Bytes))
		case w.Data != g.Data:
			changed = append(changed, fmt.Sprintf("tensor %s: data differs (want %s, got %s)", w.Name, w.Data.Short(), g.Data.Short()))
		}
	}
	for i := range got {
		if _, ok := wantIdx[got[i].Name]; !ok {
			extra = append(extra, got[i].Name)
		}
	}
	out = append(out, listSome(changed)...)
	if len(missing) > 0 {
		out = append(out, fmt.Sprintf("%d tensor(s) missing: %s", len(missing), nameSome(missing)))
	}
	if len(extra) > 0 {
		out = append(out, fmt.Sprintf("%d unexpected tensor(s): %s", len(extra), nameSome(extra)))
	}
	if len(out) == 0 {
		// Same tensors, same contents: the order differs.
		for i := range want {
			if want[i].Name != got[i].Name {
				out = append(out, fmt.Sprintf("tensor order differs at position %d: want %s, got %s", i, want[i].Name, got[i].Name))
				break
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "the weights digests differ although every tensor agrees; one identity is inconsistent (see Identity.Validate)")
	}
	return out
}

func listSome(items []string) []string {
	if len(items) <= maxListed {
		return items
	}
	out := slices.Clone(items[:maxListed])
	return append(out, fmt.Sprintf("and %d more tensor(s) differ", len(items)-maxListed))
}

func nameSome(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxListed)
}

func diffFlags(want, got map[string]string) []string {
	keys := make([]string, 0, len(want)+len(got))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		w, wok := want[k]
		g, gok := got[k]
		switch {
		case wok && !gok:
			out = append(out, fmt.Sprintf("numerics flag %q: want %q, got unset", k, w))
		case !wok && gok:
			out = append(out, fmt.Sprintf("numerics flag %q: want unset, got %q", k, g))
		case w != g:
			out = append(out, fmt.Sprintf("numerics flag %q: want %q, got %q", k, w, g))
		}
	}
	if len(out) == 0 {
		out = append(out, "numerics flags digests differ although every flag agrees; one identity is inconsistent (see Identity.Validate)")
	}
	return out
}
