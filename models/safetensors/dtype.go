package safetensors

import (
	"fmt"
	"math"

	"github.com/x448/float16"

	"gelo/ir"
)

// Element types gelo reads and writes as floats.
const (
	F32  = "F32"
	BF16 = "BF16"
	F16  = "F16"
)

// irDTypes maps the file dtypes the IR also has to its dtypes, whose
// record (ir.DTypeInfo) gives their size.
var irDTypes = map[string]ir.DType{F32: ir.F32, BF16: ir.BF16, F16: ir.F16, "I32": ir.I32}

// dtypeSizes lists every dtype of the safetensors format with its element
// size in bytes. A file may hold any of them; only F32, BF16 and F16 can be
// read as float32. The dtypes the IR shares take their size from its
// dtype record.
var dtypeSizes = func() map[string]int {
	sizes := map[string]int{
		"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
		"I16": 2, "U16": 2,
		"U32": 4,
		"I64": 8, "U64": 8, "F64": 8, "C64": 8,
	}
	for name, d := range irDTypes {
		sizes[name] = d.Info().BlockBytes
	}
	return sizes
}()

// IRDType returns the IR dtype of a file dtype, where the two overlap.
func IRDType(dtype string) (ir.DType, bool) {
	d, ok := irDTypes[dtype]
	return d, ok
}

// DTypeSize is the element size in bytes of a safetensors dtype, or an
// error for a dtype the format does not define.
func DTypeSize(dtype string) (int, error) {
	n, ok := dtypeSizes[dtype]
	if !ok {
		return 0, fmt.Errorf("unknown dtype %q", dtype)
	}
	return n, nil
}

// IsFloat reports whether dtype can be read and written as float32 values.
func IsFloat(dtype string) bool { return dtype == F32 || dtype == BF16 || dtype == F16 }

// BF16ToF32 widens a bfloat16 (the top 16 bits of a float32); exact.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds a float32 to bfloat16, to nearest with ties to even.
// NaNs stay NaN (quiet) with their sign; infinities stay infinite.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep sign and top payload bits, force quiet
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// F16ToF32 widens an IEEE 754 binary16 value; exact for every input,
// including subnormals and infinities. NaNs come back quiet with their
// payload, as F16C's VCVTPH2PS does. The module has one f16 conversion,
// github.com/x448/float16; this and F32ToF16 name it for the loaders.
func F16ToF32(h uint16) float32 { return float16.Frombits(h).Float32() }

// F32ToF16 rounds a float32 to IEEE 754 binary16, to nearest with ties to
// even: too-large values become infinities, tiny ones subnormals or zero,
// NaNs stay NaN (quiet).
func F32ToF16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// DecodeFloat32 converts len(dst) elements of dtype (F32, BF16 or F16,
// little-endian) from src into dst. src must hold exactly that many
// elements.
func DecodeFloat32(dtype string, src []byte, dst []float32) error {
	size, ok := dtypeSizes[dtype]
	if !ok {
		return fmt.Errorf("unknown dtype %q", dtype)
	}
	if !IsFloat(dtype) {
		return fmt.Errorf("unsupported dtype %s (want F32, BF16 or F16)", dtype)
	}
	if len(src) != len(dst)*size {
		return fmt.Errorf("%d bytes of %s do not hold %d elements", len(src), dtype, len(dst))
	}
	switch dtype {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(le32(src[4*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
	}
	return nil
}

// EncodeFloat32 converts src into dtype (F32, BF16 or F16, little-endian)
// in dst, rounding to nearest even. dst must hold exactly len(src)
// elements.
func EncodeFloat32(dtype string, src []float32, dst []byte) error {
	size, ok := dtypeSizes[dtype]
	if !ok {
		return fmt.Errorf("unknown dtype %q", dtype)
	}
	if !IsFloat(dtype) {
		return fmt.Errorf("unsupported dtype %s (want F32, BF16 or F16)", dtype)
	}
	if len(dst) != len(src)*size {
		return fmt.Errorf("%d bytes of %s do not hold %d elements", len(dst), dtype, len(src))
	}
	switch dtype {
	case F32:
		for i, v := range src {
			put32(dst[4*i:], math.Float32bits(v))
		}
	case BF16:
		for i, v := range src {
			h := F32ToBF16(v)
			dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
		}
	case F16:
		for i, v := range src {
			h := F32ToF16(v)
			dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
		}
	}
	return nil
}

func le32(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func put32(b []byte, v uint32) {
	_ = b[3]
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
