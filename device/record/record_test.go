package record

import (
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
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeInfo("c000000", s)
		if err == nil && (c.Rows <= 0 || c.Cols <= 0 || c.Rows > maxDim || c.Cols > maxDim) {
			t.Fatalf("accepted shape %d x %d", c.Rows, c.Cols)
		}
	})
}
