package record

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gelo/device"
	"gelo/models/safetensors"
)

func sample() *Recording {
	return &Recording{
		Header: map[string]string{KeyIdentity: "abc", "gelo.mask": "hd3"},
		Crossings: []device.Crossing{
			{Seq: 0, Pass: 0, Phase: "prefill", Index: 0, Dir: device.ToDevice, Op: "matmul", Weight: "w.q", Rows: 2, Cols: 3, Data: []float32{1, 2, 3, 4, 5, 6}},
			{Seq: 1, Pass: 0, Phase: "prefill", Index: 1, Dir: device.ToTEE, Op: "matmul", Weight: "w.q", Rows: 2, Cols: 1, Data: []float32{-1, 0.5}},
			{Seq: 2, Pass: 1, Phase: "decode", Index: 0, Dir: device.ToDevice, Op: "lm_head", Weight: "w.e", Rows: 1, Cols: 3, Data: []float32{7, 8, 9}, Q8: true},
			// An lwe ciphertext and the device's product of it, as words.
			{Seq: 3, Pass: 2, Phase: "decode", Index: 0, Dir: device.ToDevice, Op: "matmul", Weight: "int8:w.q", Rows: 2, Cols: 3,
				Words: []uint32{0, 1, 1 << 31, 1<<32 - 1, 0xdeadbeef, 12345}},
			{Seq: 4, Pass: 2, Phase: "decode", Index: 1, Dir: device.ToTEE, Op: "matmul", Weight: "int8:w.q", Rows: 2, Cols: 1,
				Words: []uint32{1<<32 - 2, 7}},
		},
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.safetensors")
	want := sample()
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	want.Header[KeyFormat] = FormatVersion
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	// It is a plain safetensors file: the generic reader opens it.
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !strings.Contains(f.Metadata()["c000002"], `"op":"lm_head"`) {
		t.Fatalf("tensor metadata: %q", f.Metadata()["c000002"])
	}
	// The words are a U32 tensor, little-endian, as they crossed; a
	// float crossing's metadata is as before (no "u32" key).
	if in, err := f.Info("c000003"); err != nil || in.DType != "U32" {
		t.Fatalf("c000003: %+v %v", in, err)
	}
	raw, err := f.Bytes("c000003")
	if err != nil || !bytes.Equal(raw[8:16], []byte{0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("c000003 bytes %x (%v)", raw, err)
	}
	if m := f.Metadata(); !strings.Contains(m["c000003"], `"u32":true`) || strings.Contains(m["c000000"], "u32") {
		t.Fatalf("tensor metadata: %q, %q", m["c000000"], m["c000003"])
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := sample()
	bad.Crossings[0].Data = bad.Crossings[0].Data[:5]
	if err := Write(filepath.Join(dir, "a"), bad); err == nil || !strings.Contains(err.Error(), "5 values for 2 x 3") {
		t.Fatalf("short data: %v", err)
	}
	bad = sample()
	bad.Header["c000009"] = "x"
	if err := Write(filepath.Join(dir, "b"), bad); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("reserved key: %v", err)
	}
	// Not a recording: a model file.
	p := filepath.Join(dir, "m.safetensors")
	if err := safetensors.Write(p, []safetensors.Tensor{{Name: "x", DType: safetensors.F32, Shape: []int{1}, Data: make([]byte, 4)}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "not a gelo recording") {
		t.Fatalf("a model file: %v", err)
	}
	// Metadata that lies about the shape.
	p = filepath.Join(dir, "lie.safetensors")
	meta := map[string]string{KeyFormat: FormatVersion, "c000000": `{"pass":0,"phase":"decode","index":0,"op":"matmul","weight":"w","dir":"to-device","rows":2,"cols":2,"q8":false}`}
	if err := safetensors.Write(p, []safetensors.Tensor{{Name: "c000000", DType: safetensors.F32, Shape: []int{1, 4}, Data: make([]byte, 16)}}, meta); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "its metadata says F32[2 2]") {
		t.Fatalf("lying metadata: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(c *device.Crossing)
		want string
	}{
		{"data and words", func(c *device.Crossing) { c.Words = make([]uint32, 6) }, "both Data and Words"},
		{"q8 words", func(c *device.Crossing) { c.Data, c.Words, c.Q8 = nil, make([]uint32, 6), true }, "u32 words marked q8"},
		{"short words", func(c *device.Crossing) { c.Data, c.Words = nil, make([]uint32, 5) }, "5 u32 words for 2 x 3"},
	} {
		bad = sample()
		tc.edit(&bad.Crossings[0])
		if err := Write(filepath.Join(dir, "w"), bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// A tensor whose dtype is not the one its metadata says.
	const floatInfo = `{"pass":0,"phase":"decode","index":0,"op":"matmul","weight":"w","dir":"to-device","rows":2,"cols":2,"q8":false}`
	const wordInfo = `{"pass":0,"phase":"decode","index":0,"op":"matmul","weight":"w","dir":"to-device","rows":2,"cols":2,"q8":false,"u32":true}`
	for _, tc := range []struct{ name, dtype, info, want string }{
		{"u32 tensor, float info", "U32", floatInfo, "tensor c000000 is U32[2 2], its metadata says F32[2 2]"},
		{"f32 tensor, u32 info", "F32", wordInfo, "tensor c000000 is F32[2 2], its metadata says U32[2 2]"},
		{"i32 tensor, u32 info", "I32", wordInfo, "tensor c000000 is I32[2 2], its metadata says U32[2 2]"},
	} {
		p := filepath.Join(dir, "dtype.safetensors")
		meta := map[string]string{KeyFormat: FormatVersion, "c000000": tc.info}
		if err := safetensors.Write(p, []safetensors.Tensor{{Name: "c000000", DType: tc.dtype, Shape: []int{2, 2}, Data: make([]byte, 16)}}, meta); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing file was read")
	}
	os.Remove(p)
}

func TestDecodeInfo(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "no metadata"},
		{`{"pass":0}`, "dir"},
		{`{"dir":"sideways","rows":1,"cols":1}`, `dir "sideways"`},
		{`{"dir":"to-tee","rows":0,"cols":1}`, "out of range"},
		{`{"dir":"to-tee","rows":100000000,"cols":100000000}`, "out of range"},
		{`{"dir":"to-tee","rows":1,"cols":1,"extra":1}`, "unknown field"},
		{`{"dir":"to-tee","rows":1,"cols":1} {}`, "trailing"},
		{`{"dir":"to-tee","rows":1,"cols":1,"pass":-1}`, "negative"},
		{`{"dir":"to-tee","rows":1,"cols":1,"q8":true,"u32":true}`, "u32 and q8 both set"},
		{`{"dir":"to-tee","rows":1,"cols":1,"u32":1}`, "cannot unmarshal"},
	} {
		if _, err := DecodeInfo("c000000", tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeInfo(%s): %v, want %q", tc.in, err, tc.want)
		}
	}
}

// FuzzDecodeInfo: the tensor metadata parser never panics and what it
// accepts has a shape in range.
func FuzzDecodeInfo(f *testing.F) {
	f.Add(`{"pass":3,"phase":"decode","index":0,"op":"matmul","weight":"w","dir":"to-device","rows":16,"cols":1024,"q8":false}`)
	f.Add(`{"dir":"to-tee","rows":1,"cols":1}`)
	f.Add(`{"pass":3,"phase":"decode","index":1,"op":"matmul","weight":"w","dir":"to-tee","rows":16,"cols":1024,"q8":false,"u32":true}`)
	f.Add(`{"dir":"to-device","rows":1,"cols":1,"q8":true,"u32":true}`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeInfo("c000000", s)
		if err != nil {
			return
		}
		if c.Rows <= 0 || c.Cols <= 0 || c.Rows > maxDim || c.Cols > maxDim {
			t.Fatalf("accepted shape %d x %d", c.Rows, c.Cols)
		}
		// Metadata alone allocates no payload; u32 is never q8.
		if c.Data != nil || len(c.Words) != 0 || (c.Words != nil && c.Q8) {
			t.Fatalf("accepted %+v", c)
		}
	})
}
