package formats_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gelo/device/wire"
	"gelo/formats"
	"gelo/ir"
	"gelo/models/gguf"
)

// The built-in records, as the rest of gelo relied on them before they
// were one table: a change to a record shows here as a diff.
func TestBuiltinRecords(t *testing.T) {
	type row struct {
		name         string
		dtype, input ir.DType
		dot          bool
		fallback     string
		plan, export bool
		gguf         gguf.TensorType
		fileType     uint32
		wire         wire.Format
		devices      string
	}
	want := []row{
		{"f32", ir.F32, ir.F32, false, "", true, true, gguf.F32, 0, 0, "local gomlx vulkan"},
		{"f16", ir.F16, ir.F32, false, "", false, true, gguf.F16, 1, 0, ""},
		{"bf16", ir.BF16, ir.F32, false, "", true, true, gguf.BF16, 32, 0, "local gomlx vulkan"},
		{"bf16dot", ir.BF16, ir.BF16, true, "", true, false, gguf.BF16, 32, 0, "local"},
		{"q8_0", ir.Q8_0, ir.Q8_0, false, "", true, true, gguf.Q8_0, 7, wire.Q8_0, "local gomlx vulkan"},
		{"q4_0", ir.Q4_0, ir.Q8_0, false, "", true, true, gguf.Q4_0, 2, wire.Q4_0, "local gomlx vulkan"},
		{"q4_k", ir.Q4_K, ir.Q8_0, false, "q8_0", true, true, gguf.Q4_K, 14, wire.Q4_K, "local gomlx"},
		{"int8", ir.I8, ir.F32, false, "", true, false, 0, 0, wire.Int8, "local gomlx vulkan"},
	}
	var got []row
	for _, f := range formats.All() {
		got = append(got, row{f.Name, f.DType, f.Input, f.BF16Dot, f.Fallback, f.Plan, f.Export, f.GGUF, f.GGUFFileType, f.Wire, strings.Join(f.Devices, " ")})
	}
	if !slices.Equal(got, want) {
		t.Errorf("records:\n got %v\nwant %v", got, want)
	}
	if got, want := formats.PlanNames(), []string{"f32", "bf16", "bf16dot", "q8_0", "q4_0", "q4_k", "int8"}; !slices.Equal(got, want) {
		t.Errorf("PlanNames %v, want %v", got, want)
	}
	if got, want := formats.ExportNames(), []string{"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k"}; !slices.Equal(got, want) {
		t.Errorf("ExportNames %v, want %v", got, want)
	}
}

// Every format's Encode and Decode round-trip values within the format's
// rounding, and the block formats' bytes are the wire quantizer's.
func TestEncodeDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 2*256)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	// Worst error a value may take, relative to the largest |x| of the
	// row (block scales are per 32 or 256 values, within the row; int8's
	// is the row's own, so half a step of amax/127 plus the scale's
	// float32 rounding).
	tol := map[string]float64{"f32": 0, "f16": 1e-3, "bf16": 4e-3, "bf16dot": 4e-3, "q8_0": 1.0 / 127, "q4_0": 1.0 / 8, "q4_k": 0.2,
		"int8": 0.5/127 + 1e-6}
	var amax float64
	for _, v := range src {
		amax = max(amax, math.Abs(float64(v)))
	}
	for _, f := range formats.All() {
		b := make([]byte, f.DType.MatrixBytes(2, 256))
		if err := f.Encode(b, src); err != nil {
			t.Fatalf("%s: encode: %v", f.Name, err)
		}
		back := make([]float32, len(src))
		if err := f.Decode(back, b); err != nil {
			t.Fatalf("%s: decode: %v", f.Name, err)
		}
		for i := range src {
			if d := math.Abs(float64(back[i] - src[i])); d > tol[f.Name]*amax {
				t.Fatalf("%s: value %d: %v -> %v (error %g > %g)", f.Name, i, src[i], back[i], d, tol[f.Name]*amax)
			}
		}
		if f.Wire != 0 {
			m, err := wire.Quantize(f.Wire, src, 2, 256)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.Data, b) {
				t.Errorf("%s: Encode differs from wire.Quantize", f.Name)
			}
		}
		if err := f.Encode(b[:len(b)-1], src); err == nil {
			t.Errorf("%s: encode into a short buffer accepted", f.Name)
		}
	}
}

// ForRow and MatrixBytes apply a format's fallback where rows are not
// whole blocks, and fail where nothing fits.
func TestForRow(t *testing.T) {
	q4k, err := formats.Lookup("q4_k")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cols  int
		want  string
		bytes int64
	}{{256, "q4_k", 3 * 144}, {512, "q4_k", 3 * 2 * 144}, {64, "q8_0", 3 * 2 * 34}, {192, "q8_0", 3 * 6 * 34}} {
		g, err := q4k.ForRow(tc.cols)
		if err != nil || g.Name != tc.want {
			t.Errorf("q4_k.ForRow(%d) = %v, %v; want %s", tc.cols, g, err, tc.want)
		}
		if b, err := q4k.MatrixBytes(3, tc.cols); err != nil || b != tc.bytes {
			t.Errorf("q4_k.MatrixBytes(3, %d) = %d, %v; want %d", tc.cols, b, err, tc.bytes)
		}
	}
	for _, cols := range []int{0, -32, 48} {
		if _, err := q4k.ForRow(cols); err == nil {
			t.Errorf("q4_k.ForRow(%d) accepted", cols)
		}
	}
	if _, err := q4k.MatrixBytes(math.MaxInt, 256); err == nil {
		t.Error("an overflowing size accepted")
	}
	// int8's rows are their values and a float32 scale, whatever the
	// width (no blocks: no fallback).
	i8, _ := formats.Lookup("int8")
	for _, cols := range []int{1, 48, 1024} {
		if b, err := i8.MatrixBytes(3, cols); err != nil || b != int64(3*(cols+4)) {
			t.Errorf("int8.MatrixBytes(3, %d) = %d, %v; want %d", cols, b, err, 3*(cols+4))
		}
	}
	f32, _ := formats.Lookup("")
	if b, err := f32.MatrixBytes(3, 5); err != nil || b != 60 || f32.Name != "f32" {
		t.Errorf("f32 (as \"\"): %d bytes, %v", b, err)
	}
}

