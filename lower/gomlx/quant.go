package gomlx

import (
	"fmt"
	"sync"

	"gelo/device/wire"
)

// UploadQ makes a block-quantized public weight resident. Neither engine
// has block-quantized kernels, so the weight is expanded once to float32
// (wire.Matrix.Dequantize: exactly the values the blocks encode) and kept
// like any other weight: four bytes a value on the device instead of the
// format's ~1.06 (Q8_0) or ~0.56 (Q4_0).
//
// An int8 matrix (wire.Int8, one scale a row) stays int8 on the device:
// its values W_q as an Int8 buffer and its scales s_w as a Float32 one
// (uploadInt8). MatMulU32 (the lwe product) reads the values alone;
// MatMul widens them per call to s_w[j] * W_q[j, i], the float32 values
// the format encodes, as bf16 weights are widened.
func (d *Device) UploadQ(name string, w *wire.Matrix) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("gomlx upload %q: %w", name, err)
	}
	if w.Format == wire.Int8 {
		return d.uploadInt8(name, w)
	}
	f := make([]float32, w.Rows*w.Cols)
	if err := w.Dequantize(f); err != nil {
		return fmt.Errorf("gomlx upload %q: %w", name, err)
	}
	return d.Upload(name, f, w.Rows, w.Cols)
}

// MatMulQ multiplies q8_0 activation rows by a resident (quantized or
// float) weight: the rows are expanded to the float32 values they encode
// (q * d per block, as the spy records them) and multiplied like MatMul,
// so y = x W^T over the encoded values, up to float32 summation order.
// What crosses is unchanged: the q8_0 rows in, y out.
func (d *Device) MatMulQ(op, weight string, x *wire.Activations, y []float32) error {
	if x == nil || x.Rows() <= 0 || x.Cols() <= 0 || x.Cols()%wire.QK != 0 {
		return fmt.Errorf("gomlx %s %q: empty or malformed q8_0 activations", op, weight)
	}
	m, k := x.Rows(), x.Cols()
	bufp := scratch.Get().(*[]float32)
	defer scratch.Put(bufp)
	if cap(*bufp) < m*k {
		*bufp = make([]float32, m*k)
	}
	f := (*bufp)[:m*k]
	if err := x.Dequantize(f); err != nil {
		return fmt.Errorf("gomlx %s %q: %w", op, weight, err)
	}
	return d.MatMul(op, weight, f, m, y)
}

// scratch holds the float32 expansion of q8_0 rows between calls.
var scratch = sync.Pool{New: func() any { return new([]float32) }}
