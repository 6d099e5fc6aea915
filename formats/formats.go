// Package formats is the one record of each weight format gelo stores a
// matrix in: its name (the --weights and export --type value), the IR dtype
// of the stored matrix, the block it is made of, whether the dot product
// rounds its input rows first, its GGUF tensor and file types, the devices
// that take it, and how values are encoded into it and decoded out of it.
// Every package reads these records instead of keeping its own switch, so
// adding a format is one record here (Register) plus its kernels; an
// unknown name is an error, never a fallback to another format.
package formats

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/x448/float16"

	"gelo/device/wire"
	"gelo/ir"
	"gelo/models/gguf"
	"gelo/models/safetensors"
)

// Names of the built-in formats.
const (
	F32 = "f32"
	// F16 is an export format only: gelo plans do not store f16 matrices.
	F16  = "f16"
	BF16 = "bf16"
	// BF16Dot stores bf16 matrices and multiplies them by the bf16 dot
	// product (inputs rounded to bf16): the speed mode of a bf16
	// checkpoint, never its default (bf16 is exact).
	BF16Dot = "bf16dot"
	Q8_0    = "q8_0"
	Q4_0    = "q4_0"
	Q4_K    = "q4_k"
	// Int8 stores each matrix as int8 values with one float32 scale per
	// output row (ir.I8, wire.Int8), the integer matrix of the lwe level.
	Int8 = "int8"
)

// Device kinds a format can be multiplied on (the --device families).
const (
	DeviceLocal  = "local"
	DeviceGomlx  = "gomlx"
	DeviceVulkan = "vulkan"
)

// Format is one weight format's record.
type Format struct {
	// Name is the --weights (and export --type) value.
	Name string
	// Doc says in a line what the format is, for help texts.
	Doc string
	// DType is the IR dtype of a matrix stored in this format; its block
	// and block bytes are ir's dtype record (DType.Info).
	DType ir.DType
	// Input is the dtype the dot product rounds its activation rows to
	// before multiplying (q8_0 blocks for the GGUF block formats, bf16 for
	// bf16dot); ir.F32 when the rows are multiplied as they are (f32, and
	// bf16 whose weights widen exactly).
	Input ir.DType
	// BF16Dot marks every matmul on the format's matrices ir.AttrBF16Dot.
	BF16Dot bool
	// Fallback is the format of a matrix whose rows are not whole blocks
	// of DType (q4_k's 256-value super-blocks fall back to q8_0, as
	// llama.cpp's quantizer does); "" when every row width fits.
	Fallback string
	// Plan: a compiled plan can store its matrices in this format
	// (--weights takes it). Export: gelo export --gguf writes it.
	Plan, Export bool
	// GGUF is the tensor type of a matrix in a GGUF file; GGUFFileType
	// the general.file_type (LLAMA_FTYPE) of a file whose matrices all
	// are of this format.
	GGUF         gguf.TensorType
	GGUFFileType uint32
	// Wire is the block layout that crosses to a device (0 for the
	// element formats, which cross as float32 or bf16 values).
	Wire wire.Format
	// Devices are the device kinds that multiply the format's matrices.
	Devices []string
	// Encode writes src's values (whole rows) into dst in the format's
	// bytes; Decode reads them back. For the block formats these are the
	// quantizer and dequantizer (ggml's reference rounding).
	Encode func(dst []byte, src []float32) error
	Decode func(dst []float32, src []byte) error
}

// RoundsInput reports whether the dot product on this format multiplies
// a rounded copy of its input rows (so a crossing's payload is rounded
// before it leaves and the TEE-local product rounds its own input).
func (f *Format) RoundsInput() bool { return f.Input != ir.F32 }

// Quantized reports a block format with a scale per block.
func (f *Format) Quantized() bool { return f.DType.IsQuantized() }

// Block returns the values one block holds (1 for the element formats).
func (f *Format) Block() int { return f.DType.Info().Block }

// FitsRow reports whether a row of cols values is whole blocks of f.
func (f *Format) FitsRow(cols int) bool { return cols > 0 && cols%f.Block() == 0 }

// ForRow returns the format a matrix cols wide is stored in: f, or its
// fallback when the rows are not whole blocks of f. It fails when neither
// fits.
func (f *Format) ForRow(cols int) (*Format, error) {
	if f.FitsRow(cols) {
		return f, nil
	}
	if f.Fallback != "" {
		fb, err := Lookup(f.Fallback)
		if err != nil {
			return nil, fmt.Errorf("format %s: fallback: %w", f.Name, err)
		}
		if fb.FitsRow(cols) {
			return fb, nil
		}
	}
	return nil, fmt.Errorf("format %s: rows of %d values are not whole blocks of %d", f.Name, cols, f.Block())
}

