// Package record writes and reads what the device saw: every payload that
// crossed the boundary, in both directions, as a safetensors file anyone
// can attack with their own tools (numpy, torch). It holds the payloads
// only: token ids, plaintext rows and mask material never enter it.
//
// Layout: one tensor of shape [rows, cols] per crossing, named
// "c000000", "c000001", ... in the order the device saw them: F32 for a
// float payload (a q8_0 one as the values it encodes), U32 for the lwe
// level's words (its ciphertext rows and the device's products of them,
// little-endian, exactly as they crossed). The file's __metadata__ holds
// the header (string keys such as "gelo.identity", "gelo.mask") and,
// under each tensor's name, a compact JSON object describing it:
//
//	{"pass":3,"phase":"decode","index":0,"op":"matmul",
//	 "weight":"model.layers.0.self_attn.qkv_proj.weight",
//	 "dir":"to-device","rows":16,"cols":1024,"q8":false}
//
// A U32 tensor's object adds "u32":true (absent, it is false), and the
// reader holds every tensor's dtype to it.
//
// A Python reader:
//
//	import json
//	from safetensors.numpy import load_file
//	from safetensors import safe_open
//	with safe_open("rec.safetensors", "np") as f:
//	    meta = f.metadata()
//	    for name in sorted(f.keys()):
//	        U, info = f.get_tensor(name), json.loads(meta[name])
package record

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gelo/device"
	"gelo/models/safetensors"
)

// FormatVersion is the value of the "gelo.record" header key.
const FormatVersion = "1"

// Header keys the recorder writes.
const (
	KeyFormat   = "gelo.record"
	KeyIdentity = "gelo.identity"
	KeyPlan     = "gelo.plan"
	// KeyLWESeed is an lwe plan's public seed (hex), from which
	// lwe.ExpandColumn makes the public matrix A its ciphertexts use.
	KeyLWESeed = "gelo.lwe.seed"
)

// Recording is a header and the crossings in the order they were seen.
type Recording struct {
	Header    map[string]string
	Crossings []device.Crossing
}

// PassTruth is what the TEE fed one forward pass: the ground truth an
// attack on a recording is scored against. The harness keeps it apart;
// Write has no place for it.
type PassTruth struct {
	Pass   int
	Prompt int    // index of the prompt the pass belongs to
	Phase  string // "prefill" or "decode"
	Pos    int    // position of the first row
	Tokens []int32
}

// info is a crossing's description in the metadata.
type info struct {
	Pass   int    `json:"pass"`
	Phase  string `json:"phase"`
	Index  int    `json:"index"`
	Op     string `json:"op"`
	Weight string `json:"weight"`
	Dir    string `json:"dir"`
	Rows   int    `json:"rows"`
	Cols   int    `json:"cols"`
	Q8     bool   `json:"q8"`
	U32    bool   `json:"u32,omitempty"`
}

// dtypeU32 is the safetensors dtype of a u32 payload (the format's
// name; the safetensors package reads and writes it as raw bytes).
const dtypeU32 = "U32"

// dtype is the tensor dtype the crossing's payload is stored as.
func (in info) dtype() string {
	if in.U32 {
		return dtypeU32
	}
	return safetensors.F32
}

func tensorName(i int) string { return fmt.Sprintf("c%06d", i) }

// Write writes r to path (atomically: a temporary file renamed into
// place). Header keys must not look like tensor names.
func Write(path string, r *Recording) error {
	meta := map[string]string{KeyFormat: FormatVersion}
	for k, v := range r.Header {
		if isTensorName(k) {
			return fmt.Errorf("record %s: header key %q is reserved for tensor metadata", path, k)
		}
		if k == KeyFormat {
			continue
		}
		meta[k] = v
	}
	infos := make([]safetensors.TensorInfo, len(r.Crossings))
	for i, c := range r.Crossings {
		if err := checkPayload(c); err != nil {
			return fmt.Errorf("record %s: crossing %d: %w", path, i, err)
		}
		name := tensorName(i)
		in := info{Pass: c.Pass, Phase: c.Phase, Index: c.Index, Op: c.Op, Weight: c.Weight,
			Dir: string(c.Dir), Rows: c.Rows, Cols: c.Cols, Q8: c.Q8, U32: c.Words != nil}
		infos[i] = safetensors.TensorInfo{Name: name, DType: in.dtype(), Shape: []int{c.Rows, c.Cols}}
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("record %s: %w", path, err)
		}
		meta[name] = string(b)
	}
	return safetensors.WriteFunc(path, infos, meta, func(i int, dst []byte) error {
		c := r.Crossings[i]
		if c.Words == nil {
			return safetensors.EncodeFloat32(safetensors.F32, c.Data, dst)
		}
		for j, w := range c.Words {
			binary.LittleEndian.PutUint32(dst[4*j:], w)
		}
		return nil
	})
}

// checkPayload checks that a crossing holds one payload, floats (Data)
// or words (Words, never q8_0), of Rows x Cols values.
func checkPayload(c device.Crossing) error {
	n, kind := len(c.Data), "values"
	switch {
	case c.Words != nil && c.Data != nil:
		return fmt.Errorf("both Data and Words set: a payload is floats or u32 words")
	case c.Words != nil && c.Q8:
		return fmt.Errorf("u32 words marked q8")
	case c.Words != nil:
		n, kind = len(c.Words), "u32 words"
	}
	if c.Rows <= 0 || c.Cols <= 0 || n != c.Rows*c.Cols {
		return fmt.Errorf("%d %s for %d x %d", n, kind, c.Rows, c.Cols)
	}
	return nil
}

