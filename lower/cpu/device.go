package cpu

import (
	"fmt"
	"sync"

	"gelo/device"
	"gelo/device/wire"
	"gelo/lower/cpu/kernels"
	"gelo/lower/cpu/quant"
)

var (
	_ device.Device     = (*LocalDevice)(nil)
	_ device.BF16Dotter = (*LocalDevice)(nil)
	_ device.Lattice    = (*LocalDevice)(nil)
)

// LocalDevice runs the device side in this process on the same kernels:
// the reference device, and what the spy wraps in the leak tests.
type LocalDevice struct {
	ctx  *kernels.Ctx
	qctx *quant.Ctx
	mu   sync.RWMutex
	w    map[string]localWeight
	q    map[string]*wire.Matrix
}

type localWeight struct {
	data       []float32
	bf16       []uint16 // a bf16 weight, in place of data
	i8         []byte   // int8 rows and their scales (wire.Int8), in place of data
	dot        bool     // bf16 multiplied by the bf16 dot product
	rows, cols int
}

// NewLocalDevice returns a device computing with ctx; its quantized
// kernels get a pool of their own, started on first use.
func NewLocalDevice(ctx *kernels.Ctx) *LocalDevice { return newLocalDevice(ctx, nil) }

func newLocalDevice(ctx *kernels.Ctx, qctx *quant.Ctx) *LocalDevice {
	return &LocalDevice{ctx: ctx, qctx: qctx, w: map[string]localWeight{}, q: map[string]*wire.Matrix{}}
}

// UploadQ keeps a block-quantized weight; an int8 one (rows with a
// scale, multiplying f32 rows) is kept for MatMul.
func (d *LocalDevice) UploadQ(name string, w *wire.Matrix) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("device upload %q: %w", name, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if w.Format == wire.Int8 {
		d.w[name] = localWeight{i8: w.Data[:w.Rows*w.RowBytes()], rows: w.Rows, cols: w.Cols}
		return nil
	}
	d.q[name] = w
	return nil
}

// MatMulQ multiplies q8_0 rows by a resident quantized weight.
func (d *LocalDevice) MatMulQ(op, weight string, x *wire.Activations, y []float32) error {
	d.mu.RLock()
	w, ok := d.q[weight]
	d.mu.RUnlock()
	if !ok {
		return fmt.Errorf("device %s: quantized weight %q was never uploaded", op, weight)
	}
	d.mu.Lock()
	if d.qctx == nil {
		d.qctx = quant.NewCtx(d.ctx.Workers())
	}
	q := d.qctx
	d.mu.Unlock()
	return q.MatMulQ(y, x, w, nil)
}

// Upload keeps a reference to the public weight; it is never written.
func (d *LocalDevice) Upload(name string, w []float32, rows, cols int) error {
	if rows <= 0 || cols <= 0 || len(w) != rows*cols {
		return fmt.Errorf("device upload %q: %d values for shape [%d, %d]", name, len(w), rows, cols)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.w[name] = localWeight{data: w, rows: rows, cols: cols}
	return nil
}

// UploadBF16 keeps a reference to the public bf16 weight; it is never
// written.
func (d *LocalDevice) UploadBF16(name string, w []uint16, rows, cols int) error {
	return d.uploadBF16(name, w, rows, cols, false)
}

// UploadBF16Dot keeps a reference to the public bf16 weight, multiplied
// by the bf16 dot product (kernels.MatMulTBF16Dot).
func (d *LocalDevice) UploadBF16Dot(name string, w []uint16, rows, cols int) error {
	return d.uploadBF16(name, w, rows, cols, true)
}

func (d *LocalDevice) uploadBF16(name string, w []uint16, rows, cols int, dot bool) error {
	if rows <= 0 || cols <= 0 || len(w) != rows*cols {
		return fmt.Errorf("device upload %q: %d bf16 values for shape [%d, %d]", name, len(w), rows, cols)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.w[name] = localWeight{bf16: w, dot: dot, rows: rows, cols: cols}
	return nil
}

// MatMul computes y = x W^T with the resident weight.
func (d *LocalDevice) MatMul(op, weight string, x []float32, m int, y []float32) error {
	d.mu.RLock()
	w, ok := d.w[weight]
	d.mu.RUnlock()
	if !ok {
		return fmt.Errorf("device %s: weight %q was never uploaded", op, weight)
	}
	if len(x) != m*w.cols || len(y) != m*w.rows {
		return fmt.Errorf("device %s %q: x holds %d values and y %d, want %d x %d and %d x %d",
			op, weight, len(x), len(y), m, w.cols, m, w.rows)
	}
	if w.dot {
		d.ctx.MatMulTBF16Dot(y, x, w.bf16, m, w.cols, w.rows, nil)
		return nil
	}
	if w.bf16 != nil {
		d.ctx.MatMulTBF16(y, x, w.bf16, m, w.cols, w.rows, nil)
		return nil
	}
	if w.i8 != nil {
		d.ctx.MatMulTInt8(y, x, w.i8, m, w.cols, w.rows, nil)
		return nil
	}
	d.ctx.MatMulT(y, x, w.data, m, w.cols, w.rows, nil)
	return nil
}

// MatMulU32 is the lwe level's product (device.Lattice): y = c W_q^T mod
// 2^32 over the int8 values of a weight uploaded as wire.Int8 (its row
// scales ignored), by kernels.MatMulU32Int8. Only an int8 weight has the
// integers the ring product needs: any other, or an unknown name, is
// refused, as are lengths that do not hold m rows of the weight's shape.
func (d *LocalDevice) MatMulU32(op, weight string, c []uint32, m int, y []uint32) error {
	d.mu.RLock()
	w, ok := d.w[weight]
	_, blocks := d.q[weight]
	d.mu.RUnlock()
	switch {
	case blocks || ok && w.i8 == nil:
		return fmt.Errorf("device %s %q: the u32 product needs a weight uploaded as %s, this one is not", op, weight, wire.Int8)
	case !ok:
		return fmt.Errorf("device %s: weight %q was never uploaded", op, weight)
	}
	if m < 0 || len(c) != m*w.cols || len(y) != m*w.rows {
		return fmt.Errorf("device %s %q: c holds %d words and y %d, want %d x %d and %d x %d",
			op, weight, len(c), len(y), m, w.cols, m, w.rows)
	}
	d.ctx.MatMulU32Int8(y, c, w.i8, m, w.cols, w.rows)
	return nil
}