// Unknown names are errors that list the choices; export-only and
// plan-only formats are refused where they do not apply; a device kind is
// checked against the record.
func TestLookupErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{second(formats.Lookup("q5_k")), `"q5_k"`},
		{second(formats.LookupPlan("--weights", "f16")), `--weights "f16": want f32, bf16, bf16dot, q8_0, q4_0, q4_k or int8`},
		{second(formats.LookupExport("bf16dot")), `--type "bf16dot": want f32, f16, bf16, q8_0, q4_0, q4_k`},
		{second(formats.ByGGUF(gguf.Q6_K)), "Q6_K"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want it to contain %q", tc.err, tc.want)
		}
	}
	q4k, _ := formats.Lookup("q4_k")
	for dev, ok := range map[string]bool{"local": true, "": true, "gomlx:go": true, "gomlx:xla:cuda": true, "vulkan": false, "vulkan:1": false} {
		if q4k.TakenBy(dev) != ok || (q4k.CheckDevice(dev) == nil) != ok {
			t.Errorf("q4_k on %q: taken %v, want %v", dev, q4k.TakenBy(dev), ok)
		}
	}
	if bf, _ := formats.ByGGUF(gguf.BF16); bf.Name != "bf16" {
		t.Errorf("ByGGUF(BF16) = %s, want the plain bf16", bf.Name)
	}
	if bf, _ := formats.ByDType(ir.BF16); bf.Name != "bf16" {
		t.Errorf("ByDType(BF16) = %s, want the plain bf16", bf.Name)
	}
}

func second[T any](_ T, err error) error { return err }

// Register refuses a record that would break a reader.
func TestRegisterRefuses(t *testing.T) {
	ok := formats.Format{Name: "test-ok", DType: ir.Q4_0, Input: ir.Q8_0, Plan: true, Wire: wire.Q4_0,
		Devices: []string{"local"}, Encode: wire.QuantizeQ4_0, Decode: wire.DequantizeQ4_0}
	for name, edit := range map[string]func(*formats.Format){
		"duplicate":           func(f *formats.Format) { f.Name = "q8_0" },
		"empty name":          func(f *formats.Format) { f.Name = "" },
		"no storage":          func(f *formats.Format) { f.DType = ir.InvalidDType },
		"input i32":           func(f *formats.Format) { f.Input = ir.I32 },
		"no encoder":          func(f *formats.Format) { f.Encode = nil },
		"dot on q4_0":         func(f *formats.Format) { f.BF16Dot = true },
		"nowhere":             func(f *formats.Format) { f.Plan = false },
		"no device":           func(f *formats.Format) { f.Devices = nil },
		"unknown device":      func(f *formats.Format) { f.Devices = []string{"tpu"} },
		"blocks without wire": func(f *formats.Format) { f.Wire = 0 },
		"wire of another":     func(f *formats.Format) { f.Wire = wire.Q8_0 },
		"element with wire":   func(f *formats.Format) { f.DType, f.Input = ir.F32, ir.F32 },
		"row scale, no wire":  func(f *formats.Format) { f.DType, f.Input, f.Wire = ir.I8, ir.F32, 0 },
		"unknown fallback":    func(f *formats.Format) { f.Fallback = "q2_k" },
	} {
		f := ok
		edit(&f)
		if err := formats.Register(f); err == nil {
			formats.Unregister(f.Name)
			t.Errorf("%s: registered", name)
		}
	}
	if err := formats.Register(ok); err != nil {
		t.Fatalf("a good record: %v", err)
	}
	formats.Unregister(ok.Name)
	if _, err := formats.Lookup(ok.Name); err == nil {
		t.Error("Unregister left the record")
	}
}

// DeviceNames is each device kind's formats, from the records' Devices.
func TestDeviceNames(t *testing.T) {
	for kind, want := range map[string][]string{
		"local":  {"f32", "bf16", "bf16dot", "q8_0", "q4_0", "q4_k", "int8"},
		"gomlx":  {"f32", "bf16", "q8_0", "q4_0", "q4_k", "int8"},
		"vulkan": {"f32", "bf16", "q8_0", "q4_0", "int8"},
		"tpu":    nil,
	} {
		if got := formats.DeviceNames(kind); !slices.Equal(got, want) {
			t.Errorf("DeviceNames(%s) = %v, want %v", kind, got, want)
		}
	}
}
