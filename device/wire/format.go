package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"gelo/ir"
)

// QK is the number of values in one block of every format here (ggml's
// QK8_0 = QK4_0 = 32), from ir's dtype record.
const QK = ir.QuantBlock

// Block sizes in bytes (sizeof(block_q8_0), sizeof(block_q4_0)), from ir's
// dtype record.
const (
	BlockBytesQ8_0 = ir.BlockBytesQ8_0 // f16 d + int8 qs[32]
	BlockBytesQ4_0 = ir.BlockBytesQ4_0 // f16 d + uint8 qs[16]
)

// Format is a block-quantized weight format. Its value is the ggml_type
// (GGUF tensor type) id of the format.
type Format uint32

const (
	Q4_0 Format = 2 // GGML_TYPE_Q4_0
	Q8_0 Format = 8 // GGML_TYPE_Q8_0
)

// blockDTypes is the one table of the block formats: each wire format's IR
// dtype, whose record (ir.DType.Info) holds its name, block values and
// block bytes. The weight-format records (package formats) key their wire
// layout from these values.
var blockDTypes = map[Format]ir.DType{Q4_0: ir.Q4_0, Q8_0: ir.Q8_0, Q4_K: ir.Q4_K, Int8: ir.I8}

// DType returns f's IR dtype, false for an unknown format.
func (f Format) DType() (ir.DType, bool) {
	dt, ok := blockDTypes[f]
	return dt, ok
}

// FormatOf returns the wire format of a block-quantized IR dtype; an
// error, never another format, for a dtype that has none.
func FormatOf(dt ir.DType) (Format, error) {
	for f, d := range blockDTypes {
		if d == dt {
			return f, nil
		}
	}
	return 0, fmt.Errorf("wire: dtype %v has no block format", dt)
}

func (f Format) String() string {
	if dt, ok := f.DType(); ok {
		return dt.String()
	}
	return fmt.Sprintf("Format(%d)", uint32(f))
}

// Valid reports whether f is a supported format.
func (f Format) Valid() bool {
	_, ok := f.DType()
	return ok
}

// BlockBytes returns the size of one block of f (0 for an unknown format).
func (f Format) BlockBytes() int {
	dt, _ := f.DType()
	return dt.Info().BlockBytes
}

// BlockValues returns the values one block of f holds: 32, or 256 for a
// K-quant super-block (0 for an unknown format).
func (f Format) BlockValues() int {
	dt, _ := f.DType()
	return dt.Info().Block
}

// RowScaleBytes returns the bytes each row of f holds beyond its blocks
// (Int8's float32 scale; 0 for the GGUF block formats).
func (f Format) RowScaleBytes() int {
	dt, _ := f.DType()
	return dt.Info().RowBytes
}

// ErrCols is returned (wrapped) when a length is not a multiple of QK.
var ErrCols = errors.New("wire: length is not a multiple of 32")

func abs32(v float32) float32 {
	return math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
}

// finite reports whether |v| is a finite float32 (false for NaN and ±Inf).
func finite(v float32) bool { return abs32(v) <= math.MaxFloat32 }

// roundf rounds to the nearest integer, halfway cases away from zero (C's
// roundf). |v| must be below 2^31; the float64 sums are exact.
func roundf(v float32) int32 {
	t := float64(v)
	return int32(t + math.Copysign(0.5, t))
}

// quantQ8 is roundf(v) for the finite |v| <= 127.5 of a Q8_0 block. A
// non-finite v (only when d is a float32 subnormal, so that 1/d overflows,
// an undefined conversion in C) gives 0, what x86 builds of ggml store.
func quantQ8(v float32) int32 {
	if !finite(v) {
		return 0
	}
	return max(-128, min(127, roundf(v)))
}

// quantQ4 is MIN(15, (int8_t)v) for the v = x*id + 8.5 of a Q4_0 block
// (0 <= v < 17 when finite). A non-finite v gives 0, as quantQ8.
func quantQ4(v float32) uint8 {
	if !finite(v) || v < 0 {
		return 0
	}
	return uint8(min(15, int32(v)))
}

// scaleQ8_0 returns the reference Q8_0 scale d = amax/127 of a block.
func scaleQ8_0(src []float32) float32 {
	var amax float32
	for _, v := range src {
		if a := abs32(v); a > amax {
			amax = a
		}
	}
	return amax / 127
}

// scaleQ4_0 returns the reference Q4_0 scale d = max/-8 of a block, max
// being the first value of largest magnitude.
func scaleQ4_0(src []float32) float32 {
	var amax, mx float32
	for _, v := range src {
		if a := abs32(v); amax < a {
			amax, mx = a, v
		}
	}
	return mx / -8
}

// checkQuantize validates a quantization call: src is whole blocks of
// finite values whose fp16 scales do not overflow, dst is large enough.
func checkQuantize(f Format, dst []byte, src []float32) error {
	if len(src)%QK != 0 {
		return fmt.Errorf("%w: quantize %s: len(src) = %d", ErrCols, f, len(src))
	}
	nb := len(src) / QK
	if need := nb * f.BlockBytes(); len(dst) < need {
		return fmt.Errorf("wire: quantize %s: len(dst) = %d, need %d", f, len(dst), need)
	}
	for b := 0; b < nb; b++ {
		blk := src[b*QK : (b+1)*QK]
		for j, v := range blk {
			if !finite(v) {
				return fmt.Errorf("wire: quantize %s: non-finite value %v at index %d", f, v, b*QK+j)
			}
		}
		var d float32
		if f == Q8_0 {
			d = scaleQ8_0(blk)
		} else {
			d = scaleQ4_0(blk)
		}
		if h := f32ToF16(d); h&0x7c00 == 0x7c00 {
			return fmt.Errorf("wire: quantize %s: block %d: scale %g overflows float16", f, b, d)
		}
	}
	return nil
}