// MatrixBytes returns the bytes a rows x cols matrix takes in this format
// (in its fallback where its rows are not whole blocks), or an error when
// neither fits.
func (f *Format) MatrixBytes(rows, cols int) (int64, error) {
	g, err := f.ForRow(cols)
	if err != nil {
		return 0, err
	}
	rb := int64(cols/g.Block()*g.DType.Info().BlockBytes + g.DType.Info().RowBytes)
	if rows < 0 || (rows > 0 && rb > math.MaxInt64/int64(rows)) {
		return 0, fmt.Errorf("format %s: a %d x %d matrix's size overflows", f.Name, rows, cols)
	}
	return int64(rows) * rb, nil
}

// TakenBy reports whether device (a --device value: local, gomlx:go,
// vulkan:1, ...) multiplies this format's matrices.
func (f *Format) TakenBy(device string) bool {
	kind, _, _ := strings.Cut(device, ":")
	if kind == "" {
		kind = DeviceLocal
	}
	return slices.Contains(f.Devices, kind)
}

// CheckDevice returns an error naming the devices that do take f when
// device does not.
func (f *Format) CheckDevice(device string) error {
	if f.TakenBy(device) {
		return nil
	}
	return fmt.Errorf("--weights %s: the %s device does not multiply it (it runs on %s)", f.Name, device, strings.Join(f.Devices, ", "))
}

var (
	mu       sync.RWMutex
	registry []*Format
)

