// Package record writes and reads what the device saw: every payload that
// crossed the boundary, in both directions, as a safetensors file anyone
// can attack with their own tools (numpy, torch). It holds the payloads
// only: token ids, plaintext rows and mask material never enter it.
//
// Layout: one F32 tensor of shape [rows, cols] per crossing, named
// "c000000", "c000001", ... in the order the device saw them. The file's
// __metadata__ holds the header (string keys such as "gelo.identity",
// "gelo.mask") and, under each tensor's name, a compact JSON object
// describing it:
//
//	{"pass":3,"phase":"decode","index":0,"op":"matmul",
//	 "weight":"model.layers.0.self_attn.qkv_proj.weight",
//	 "dir":"to-device","rows":16,"cols":1024,"q8":false}
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
		if c.Rows <= 0 || c.Cols <= 0 || len(c.Data) != c.Rows*c.Cols {
			return fmt.Errorf("record %s: crossing %d: %d values for %d x %d", path, i, len(c.Data), c.Rows, c.Cols)
		}
		name := tensorName(i)
		infos[i] = safetensors.TensorInfo{Name: name, DType: safetensors.F32, Shape: []int{c.Rows, c.Cols}}
		b, err := json.Marshal(info{Pass: c.Pass, Phase: c.Phase, Index: c.Index, Op: c.Op, Weight: c.Weight,
			Dir: string(c.Dir), Rows: c.Rows, Cols: c.Cols, Q8: c.Q8})
		if err != nil {
			return fmt.Errorf("record %s: %w", path, err)
		}
		meta[name] = string(b)
	}
	return safetensors.WriteFunc(path, infos, meta, func(i int, dst []byte) error {
		return safetensors.EncodeFloat32(safetensors.F32, r.Crossings[i].Data, dst)
	})
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
		c, err := DecodeInfo(name, meta[name])
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", path, err)
		}
		ti, err := f.Info(name)
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", path, err)
		}
		if ti.DType != safetensors.F32 || len(ti.Shape) != 2 || ti.Shape[0] != c.Rows || ti.Shape[1] != c.Cols {
			return nil, fmt.Errorf("record %s: tensor %s is %s%v, its metadata says F32[%d %d]", path, name, ti.DType, ti.Shape, c.Rows, c.Cols)
		}
		data, err := f.Float32(name)
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", path, err)
		}
		c.Data = append([]float32(nil), data...)
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

// maxDim bounds a recorded dimension: far above any crossing gelo makes,
// far below an allocation that could hurt.
const maxDim = 1 << 24

// DecodeInfo parses one tensor's metadata JSON into a crossing without
// data, refusing unknown fields, bad directions and bad shapes.
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
	return device.Crossing{Pass: in.Pass, Phase: in.Phase, Index: in.Index, Dir: dir, Op: in.Op, Weight: in.Weight,
		Rows: in.Rows, Cols: in.Cols, Q8: in.Q8}, nil
}
