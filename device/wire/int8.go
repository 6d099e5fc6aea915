package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"gelo/ir"
)

// Int8 is the per-output-channel int8 layout (ir.I8): each row of a
// matrix is its cols int8 values W_q[j, i] in [-127, 127] followed by its
// scale s_w[j], a little-endian float32, so that W[j, i] ~= s_w[j] *
// W_q[j, i] (the W8A8 convention; the lwe level multiplies these integers
// modulo 2^32). Rows are independent, so stacked matrices are their rows'
// bytes concatenated. It is not a ggml type: the value is gelo's own,
// outside ggml's range.
const Int8 Format = 0x4938 // "I8"

// Int8QMax is the largest magnitude of an Int8 value: -128 never occurs,
// so negation stays in range (lwe.QMax).
const Int8QMax = 127

// int8Rows returns the rows a buffer of values and one of Int8 bytes hold:
// each row adds its scale's ir.RowScaleBytes, so nbytes - nvals is
// 4 x rows exactly. The lengths must be exact (a codec's dst may not be
// longer than the rows it holds).
func int8Rows(what string, nvals, nbytes int) (rows, cols int, err error) {
	extra := nbytes - nvals
	if nvals <= 0 || extra <= 0 || extra%ir.RowScaleBytes != 0 {
		return 0, 0, fmt.Errorf("wire: %s int8: %d values and %d bytes are not whole rows of int8 values and a float32 scale", what, nvals, nbytes)
	}
	rows = extra / ir.RowScaleBytes
	if nvals%rows != 0 {
		return 0, 0, fmt.Errorf("wire: %s int8: %d values do not split into %d rows", what, nvals, rows)
	}
	return rows, nvals / rows, nil
}

// QuantizeInt8 quantizes src, whole rows, into dst (exactly rows x
// (cols + 4) bytes; the row count is what the lengths imply), row by row
// as lwe.Quantize does, so the lwe level multiplies the same integers:
//
//	s_w[j] = float32(max_i |W[j,i]| / 127)      (float64 quotient)
//	W_q[j,i] = roundHalfEven(W[j,i] / s_w[j])  clamped to [-127, 127]
//
// A row whose scale is 0 (all zeros, or subnormals that round to 0) is
// all zeros with scale 0. A non-finite value is an error naming its
// position; nothing is written then.
func QuantizeInt8(dst []byte, src []float32) error {
	rows, cols, err := int8Rows("quantize", len(src), len(dst))
	if err != nil {
		return err
	}
	for k, v := range src {
		if !finite(v) {
			return fmt.Errorf("wire: quantize int8: value [%d, %d] is %v", k/cols, k%cols, v)
		}
	}
	rb := cols + ir.RowScaleBytes
	for j := range rows {
		quantizeRowInt8(dst[j*rb:(j+1)*rb], src[j*cols:(j+1)*cols])
	}
	return nil
}

// quantizeRowInt8 writes one finite row (len(dst) = len(row) + 4).
func quantizeRowInt8(dst []byte, row []float32) {
	var amax float64
	for _, x := range row {
		amax = math.Max(amax, math.Abs(float64(x)))
	}
	s := float32(amax / Int8QMax)
	q := dst[:len(row)]
	binary.LittleEndian.PutUint32(dst[len(row):], math.Float32bits(s))
	if s == 0 {
		clear(q)
		return
	}
	for i, x := range row {
		v := math.RoundToEven(float64(x) / float64(s))
		q[i] = byte(int8(max(-Int8QMax, min(Int8QMax, v))))
	}
}

// DequantizeInt8 expands src's Int8 rows into dst (exactly their values:
// the row count is what the lengths imply), dst[j, i] = s_w[j] * W_q[j, i]
// rounded to float32 once.
func DequantizeInt8(dst []float32, src []byte) error {
	rows, cols, err := int8Rows("dequantize", len(dst), len(src))
	if err != nil {
		return err
	}
	rb := cols + ir.RowScaleBytes
	for j := range rows {
		row := src[j*rb : (j+1)*rb]
		s := RowScaleInt8(row)
		for i, b := range row[:cols] {
			dst[j*cols+i] = s * float32(int8(b))
		}
	}
	return nil
}

// RowScaleInt8 returns the scale of one Int8 row (its last four bytes).
func RowScaleInt8(row []byte) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(row[len(row)-ir.RowScaleBytes:]))
}