// QuantizeQ8_0 quantizes src (a whole number of 32-value blocks) into dst
// as consecutive block_q8_0, exactly as ggml's quantize_row_q8_0_ref:
//
//	amax = max |x|, d = amax/127, id = d ? 1/d : 0,
//	y.d = GGML_FP32_TO_FP16(d), y.qs[j] = roundf(x[j]*id)
//
// It returns an error (writing nothing) when len(src) is not a multiple of
// 32, dst is shorter than len(src)/32*34 bytes, a value is not finite, or a
// block's scale overflows float16 (|x| beyond about 8.3e6).
func QuantizeQ8_0(dst []byte, src []float32) error {
	if err := checkQuantize(Q8_0, dst, src); err != nil {
		return err
	}
	for b := 0; b < len(src)/QK; b++ {
		quantizeBlockQ8_0(dst[b*BlockBytesQ8_0:(b+1)*BlockBytesQ8_0], src[b*QK:(b+1)*QK])
	}
	return nil
}

func quantizeBlockQ8_0(dst []byte, src []float32) {
	dst, src = dst[:BlockBytesQ8_0:BlockBytesQ8_0], src[:QK:QK]
	d := scaleQ8_0(src)
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, f32ToF16(d))
	qs := dst[2:]
	for j, v := range src {
		qs[j] = byte(int8(quantQ8(float32(v * id))))
	}
}

// QuantizeQ4_0 quantizes src (a whole number of 32-value blocks) into dst
// as consecutive block_q4_0, exactly as ggml's quantize_row_q4_0_ref:
//
//	max = the value of largest |x| (first on ties), d = max / -8,
//	id = d ? 1/d : 0, y.d = GGML_FP32_TO_FP16(d),
//	q(x) = MIN(15, (int8_t)(x*id + 8.5f)),
//	y.qs[j] = q(x[j]) | q(x[j+16]) << 4   (j < 16)
//
// Errors as for QuantizeQ8_0 (dst needs len(src)/32*18 bytes; the scale
// overflows float16 for |x| beyond about 5.2e5).
func QuantizeQ4_0(dst []byte, src []float32) error {
	if err := checkQuantize(Q4_0, dst, src); err != nil {
		return err
	}
	for b := 0; b < len(src)/QK; b++ {
		quantizeBlockQ4_0(dst[b*BlockBytesQ4_0:(b+1)*BlockBytesQ4_0], src[b*QK:(b+1)*QK])
	}
	return nil
}

func quantizeBlockQ4_0(dst []byte, src []float32) {
	dst, src = dst[:BlockBytesQ4_0:BlockBytesQ4_0], src[:QK:QK]
	d := scaleQ4_0(src)
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, f32ToF16(d))
	qs := dst[2:]
	for j := 0; j < QK/2; j++ {
		x0 := float32(src[j] * id)
		x1 := float32(src[j+QK/2] * id)
		q0 := quantQ4(float32(x0 + 8.5))
		q1 := quantQ4(float32(x1 + 8.5))
		qs[j] = q0 | q1<<4
	}
}

// checkDequantize validates a dequantization call.
func checkDequantize(f Format, dst []float32, src []byte) error {
	bb := f.BlockBytes()
	if len(src)%bb != 0 {
		return fmt.Errorf("wire: dequantize %s: len(src) = %d is not a multiple of %d", f, len(src), bb)
	}
	if need := len(src) / bb * f.BlockValues(); len(dst) < need {
		return fmt.Errorf("wire: dequantize %s: len(dst) = %d, need %d", f, len(dst), need)
	}
	return nil
}

// DequantizeQ8_0 expands consecutive block_q8_0 in src into dst, as ggml's
// dequantize_row_q8_0: y[j] = x.qs[j] * GGML_FP16_TO_FP32(x.d) (one float32
// product). len(src) must be a multiple of 34 and dst at least
// len(src)/34*32 long.
func DequantizeQ8_0(dst []float32, src []byte) error {
	if err := checkDequantize(Q8_0, dst, src); err != nil {
		return err
	}
	for b := 0; b < len(src)/BlockBytesQ8_0; b++ {
		blk := src[b*BlockBytesQ8_0 : (b+1)*BlockBytesQ8_0]
		d := f16ToF32(binary.LittleEndian.Uint16(blk))
		out := dst[b*QK : (b+1)*QK]
		for j, q := range blk[2:] {
			out[j] = float32(int8(q)) * d
		}
	}
	return nil
}

// DequantizeQ4_0 expands consecutive block_q4_0 in src into dst, as ggml's
// dequantize_row_q4_0: for j < 16, y[j] = ((qs[j] & 0x0F) - 8) * d and
// y[j+16] = ((qs[j] >> 4) - 8) * d, d = GGML_FP16_TO_FP32(x.d). len(src)
// must be a multiple of 18 and dst at least len(src)/18*32 long.
func DequantizeQ4_0(dst []float32, src []byte) error {
	if err := checkDequantize(Q4_0, dst, src); err != nil {
		return err
	}
	for b := 0; b < len(src)/BlockBytesQ4_0; b++ {
		blk := src[b*BlockBytesQ4_0 : (b+1)*BlockBytesQ4_0]
		d := f16ToF32(binary.LittleEndian.Uint16(blk))
		out := dst[b*QK : (b+1)*QK]
		for j, q := range blk[2:] {
			out[j] = float32(int(q&0x0f)-8) * d
			out[j+QK/2] = float32(int(q>>4)-8) * d
		}
	}
	return nil
}
