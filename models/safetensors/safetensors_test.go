package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func f32bytes(vs []float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func encode(t *testing.T, dtype string, vs []float32) []byte {
	t.Helper()
	size, _ := DTypeSize(dtype)
	b := make([]byte, size*len(vs))
	if err := EncodeFloat32(dtype, vs, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTripPerDType(t *testing.T) {
	dir := t.TempDir()
	vals := []float32{0, 1, -2, 0.5, 3.25, -0.125, 1024, 1.0 / 3}
	var tensors []Tensor
	for _, dt := range []string{F32, BF16, F16} {
		tensors = append(tensors, Tensor{Name: "t." + dt, DType: dt, Shape: []int{2, 4}, Data: encode(t, dt, vals)})
	}
	tensors = append(tensors,
		Tensor{Name: "a.ids", DType: "I64", Shape: []int{2}, Data: make([]byte, 16)},
		Tensor{Name: "scalar", DType: F32, Shape: []int{}, Data: f32bytes([]float32{7})},
		Tensor{Name: "empty", DType: BF16, Shape: []int{0, 3}, Data: nil},
	)
	path := filepath.Join(dir, "x.safetensors")
	md := map[string]string{"format": "pt", "b": "2"}
	if err := Write(path, tensors, md); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := []string{"a.ids", "empty", "scalar", "t.BF16", "t.F16", "t.F32"}
	if got := f.Names(); !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	if got := f.Metadata(); got["format"] != "pt" || got["b"] != "2" || len(got) != 2 {
		t.Fatalf("metadata %v", got)
	}
	for _, dt := range []string{F32, BF16, F16} {
		in, err := f.Info("t." + dt)
		if err != nil {
			t.Fatal(err)
		}
		if in.DType != dt || !slices.Equal(in.Shape, []int{2, 4}) {
			t.Fatalf("info %+v", in)
		}
		got, err := f.Float32("t." + dt)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			w := v
			switch dt {
			case BF16:
				w = BF16ToF32(F32ToBF16(v))
			case F16:
				w = F16ToF32(F32ToF16(v))
			}
			if math.Float32bits(got[i]) != math.Float32bits(w) {
				t.Errorf("%s[%d] = %v, want %v", dt, i, got[i], w)
			}
		}
	}
	if v, err := f.Float32("scalar"); err != nil || len(v) != 1 || v[0] != 7 {
		t.Fatalf("scalar %v %v", v, err)
	}
	if v, err := f.Float32("empty"); err != nil || len(v) != 0 {
		t.Fatalf("empty %v %v", v, err)
	}
	if _, err := f.Float32("a.ids"); err == nil || !strings.Contains(err.Error(), `tensor "a.ids": unsupported dtype I64`) {
		t.Fatalf("I64 read: %v", err)
	}
	if b, err := f.Bytes("a.ids"); err != nil || len(b) != 16 {
		t.Fatalf("I64 bytes: %v %v", len(b), err)
	}
	if _, err := f.Info("nope"); err == nil || !strings.Contains(err.Error(), `no tensor "nope"`) {
		t.Fatalf("missing info: %v", err)
	}

	// The header is sorted, space-padded to a multiple of 8, and a second
	// write is byte-identical.
	raw, _ := os.ReadFile(path)
	n := binary.LittleEndian.Uint64(raw)
	if n%8 != 0 {
		t.Fatalf("header length %d not a multiple of 8", n)
	}
	h := string(raw[8 : 8+n])
	if !strings.HasPrefix(h, `{"__metadata__":{"b":"2","format":"pt"},"a.ids":{"data_offsets":[0,16],"dtype":"I64","shape":[2]},`) {
		t.Fatalf("header %s", h)
	}
	path2 := filepath.Join(dir, "y.safetensors")
	slices.Reverse(tensors)
	if err := Write(path2, tensors, md); err != nil {
		t.Fatal(err)
	}
	raw2, _ := os.ReadFile(path2)
	if !bytes.Equal(raw, raw2) {
		t.Fatal("second write differs")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("dir holds %d entries, want 2 (no temp files)", len(ents))
	}
}

func TestF32ViewValidUntilClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.safetensors")
	if err := Write(path, []Tensor{{Name: "w", DType: F32, Shape: []int{3}, Data: f32bytes([]float32{1, 2, 3})}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if littleEndian && !f.IsView("w") {
		t.Error("aligned F32 tensor should be a view on a little-endian host")
	}
	v, err := f.Float32("w")
	if err != nil || !slices.Equal(v, []float32{1, 2, 3}) {
		t.Fatalf("%v %v", v, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Float32("w"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("read after close: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestF16Conversions(t *testing.T) {
	cases := []struct {
		h uint16
		f float32
	}{
		{0x0000, 0},
		{0x3c00, 1},
		{0xc000, -2},
		{0x0001, 0x1p-24},              // smallest subnormal
		{0x03ff, 1023 * 0x1p-24},       // largest subnormal
		{0x0400, 0x1p-14},              // smallest normal
		{0x7bff, 65504},                // largest finite
		{0x3555, 0.333251953125},       // 1/3 rounded
		{0x8001, -0x1p-24},             // negative subnormal
		{0x0200, 0x1p-15},              // mid subnormal
		{0x3c01, 1 + 0x1p-10},          // one ulp above 1
		{0x7c00, float32(math.Inf(1))}, // +inf
		{0xfc00, float32(math.Inf(-1))},
	}
	for _, c := range cases {
		if got := F16ToF32(c.h); math.Float32bits(got) != math.Float32bits(c.f) {
			t.Errorf("F16ToF32(%#04x) = %v, want %v", c.h, got, c.f)
		}
		if got := F32ToF16(c.f); got != c.h {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if got := F16ToF32(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("F16ToF32(-0) = %v", got)
	}
	if got := F32ToF16(float32(math.Copysign(0, -1))); got != 0x8000 {
		t.Errorf("F32ToF16(-0) = %#04x", got)
	}
	// Every binary16 value survives a round trip; NaNs stay NaN.
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("F16ToF32(%#04x) = %v, want NaN", h, f)
			}
			if b := F32ToF16(f); b&0x7c00 != 0x7c00 || b&0x3ff == 0 {
				t.Fatalf("F32ToF16(NaN from %#04x) = %#04x, not NaN", h, b)
			}
			continue
		}
		if back := F32ToF16(f); back != uint16(h) {
			t.Fatalf("round trip %#04x -> %v -> %#04x", h, f, back)
		}
	}
	// Rounding: ties to even, overflow to inf, underflow to zero.
	round := []struct {
		f float32
		h uint16
	}{
		{1 + 0x1p-11, 0x3c00},   // tie, down to even
		{1 + 3*0x1p-11, 0x3c02}, // tie, up to even
		{1 + 0x1p-11 + 0x1p-20, 0x3c01},
		{65519, 0x7bff}, // below the midpoint to 65536
		{65520, 0x7c00}, // midpoint: ties to even = inf
		{1e10, 0x7c00},
		{0x1p-25, 0x0000},       // half the smallest subnormal: tie to zero
		{0x1p-25 * 1.5, 0x0001}, // above the tie
		{3 * 0x1p-25, 0x0002},   // tie between 1 and 2 ulps: even
		{0x1p-30, 0x0000},
		{0x1p-14 - 0x1p-26, 0x0400}, // rounds up into the smallest normal
	}
	for _, c := range round {
		if got := F32ToF16(c.f); got != c.h {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	// Random values round to the nearest binary16.
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		f := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(f)) || math.Abs(float64(f)) >= 65520 {
			continue
		}
		h := F32ToF16(f)
		d := math.Abs(float64(F16ToF32(h)) - float64(f))
		for _, nb := range []uint16{h + 1, h - 1} {
			if nb&0x7c00 == 0x7c00 || (h&0x7fff == 0 && nb == h-1) {
				continue
			}
			if dn := math.Abs(float64(F16ToF32(nb)) - float64(f)); dn < d {
				t.Fatalf("F32ToF16(%g) = %#04x but %#04x is nearer", f, h, nb)
			}
		}
	}
}

func TestBF16Conversions(t *testing.T) {
	cases := []struct {
		f float32
		h uint16
	}{
		{0, 0},
		{1, 0x3f80},
		{-2, 0xc000},
		{1 + 0x1p-8, 0x3f80},           // tie, down to even
		{1 + 3*0x1p-8, 0x3f82},         // tie, up to even
		{1 + 0x1p-8 + 0x1p-20, 0x3f81}, // above the tie
		{float32(math.Inf(1)), 0x7f80},
		{float32(math.Inf(-1)), 0xff80},
		{math.MaxFloat32, 0x7f80}, // rounds past the largest finite bf16
		{0x1p-133, 0x0001},        // subnormal kept exactly
	}
	for _, c := range cases {
		if got := F32ToBF16(c.f); got != c.h {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := BF16ToF32(uint16(h))
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BF16ToF32(%#04x) = %#08x", h, math.Float32bits(f))
		}
		back := F32ToBF16(f)
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(BF16ToF32(back))) {
				t.Fatalf("NaN %#04x became %#04x", h, back)
			}
			continue
		}
		if back != uint16(h) {
			t.Fatalf("round trip %#04x -> %#04x", h, back)
		}
	}
	// A NaN whose payload lives only in the low 16 bits stays NaN.
	if got := F32ToBF16(math.Float32frombits(0x7f800001)); got&0x7f80 != 0x7f80 || got&0x7f == 0 {
		t.Errorf("low-payload NaN -> %#04x", got)
	}
}

// rawFile builds a file from a header string and data bytes.
func rawFile(header string, data []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func writeRaw(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenMalformed(t *testing.T) {
	huge := make([]byte, 16)
	binary.LittleEndian.PutUint64(huge, 200<<20)
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "file is 3 bytes, shorter than the 8-byte header length"},
		{"empty", nil, "file is 0 bytes"},
		{"header past end", rawFile(`{}`, nil)[:9], "header length 2 exceeds the 1 bytes after the length field"},
		{"header over cap", huge, "header length 209715200 exceeds the 104857600-byte limit"},
		{"bad json", rawFile(`{"a":`, nil), "header JSON"},
		{"not an object", rawFile(`[1,2]`, nil), "header JSON: want an object"},
		{"trailing", rawFile(`{} x`, nil), "trailing data"},
		{"unknown dtype", rawFile(`{"w":{"dtype":"X9","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)), `tensor "w": unknown dtype "X9"`},
		{"past data", rawFile(`{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, make([]byte, 8)), `tensor "w": data_offsets [0,16] run past the 8-byte data section`},
		{"reversed", rawFile(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}`, make([]byte, 8)), `tensor "w": data_offsets [8,4] are not an increasing pair`},
		{"negative offset", rawFile(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`, make([]byte, 8)), `are not an increasing pair`},
		{"size mismatch", rawFile(`{"model.norm.weight":{"dtype":"F32","shape":[64],"data_offsets":[0,10]}}`, make([]byte, 16)),
			`tensor "model.norm.weight": data_offsets [0,10] hold 10 bytes, shape [64] of F32 needs 256`},
		{"overflowing shape", rawFile(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, make([]byte, 4)), `needs more than the file holds`},
		{"negative dim", rawFile(`{"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,4]}}`, make([]byte, 4)), `tensor "w": shape [2 -1] has negative dimension -1`},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)),
			`tensor "b": data_offsets [4,12] overlap tensor "a" at [0,8]`},
		{"duplicate", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)), `key "a" appears twice`},
		{"no dtype", rawFile(`{"w":{"shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)), `tensor "w": entry has no dtype`},
		{"no shape", rawFile(`{"w":{"dtype":"F32","data_offsets":[0,4]}}`, make([]byte, 4)), `tensor "w": entry has no shape`},
		{"no offsets", rawFile(`{"w":{"dtype":"F32","shape":[1]}}`, make([]byte, 4)), `tensor "w": entry has no data_offsets`},
		{"three offsets", rawFile(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, make([]byte, 8)), `must hold two numbers`},
		{"unknown field", rawFile(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, make([]byte, 4)), `tensor "w": malformed entry`},
		{"fractional dim", rawFile(`{"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, make([]byte, 4)), `tensor "w": malformed entry`},
		{"entry not object", rawFile(`{"w":3}`, nil), `tensor "w": malformed entry`},
		{"bad metadata", rawFile(`{"__metadata__":{"a":1}}`, nil), `__metadata__ must map strings to strings`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeRaw(t, "model.safetensors", c.file)
			f, err := Open(p)
			if err == nil {
				f.Close()
				t.Fatalf("opened; want error containing %q", c.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "safetensors "+p+": ") || !strings.Contains(msg, c.want) {
				t.Fatalf("error %q\nwant prefix %q and %q", msg, "safetensors "+p+": ", c.want)
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "absent")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("absent file: %v", err)
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
}

func TestOpenToleratesGapsAndUnpaddedHeaders(t *testing.T) {
	// Offsets with a gap and a header whose length is not a multiple of 8
	// (so F32 data is unaligned and must be copied).
	data := append(f32bytes([]float32{1, 2}), 0, 0, 0, 0)
	data = append(data, f32bytes([]float32{3})...)
	p := writeRaw(t, "g.safetensors", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}, "z":{"dtype":"F16","shape":[0],"data_offsets":[4,4]}}`, data))
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, _ := f.Float32("a")
	b, _ := f.Float32("b")
	if !slices.Equal(a, []float32{1, 2}) || !slices.Equal(b, []float32{3}) {
		t.Fatalf("a=%v b=%v", a, b)
	}
}

func writeModel(t *testing.T, dir string, names ...string) {
	t.Helper()
	var ts []Tensor
	for i, n := range names {
		ts = append(ts, Tensor{Name: n, DType: F32, Shape: []int{2}, Data: f32bytes([]float32{float32(i), 1})})
	}
	if err := Write(filepath.Join(dir, SingleFile), ts, nil); err != nil {
		t.Fatal(err)
	}
}

func TestOpenModelSharded(t *testing.T) {
	dir := t.TempDir()
	infos := []TensorInfo{
		{"c", F32, []int{4}}, {"a", BF16, []int{8}}, {"b", F16, []int{2, 2}}, {"d", F32, []int{6}},
	}
	vals := [][]float32{{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, {-1, -2, -3, -4}, {9, 8, 7, 6, 5, 4}}
	// A stale single file must not shadow the shards.
	writeModel(t, dir, "stale")
	var order []string
	files, err := WriteSharded(dir, infos, map[string]string{"format": "pt"}, 24, func(i int, dst []byte) error {
		order = append(order, infos[i].Name)
		return EncodeFloat32(infos[i].DType, vals[i], dst)
	})
	if err != nil {
		t.Fatal(err)
	}
	// a (16 B) + b (8 B) fill 24; c (16 B) and d (24 B) each start a shard
	if !slices.Equal(order, []string{"a", "b", "c", "d"}) || len(files) != 3 || files[2] != "model-00003-of-00003.safetensors" {
		t.Fatalf("order %v files %v", order, files)
	}
	s, err := OpenModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Names(); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("names %v", got)
	}
	for i, in := range infos {
		got, err := s.Float32(in.Name)
		if err != nil || !slices.Equal(got, vals[i]) {
			t.Fatalf("%s: %v %v", in.Name, got, err)
		}
		info, _ := s.Info(in.Name)
		if info.DType != in.DType || !slices.Equal(info.Shape, in.Shape) {
			t.Fatalf("%s: info %+v", in.Name, info)
		}
	}
	if p, _ := s.FileOf("c"); filepath.Base(p) != "model-00002-of-00003.safetensors" {
		t.Fatalf("c in %s", p)
	}
	if ts := s.IndexMetadata()["total_size"]; ts != float64(16+8+16+24) {
		t.Fatalf("total_size %v", ts)
	}
	if _, err := os.Stat(filepath.Join(dir, SingleFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale single file still there: %v", err)
	}
}

func TestOpenModelErrors(t *testing.T) {
	index := func(t *testing.T, dir, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, IndexFile), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("empty dir", func(t *testing.T) {
		dir := t.TempDir()
		_, err := OpenModel(dir)
		if err == nil || !strings.Contains(err.Error(), "neither model.safetensors nor model.safetensors.index.json") {
			t.Fatal(err)
		}
	})
	t.Run("missing shard", func(t *testing.T) {
		dir := t.TempDir()
		index(t, dir, `{"weight_map":{"a":"s1.safetensors"}}`)
		_, err := OpenModel(dir)
		if err == nil || !strings.Contains(err.Error(), "shard s1.safetensors (holding 1 tensors) is missing") {
			t.Fatal(err)
		}
	})
	t.Run("tensor absent from shard", func(t *testing.T) {
		dir := t.TempDir()
		sub := filepath.Join(dir, "tmp")
		os.Mkdir(sub, 0o755)
		writeModel(t, sub, "a")
		os.Rename(filepath.Join(sub, SingleFile), filepath.Join(dir, "s1.safetensors"))
		index(t, dir, `{"weight_map":{"a":"s1.safetensors","b":"s1.safetensors"}}`)
		_, err := OpenModel(dir)
		if err == nil || !strings.Contains(err.Error(), `tensor "b": the index places it in s1.safetensors, which does not hold it`) {
			t.Fatal(err)
		}
	})
	t.Run("duplicate across shards", func(t *testing.T) {
		dir := t.TempDir()
		for _, s := range []string{"s1", "s2"} {
			sub := filepath.Join(dir, s)
			os.Mkdir(sub, 0o755)
			writeModel(t, sub, "a", s)
			os.Rename(filepath.Join(sub, SingleFile), filepath.Join(dir, s+".safetensors"))
		}
		index(t, dir, `{"weight_map":{"s1":"s1.safetensors","s2":"s2.safetensors"}}`)
		_, err := OpenModel(dir)
		if err == nil || !strings.Contains(err.Error(), `tensor "a" is in both s1.safetensors and s2.safetensors`) {
			t.Fatal(err)
		}
	})
	t.Run("path escape", func(t *testing.T) {
		dir := t.TempDir()
		index(t, dir, `{"weight_map":{"a":"../x.safetensors"}}`)
		_, err := OpenModel(dir)
		if err == nil || !strings.Contains(err.Error(), `shard "../x.safetensors" is not a plain file name`) {
			t.Fatal(err)
		}
	})
	t.Run("bad index json", func(t *testing.T) {
		dir := t.TempDir()
		index(t, dir, `{"weight_map":`)
		_, err := OpenModel(dir)
		if err == nil || !strings.Contains(err.Error(), "index JSON") {
			t.Fatal(err)
		}
	})
	t.Run("empty weight map", func(t *testing.T) {
		dir := t.TempDir()
		index(t, dir, `{"metadata":{}}`)
		_, err := OpenModel(dir)
		if err == nil || !strings.Contains(err.Error(), "weight_map is empty") {
			t.Fatal(err)
		}
	})
	t.Run("corrupt single", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, SingleFile), []byte("abc"), 0o644)
		_, err := OpenModel(dir)
		if err == nil || !strings.Contains(err.Error(), "model.safetensors: file is 3 bytes") {
			t.Fatal(err)
		}
	})
}

func TestWriteErrorsLeaveNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	cases := []struct {
		name  string
		infos []TensorInfo
		fill  FillFunc
		want  string
	}{
		{"dup", []TensorInfo{{"a", F32, []int{1}}, {"a", F32, []int{1}}}, nil, `tensor "a" appears twice`},
		{"reserved", []TensorInfo{{MetadataKey, F32, []int{1}}}, nil, "reserved"},
		{"empty name", []TensorInfo{{"", F32, []int{1}}}, nil, "empty name"},
		{"dtype", []TensorInfo{{"a", "F12", []int{1}}}, nil, `unknown dtype "F12"`},
		{"neg", []TensorInfo{{"a", F32, []int{-1}}}, nil, "negative dimension"},
		{"fill fails", []TensorInfo{{"a", F32, []int{1}}, {"b", F32, []int{1}}}, func(i int, dst []byte) error {
			if i == 1 {
				return errors.New("boom")
			}
			return nil
		}, `tensor "b": boom`},
	}
	for _, c := range cases {
		fill := c.fill
		if fill == nil {
			fill = func(int, []byte) error { return nil }
		}
		err := WriteFunc(path, c.infos, nil, fill)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "safetensors "+path) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if _, err := WriteSharded(dir, c.infos, nil, 4, fill); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s sharded: %v, want %q", c.name, err, c.want)
		}
	}
	err := Write(path, []Tensor{{Name: "a", DType: BF16, Shape: []int{3}, Data: make([]byte, 4)}}, nil)
	if err == nil || !strings.Contains(err.Error(), `tensor "a": 4 data bytes, shape [3] of BF16 needs 6`) {
		t.Errorf("short data: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
	if _, err := WriteSharded(dir, nil, nil, 0, nil); err == nil || !strings.Contains(err.Error(), "maxShardBytes must be positive") {
		t.Fatal(err)
	}
}

func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	err := Write(good, []Tensor{
		{Name: "a", DType: BF16, Shape: []int{2}, Data: []byte{1, 2, 3, 4}},
		{Name: "b", DType: F16, Shape: []int{1, 1}, Data: []byte{0, 0x7c}},
		{Name: "c", DType: F32, Shape: []int{1}, Data: []byte{0, 0, 0x80, 0x3f}},
		{Name: "d", DType: "I64", Shape: []int{1}, Data: make([]byte, 8)},
	}, map[string]string{"k": "v"})
	if err != nil {
		f.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	f.Add(b)
	f.Add([]byte{})
	f.Add(rawFile(`{"w":{"dtype":"F32","shape":[64],"data_offsets":[0,10]}}`, make([]byte, 16)))
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.safetensors")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := Open(p)
		if err != nil {
			return
		}
		defer st.Close()
		for _, n := range st.Names() {
			in, err := st.Info(n)
			if err != nil {
				t.Fatal(err)
			}
			v, err := st.Float32(n)
			if err == nil && int64(len(v)) != in.Elems() {
				t.Fatalf("%s: %d values for %d elements", n, len(v), in.Elems())
			}
		}
	})
}

// TestF16AllHalves pins the one f16 conversion (x448/float16) on all 65536
// halves against the definition: subnormals man*2^-24, normals
// (1+man/1024)*2^(exp-15), NaNs quiet with their payload kept (F16C).
func TestF16AllHalves(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		sign, exp, man := h>>15, (h>>10)&0x1f, h&0x3ff
		var want uint32
		switch {
		case exp == 0x1f && man != 0:
			want = uint32(sign)<<31 | 0x7fc00000 | uint32(man)<<13
		case exp == 0x1f:
			want = uint32(sign)<<31 | 0x7f800000
		default:
			v := math.Ldexp(float64(man), -24)
			if exp != 0 {
				v = math.Ldexp(1+float64(man)/1024, exp-15)
			}
			if sign == 1 {
				v = -v
			}
			want = math.Float32bits(float32(v))
		}
		if got := math.Float32bits(F16ToF32(uint16(h))); got != want {
			t.Fatalf("F16ToF32(%#04x) = %#08x, want %#08x", h, got, want)
		}
	}
}

// TestDecodeRange: a range decodes the same values as Float32 (pages
// dropped behind it change nothing), and bad ranges, unknown tensors,
// integer dtypes and a closed file are errors, never a panic.
func TestDecodeRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	vals := []float32{1, -2, 3.5, 4, 5, 6}
	if err := Write(path, []Tensor{
		{Name: "w", DType: F32, Shape: []int{2, 3}, Data: f32bytes(vals)},
		{Name: "i", DType: "I32", Shape: []int{1}, Data: make([]byte, 4)},
	}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 3)
	if err := f.DecodeRange("w", 2, 5, got); err != nil || got[0] != 3.5 || got[1] != 4 || got[2] != 5 {
		t.Fatalf("DecodeRange(w, 2, 5) = %v, %v", got, err)
	}
	for _, c := range []struct {
		name   string
		lo, hi int64
		n      int
	}{{"w", -1, 2, 3}, {"w", 4, 2, 0}, {"w", 0, 7, 7}, {"w", 0, 3, 2}, {"nope", 0, 1, 1}, {"i", 0, 1, 1}} {
		if err := f.DecodeRange(c.name, c.lo, c.hi, make([]float32, c.n)); err == nil {
			t.Errorf("DecodeRange(%s, %d, %d) into %d accepted", c.name, c.lo, c.hi, c.n)
		}
	}
	f.Close()
	if err := f.DecodeRange("w", 0, 1, got[:1]); err == nil {
		t.Error("DecodeRange after Close accepted")
	}
}