func isTensorName(k string) bool {
	if len(k) != 7 || k[0] != 'c' {
		return false
	}
	_, err := strconv.Atoi(k[1:])
	return err == nil
}

// Read reads a recording written by Write, checking every tensor against
// its metadata; the data is copied out of the file.
func Read(path string) (*Recording, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer f.Close()
	meta := f.Metadata()
	if v := meta[KeyFormat]; v != FormatVersion {
		return nil, fmt.Errorf("record %s: metadata %s is %q, want %q (not a gelo recording?)", path, KeyFormat, v, FormatVersion)
	}
	r := &Recording{Header: map[string]string{}}
	for k, v := range meta {
		if !isTensorName(k) {
			r.Header[k] = v
		}
	}
	names := f.Names()
	sort.Strings(names)
	for i, name := range names {
		if name != tensorName(i) {
			return nil, fmt.Errorf("record %s: tensor %q where %q was expected (tensors are c000000, c000001, ...)", path, name, tensorName(i))
		}
		c, err := readCrossing(f, name, meta[name])
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", path, err)
		}
		c.Seq = i
		r.Crossings = append(r.Crossings, c)
	}
	for k := range meta {
		if n, err := strconv.Atoi(strings.TrimPrefix(k, "c")); isTensorName(k) && err == nil && n >= len(names) {
			return nil, fmt.Errorf("record %s: metadata for tensor %s, which the file does not hold", path, k)
		}
	}
	return r, nil
}

// readCrossing reads tensor name of f and its metadata s, holding the
// tensor's dtype and shape to what s says; the payload is copied out.
func readCrossing(f *safetensors.File, name, s string) (device.Crossing, error) {
	c, err := DecodeInfo(name, s)
	if err != nil {
		return c, err
	}
	ti, err := f.Info(name)
	if err != nil {
		return c, err
	}
	want := safetensors.F32
	if c.Words != nil {
		want = dtypeU32
	}
	if ti.DType != want || len(ti.Shape) != 2 || ti.Shape[0] != c.Rows || ti.Shape[1] != c.Cols {
		return c, fmt.Errorf("tensor %s is %s%v, its metadata says %s[%d %d]", name, ti.DType, ti.Shape, want, c.Rows, c.Cols)
	}
	if want == safetensors.F32 {
		data, err := f.Float32(name)
		if err != nil {
			return c, err
		}
		c.Data = append([]float32(nil), data...)
		return c, nil
	}
	raw, err := f.Bytes(name)
	if err != nil {
		return c, err
	}
	c.Words = make([]uint32, c.Rows*c.Cols)
	for i := range c.Words {
		c.Words[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return c, nil
}

// maxDim bounds a recorded dimension: far above any crossing gelo makes,
// far below an allocation that could hurt.
const maxDim = 1 << 24

// DecodeInfo parses one tensor's metadata JSON into a crossing without
// data, refusing unknown fields, bad directions, bad shapes and a payload
// both u32 and q8. A u32 crossing comes back with Words empty but not
// nil, a float one with Data nil: the reader allocates either once the
// file's tensor has been found to match (so a metadata string alone never
// makes it allocate).
func DecodeInfo(name, s string) (device.Crossing, error) {
	if s == "" {
		return device.Crossing{}, fmt.Errorf("tensor %s has no metadata", name)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var in info
	if err := dec.Decode(&in); err != nil {
		return device.Crossing{}, fmt.Errorf("tensor %s: metadata: %v", name, err)
	}
	if dec.More() {
		return device.Crossing{}, fmt.Errorf("tensor %s: metadata: trailing data", name)
	}
	dir := device.Direction(in.Dir)
	if dir != device.ToDevice && dir != device.ToTEE {
		return device.Crossing{}, fmt.Errorf("tensor %s: metadata: dir %q: want %s or %s", name, in.Dir, device.ToDevice, device.ToTEE)
	}
	if in.Rows <= 0 || in.Cols <= 0 || in.Rows > maxDim || in.Cols > maxDim || int64(in.Rows)*int64(in.Cols) > math.MaxInt32 {
		return device.Crossing{}, fmt.Errorf("tensor %s: metadata: shape %d x %d out of range", name, in.Rows, in.Cols)
	}
	if in.Pass < 0 || in.Index < 0 {
		return device.Crossing{}, fmt.Errorf("tensor %s: metadata: negative pass or index", name)
	}
	if in.U32 && in.Q8 {
		return device.Crossing{}, fmt.Errorf("tensor %s: metadata: u32 and q8 both set (u32 words are never q8_0)", name)
	}
	c := device.Crossing{Pass: in.Pass, Phase: in.Phase, Index: in.Index, Dir: dir, Op: in.Op, Weight: in.Weight,
		Rows: in.Rows, Cols: in.Cols, Q8: in.Q8}
	if in.U32 {
		c.Words = []uint32{}
	}
	return c, nil
}