// Register adds a format. It fails on a duplicate name, a dtype with no
// storage record, an input dtype other than f32, bf16 or q8_0, a missing
// encoder or decoder, a block format or one with per-row bytes (int8's
// scale) with no wire layout (or a wire layout
// whose dtype differs), a fallback that is not registered, or a device
// kind it does not know.
func Register(f Format) error {
	if err := check(&f); err != nil {
		return fmt.Errorf("register format %q: %w", f.Name, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, g := range registry {
		if g.Name == f.Name {
			return fmt.Errorf("register format %q: already registered", f.Name)
		}
	}
	if f.Fallback != "" && !slices.ContainsFunc(registry, func(g *Format) bool { return g.Name == f.Fallback }) {
		return fmt.Errorf("register format %q: fallback %q is not registered", f.Name, f.Fallback)
	}
	f.Devices = slices.Clone(f.Devices)
	registry = append(registry, &f)
	return nil
}

func check(f *Format) error {
	switch {
	case f.Name == "" || strings.ContainsAny(f.Name, " \t\n,"):
		return fmt.Errorf("bad name")
	case f.DType.Info().Block == 0:
		return fmt.Errorf("dtype %v has no storage record", f.DType)
	case f.Input != ir.F32 && f.Input != ir.BF16 && f.Input != ir.Q8_0:
		return fmt.Errorf("input dtype %v: want f32, bf16 or q8_0", f.Input)
	case f.Encode == nil || f.Decode == nil:
		return fmt.Errorf("no encoder or decoder")
	case f.BF16Dot && (f.DType != ir.BF16 || f.Input != ir.BF16):
		return fmt.Errorf("the bf16 dot product needs bf16 weights and bf16 input")
	case !f.Plan && !f.Export:
		return fmt.Errorf("neither a plan nor an export format")
	case f.Plan && len(f.Devices) == 0:
		return fmt.Errorf("a plan format no device takes")
	}
	if f.Quantized() || f.DType.Info().RowBytes > 0 {
		if !f.Wire.Valid() {
			return fmt.Errorf("block format with no wire layout")
		}
		if wd, _ := f.Wire.DType(); wd != f.DType {
			return fmt.Errorf("wire layout %v is %v, not %v", f.Wire, wd, f.DType)
		}
	} else if f.Wire != 0 {
		return fmt.Errorf("element format with a wire block layout %v", f.Wire)
	}
	for _, d := range f.Devices {
		if d != DeviceLocal && d != DeviceGomlx && d != DeviceVulkan {
			return fmt.Errorf("device kind %q: want %s, %s or %s", d, DeviceLocal, DeviceGomlx, DeviceVulkan)
		}
	}
	return nil
}

// Lookup returns the format called name (a plan's "" means f32). An
// unknown name is an error that lists the plan formats.
func Lookup(name string) (*Format, error) {
	if name == "" {
		name = F32
	}
	mu.RLock()
	defer mu.RUnlock()
	for _, f := range registry {
		if f.Name == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("weight format %q: want %s", name, ir.OrList(planNames()))
}

// LookupPlan returns the plan format called name ("" is f32), failing for
// an unknown name or one a plan cannot store (export-only f16); flag names
// the flag in the error.
func LookupPlan(flag, name string) (*Format, error) {
	f, err := Lookup(name)
	if err == nil && !f.Plan {
		err = fmt.Errorf("format %q is not a plan format", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %q: want %s", flag, name, ir.OrList(PlanNames()))
	}
	return f, nil
}

// LookupExport returns the export format called name.
func LookupExport(name string) (*Format, error) {
	f, err := Lookup(name)
	if err == nil && !f.Export {
		err = fmt.Errorf("format %q is not an export format", name)
	}
	if err != nil {
		return nil, fmt.Errorf("--type %q: want %s", name, strings.Join(ExportNames(), ", "))
	}
	return f, nil
}

// ByGGUF returns the format whose matrices a GGUF file stores as t (the
// plain format where two share a type, bf16 rather than bf16dot).
func ByGGUF(t gguf.TensorType) (*Format, error) {
	mu.RLock()
	defer mu.RUnlock()
	for _, f := range registry {
		if f.Export && f.GGUF == t {
			return f, nil
		}
	}
	return nil, fmt.Errorf("GGUF tensor type %v has no gelo format", t)
}

// ByDType returns the plain format whose matrices have dtype dt (bf16
// rather than bf16dot).
func ByDType(dt ir.DType) (*Format, error) {
	mu.RLock()
	defer mu.RUnlock()
	for _, f := range registry {
		if f.DType == dt && !f.BF16Dot {
			return f, nil
		}
	}
	return nil, fmt.Errorf("dtype %v is no weight format's", dt)
}

// All returns every registered format in registration order.
func All() []*Format {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(registry)
}

// PlanNames lists the formats --weights takes, in registration order.
func PlanNames() []string {
	mu.RLock()
	defer mu.RUnlock()
	return planNames()
}

func planNames() []string {
	var names []string
	for _, f := range registry {
		if f.Plan {
			names = append(names, f.Name)
		}
	}
	return names
}

// DeviceNames lists the plan formats the device kind takes (the formats
// whose records name it), in registration order: a backend's
// capabilities record takes its device's formats from here.
func DeviceNames(kind string) []string {
	mu.RLock()
	defer mu.RUnlock()
	var names []string
	for _, f := range registry {
		if f.Plan && slices.Contains(f.Devices, kind) {
			names = append(names, f.Name)
		}
	}
	return names
}

// ExportNames lists the formats export --type takes.
func ExportNames() []string {
	mu.RLock()
	defer mu.RUnlock()
	var names []string
	for _, f := range registry {
		if f.Export {
			names = append(names, f.Name)
		}
	}
	return names
}

func mustRegister(f Format) {
	if err := Register(f); err != nil {
		panic(err) // a built-in record is wrong: a programming error
	}
}

func init() {
	all := []string{DeviceLocal, DeviceGomlx, DeviceVulkan}
	mustRegister(Format{Name: F32, Doc: "float32 weights, as the checkpoint holds them",
		DType: ir.F32, Input: ir.F32, Plan: true, Export: true, GGUF: gguf.F32, GGUFFileType: 0,
		Devices: all, Encode: encodeF32, Decode: decodeF32})
	mustRegister(Format{Name: F16, Doc: "float16 weights, export only",
		DType: ir.F16, Input: ir.F32, Export: true, GGUF: gguf.F16, GGUFFileType: 1,
		Encode: encodeF16, Decode: decodeF16})
	mustRegister(Format{Name: BF16, Doc: "bf16 weights multiplying f32 rows, exact for a bf16 checkpoint",
		DType: ir.BF16, Input: ir.F32, Plan: true, Export: true, GGUF: gguf.BF16, GGUFFileType: 32,
		Devices: all, Encode: encodeBF16, Decode: decodeBF16})
	mustRegister(Format{Name: BF16Dot, Doc: "bf16 weights by the bf16 dot product, input rows rounded to bf16: a speed mode",
		DType: ir.BF16, Input: ir.BF16, BF16Dot: true, Plan: true, GGUF: gguf.BF16, GGUFFileType: 32,
		Devices: []string{DeviceLocal}, Encode: encodeBF16, Decode: decodeBF16})
	// The GGUF block formats multiply q8_0 rows of the input. The Vulkan
	// device has no q4_k shader.
	mustRegister(Format{Name: Q8_0, Doc: "GGUF q8_0 blocks of 32 int8 and an f16 scale",
		DType: ir.Q8_0, Input: ir.Q8_0, Plan: true, Export: true, GGUF: gguf.Q8_0, GGUFFileType: 7,
		Wire: wire.Q8_0, Devices: all, Encode: wire.QuantizeQ8_0, Decode: wire.DequantizeQ8_0})
	mustRegister(Format{Name: Q4_0, Doc: "GGUF q4_0 blocks of 32 nibbles and an f16 scale",
		DType: ir.Q4_0, Input: ir.Q8_0, Plan: true, Export: true, GGUF: gguf.Q4_0, GGUFFileType: 2,
		Wire: wire.Q4_0, Devices: all, Encode: wire.QuantizeQ4_0, Decode: wire.DequantizeQ4_0})
	// Q4_K's file type is LLAMA_FTYPE_MOSTLY_Q4_K_S: every matrix Q4_K.
	mustRegister(Format{Name: Q4_K, Doc: "GGUF q4_K super-blocks of 256 values, rows that are not whole super-blocks in q8_0",
		DType: ir.Q4_K, Input: ir.Q8_0, Fallback: Q8_0, Plan: true, Export: true, GGUF: gguf.Q4_K, GGUFFileType: 14,
		Wire: wire.Q4_K, Devices: []string{DeviceLocal, DeviceGomlx}, Encode: wire.QuantizeQ4_K, Decode: wire.DequantizeQ4_K})
	// int8 rows multiply f32 activation rows as they are (Input f32): the
	// activations are not rounded here; the lwe level adds its own
	// activation encoding on top. The quantizer is lwe.Quantize's
	// (per row s_w = max|W_j|/127, ties to even). Not a GGUF type, so not
	// an export format.
	mustRegister(Format{Name: Int8, Doc: "int8 weights with a float32 scale per output row (W8A8 per-channel), f32 input rows: the lwe level's integers",
		DType: ir.I8, Input: ir.F32, Plan: true,
		Wire: wire.Int8, Devices: all, Encode: wire.QuantizeInt8, Decode: wire.DequantizeInt8})
}

// checkLen validates an element encoding's lengths.
func checkLen(name string, width, dst, src int) error {
	if dst < width*src {
		return fmt.Errorf("encode %s: %d bytes for %d values", name, dst, src)
	}
	return nil
}

func encodeF32(dst []byte, src []float32) error {
	if err := checkLen(F32, 4, len(dst), len(src)); err != nil {
		return err
	}
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
	return nil
}

func decodeF32(dst []float32, src []byte) error {
	if len(src)%4 != 0 || len(dst) < len(src)/4 {
		return fmt.Errorf("decode f32: %d bytes into %d values", len(src), len(dst))
	}
	for i := range len(src) / 4 {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
	return nil
}

func encodeF16(dst []byte, src []float32) error {
	if err := checkLen(F16, 2, len(dst), len(src)); err != nil {
		return err
	}
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], float16.Fromfloat32(v).Bits())
	}
	return nil
}

func decodeF16(dst []float32, src []byte) error {
	if len(src)%2 != 0 || len(dst) < len(src)/2 {
		return fmt.Errorf("decode f16: %d bytes into %d values", len(src), len(dst))
	}
	for i := range len(src) / 2 {
		dst[i] = float16.Frombits(binary.LittleEndian.Uint16(src[2*i:])).Float32()
	}
	return nil
}

func encodeBF16(dst []byte, src []float32) error {
	if err := checkLen(BF16, 2, len(dst), len(src)); err != nil {
		return err
	}
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], safetensors.F32ToBF16(v))
	}
	return nil
}

func decodeBF16(dst []float32, src []byte) error {
	if len(src)%2 != 0 || len(dst) < len(src)/2 {
		return fmt.Errorf("decode bf16: %d bytes into %d values", len(src), len(dst))
	}
	for i := range len(src) / 2 {
		dst[i] = safetensors.BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
	return nil
}
