// Package gomlx is a device.Device that runs
// the device side of gelo on a GoMLX backend: the pure-Go "simplego"
// engine everywhere, or XLA through a PJRT plugin where the binary is
// built with the xla tag and a plugin is installed.
//
// # What crosses and what stays
//
// Upload copies a public weight once into a backend buffer (simplego: a
// buffer owned by the engine; XLA: a PJRT device buffer) in the HF Linear
// layout [rows, cols] = [out, in], the layout both engines contract
// without a per-call transpose. The caller's slice is not retained.
//
// Each MatMul then moves only the operand and the product:
//
//   - in: x[m, cols] is copied into one fresh backend buffer (a host to
//     device transfer under XLA, a pooled-buffer copy under simplego);
//   - run: one executable, compiled once per (m, rows, cols) and cached, so
//     weights of the same shape share it and nothing is recompiled per call
//     (each distinct row count m compiles once: under HD3 m is a power of
//     two, so a session sees a handful);
//   - out: the product y[m, rows] is copied straight into the caller's y
//     (a device to host transfer under XLA), with no intermediate slice;
//     the input and output buffers are released back to the engine.
//
// UploadBF16 keeps a bf16 weight as a BFloat16 buffer (half the bytes);
// its executable widens it exactly before the same product.
//
// UploadQ and MatMulQ (the quantized plan's pair) expand the blocks to
// float32 on the way in (see quant.go): the weight once, at upload; the
// q8_0 rows per call, on the caller's side, before x is copied in. An
// int8 weight (wire.Int8) stays int8, values and row scales: MatMul
// widens it per call, and MatMulU32 (device.Lattice, the lwe level's
// product modulo 2^32, lattice.go) multiplies uint32 rows by its values
// as four int8 limb products, all inside one executable.
//
// The weight never moves again after Upload, and nothing else is kept
// between calls: no operand, no product. On simplego the resident copy is
// a second copy of the weights in host memory (the local device shares
// the caller's slices instead).
//
// On simplego each weight is cut, at upload, into row blocks that the
// executable treats as a batch axis (see splitFor): simplego only spreads
// a DotGeneral over cores along batch axes. The blocks are views of the
// one resident buffer; the engine broadcasts x over them and transposes
// the product back inside the executable, so what crosses is unchanged.
//
// # Backends
//
// New takes "go" (simplego, optionally "go:<simplego options>", for
// example "go:parallelism=4"), "xla:cpu", "xla:cuda" or "xla:<plugin>",
// or "" to read $GOMLX_BACKEND (default "go"). The constructors are called
// directly rather than through gomlx's registry, whose NewWithConfig
// panics on an unknown name.
//
// XLA needs cgo and a PJRT plugin binary, so its backend is only linked
// into binaries built with -tags xla (and cgo enabled); elsewhere
// New("xla:...") returns ErrNoXLA. Plugins are never auto-downloaded:
// gomlx's auto-install is switched off, and New("xla:cpu") with no plugin
// installed returns an error wrapping ErrNoPlugin that lists the
// directories searched.
package gomlx

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"gelo/device"
)

// ErrNoPlugin is wrapped by New when an XLA backend is asked for and no
// matching PJRT plugin is installed.
var ErrNoPlugin = errors.New("no PJRT plugin found")

// ErrNoXLA is returned by New for an XLA backend in a binary built
// without XLA support (no -tags xla, or cgo disabled).
var ErrNoXLA = errors.New("gelo was built without XLA support: rebuild with -tags xla and cgo enabled")

// Unavailable reports whether err says the requested backend is not
// available on this machine or in this build (as opposed to a failure).
func Unavailable(err error) bool {
	return errors.Is(err, ErrNoPlugin) || errors.Is(err, ErrNoXLA)
}

var _ device.Device = (*Device)(nil)

// Device runs device-placed matmuls on a GoMLX backend. It is safe for
// concurrent use.
type Device struct {
	name string
	be   backends.Backend
	// split cuts each weight's rows into row blocks laid out as a batch
	// axis (simplego only; see splitFor).
	split bool
	// f32Limbs makes MatMulU32 multiply its limbs in float32 chunks
	// (limbProductF32) instead of int32; both are exact, which is faster
	// on a GPU is BenchmarkMatMulU32's to measure (lattice.go). Set it
	// before the first MatMulU32, not while one runs.
	f32Limbs bool

	mu      sync.RWMutex // guards weights and closed; held shared by MatMul
	weights map[string]*weight
	closed  bool

	execMu sync.Mutex
	execs  map[execKey]backends.Executable
}

type weight struct {
	buf        backends.Buffer
	rows, cols int
	blocks     int // row blocks: the buffer is [rows, cols] or [blocks, rows/blocks, cols]
	dtype      dtypes.DType
	// scale is an Int8 weight's row scales s_w, [rows] or
	// [blocks, rows/blocks] like buf's rows; nil for the other dtypes.
	scale backends.Buffer
}

// params are the weight's executable parameters after the operand.
func (w *weight) params() []backends.Buffer {
	if w.scale == nil {
		return []backends.Buffer{w.buf}
	}
	return []backends.Buffer{w.buf, w.scale}
}

type execKey struct {
	m, rows, cols, blocks int
	dtype                 dtypes.DType // the resident weight's: Float32, BFloat16 or Int8
	// u32 selects the lwe product (MatMulU32: uint32 rows times the int8
	// values mod 2^32) instead of MatMul's float product; f32Limbs, its
	// float32 form (limbProductF32).
	u32, f32Limbs bool
}

// New opens the named backend: "go" (or "go:<options>"), "xla:cpu",
// "xla:cuda", "xla:<plugin>", or "" for $GOMLX_BACKEND (default "go").
func New(backendName string) (*Device, error) {
	if backendName == "" {
		backendName = os.Getenv(backends.ConfigEnvVar)
		if backendName == "" {
			backendName = "go"
		}
	}
	kind, config, _ := strings.Cut(backendName, ":")
	var be backends.Backend
	var err error
	switch kind {
	case simplego.BackendName:
		err = guard("open simplego", func() (err error) {
			be, err = simplego.New(config)
			return err
		})
	case "xla":
		be, err = newXLA(config)
	default:
		return nil, fmt.Errorf("gomlx: unknown backend %q: want \"go\", \"xla:cpu\" or \"xla:cuda\"", backendName)
	}
	if err != nil {
		return nil, fmt.Errorf("gomlx backend %q: %w", backendName, err)
	}
	return &Device{name: backendName, be: be, split: kind == simplego.BackendName,
		weights: map[string]*weight{}, execs: map[execKey]backends.Executable{}}, nil
}

// Name is the backend name New was given (after $GOMLX_BACKEND).
func (d *Device) Name() string { return d.name }

// Description is the engine's own description of itself and its device.
func (d *Device) Description() string {
	var s string
	_ = guard("describe", func() error {
		s = d.be.Description() + ", " + d.be.DeviceDescription(0)
		return nil
	})
	return s
}

// Upload copies the public weight w [rows, cols] into a backend buffer,
// once; uploading a name again replaces it. w is not retained.
func (d *Device) Upload(name string, w []float32, rows, cols int) error {
	if rows <= 0 || cols <= 0 || rows > len(w) || len(w)/rows != cols || len(w)%rows != 0 {
		return fmt.Errorf("gomlx upload %q: %d values for shape [%d, %d]", name, len(w), rows, cols)
	}
	return d.upload(name, w, dtypes.Float32, rows, cols)
}

// UploadBF16 keeps the public bf16 weight w [rows, cols] as a BFloat16
// buffer (half the bytes); the matmul executable widens it to float32
// (exact) before the product, so the result is Upload's for the widened
// values. w is not retained.
func (d *Device) UploadBF16(name string, w []uint16, rows, cols int) error {
	if rows <= 0 || cols <= 0 || rows > len(w) || len(w)/rows != cols || len(w)%rows != 0 {
		return fmt.Errorf("gomlx upload %q: %d bf16 values for shape [%d, %d]", name, len(w), rows, cols)
	}
	return d.upload(name, unsafe.Slice((*bfloat16.BFloat16)(unsafe.SliceData(w)), len(w)), dtypes.BFloat16, rows, cols)
}

func (d *Device) upload(name string, flat any, dtype dtypes.DType, rows, cols int) error {
	return d.uploadScaled(name, flat, dtype, nil, rows, cols)
}

// uploadScaled keeps flat [rows, cols] of dtype and, when scale is not
// nil, its row scales [rows] (an Int8 weight) in a second buffer.
func (d *Device) uploadScaled(name string, flat any, dtype dtypes.DType, scale []float32, rows, cols int) error {
	blocks := 1
	if d.split {
		blocks = splitFor(rows)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("gomlx upload %q: device is closed", name)
	}
	w := &weight{rows: rows, cols: cols, blocks: blocks, dtype: dtype}
	err := guard("upload", func() (err error) {
		if w.buf, err = d.be.BufferFromFlatData(0, flat, weightShape(dtype, rows, cols, blocks)); err != nil || scale == nil {
			return err
		}
		if w.scale, err = d.be.BufferFromFlatData(0, scale, scaleShape(rows, blocks)); err != nil {
			_ = d.be.BufferFinalize(w.buf)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("gomlx upload %q [%d, %d] %s: %w", name, rows, cols, dtype, err)
	}
	if old := d.weights[name]; old != nil {
		d.free(old)
	}
	d.weights[name] = w
	return nil
}

// free releases a weight's buffers.
func (d *Device) free(w *weight) {
	for _, b := range w.params() {
		_ = guard("free", func() error { return d.be.BufferFinalize(b) })
	}
}

// MatMul computes y[m, rows] = x[m, cols] W^T with the resident weight:
// x goes in, y comes back into the caller's slice, nothing else moves.
func (d *Device) MatMul(op, weightName string, x []float32, m int, y []float32) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return fmt.Errorf("gomlx %s %q: device is closed", op, weightName)
	}
	w, ok := d.weights[weightName]
	if !ok {
		return fmt.Errorf("gomlx %s: weight %q was never uploaded", op, weightName)
	}
	if m <= 0 || len(x)%w.cols != 0 || len(x)/w.cols != m || len(y)%w.rows != 0 || len(y)/w.rows != m {
		return fmt.Errorf("gomlx %s %q: x holds %d values and y %d, want %d x %d and %d x %d",
			op, weightName, len(x), len(y), m, w.cols, m, w.rows)
	}
	exe, err := d.executable(execKey{m: m, rows: w.rows, cols: w.cols, blocks: w.blocks, dtype: w.dtype})
	if err != nil {
		return fmt.Errorf("gomlx %s %q: %w", op, weightName, err)
	}
	err = guard("matmul", func() error {
		xb, err := d.be.BufferFromFlatData(0, x, shapes.Make(dtypes.Float32, m, w.cols))
		if err != nil {
			return err
		}
		return d.run(exe, xb, w.params(), y)
	})
	if err != nil {
		return fmt.Errorf("gomlx %s %q (m=%d): %w", op, weightName, m, err)
	}
	return nil
}

// executable returns the compiled y = x W^T for k (the lwe product when
// k.u32), compiling it once.
func (d *Device) executable(k execKey) (backends.Executable, error) {
	d.execMu.Lock()
	defer d.execMu.Unlock()
	if exe, ok := d.execs[k]; ok {
		return exe, nil
	}
	compile, what := compileMatMul, "matmul"
	if k.u32 {
		compile, what = compileMatMulU32, "u32 matmul"
	}
	var exe backends.Executable
	err := guard("compile", func() (err error) {
		exe, err = compile(d.be, k)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("compile %s m=%d [%d, %d] %s: %w", what, k.m, k.rows, k.cols, k.dtype, err)
	}
	d.execs[k] = exe
	return exe, nil
}

// compileMatMul builds x[m, cols], W[blocks, rows/blocks, cols] (and an
// Int8 weight's scales) -> y[m, rows] = x W^T, in float32 (rowsProduct).
func compileMatMul(be backends.Backend, k execKey) (exe backends.Executable, err error) {
	defer catchBuild(&err)
	g := fb{be.Builder(fmt.Sprintf("gelo_matmul_m%d_%dx%d_b%d", k.m, k.rows, k.cols, k.blocks))}
	x := g.m(g.b.Parameter("x", shapes.Make(dtypes.Float32, k.m, k.cols), nil))
	w := g.m(g.b.Parameter("w", weightShape(k.dtype, k.rows, k.cols, k.blocks), nil))
	if k.dtype != dtypes.Float32 {
		// Widened per call, exactly (bf16 is the upper half of a float32;
		// an int8 value is an integer below 2^24); XLA fuses the
		// conversion into the product.
		w = g.m(g.b.ConvertDType(w, dtypes.Float32))
	}
	if k.dtype == dtypes.Int8 {
		w = scaleRows(g, w, k)
	}
	return g.b.Compile([]backends.Op{rowsProduct(g, x, w, k.m, k)}, nil)
}

// catchBuild turns the fb helpers' buildPanic into the returned error;
// any other panic goes on up (to guard).
func catchBuild(err *error) {
	if r := recover(); r != nil {
		bp, ok := r.(buildPanic)
		if !ok {
			panic(r)
		}
		*err = bp.err
	}
}

// rowsProduct is x[mm, cols] W^T -> [mm, rows], in x's dtype, for W
// resident as weightShape lays it out. With one block it is a single
// DotGeneral contracting the last axis of both operands. With more, x is
// broadcast over the block axis, which becomes a batch axis of the
// DotGeneral (simplego parallelises over batch), and the
// [blocks, mm, rows/blocks] product is transposed back to [mm, rows];
// each output element is the same dot product either way.
func rowsProduct(g fb, x, w backends.Op, mm int, k execKey) backends.Op {
	if k.blocks == 1 {
		return g.m(g.b.DotGeneral(x, []int{1}, nil, w, []int{1}, nil))
	}
	xb := g.bcast(x, []int{1, 2}, k.blocks, mm, k.cols)
	p := g.m(g.b.DotGeneral(xb, []int{2}, []int{0}, w, []int{2}, []int{0}))
	return g.reshape(g.m(g.b.Transpose(p, 1, 0, 2)), mm, k.rows)
}

// scaleRows multiplies the widened int8 weight w by its row scales (the
// executable's third parameter): s_w[j] * float32(W_q[j, i]), one
// float32 rounding, the value wire.DequantizeInt8 writes.
func scaleRows(g fb, w backends.Op, k execKey) backends.Op {
	s := g.m(g.b.Parameter("scale", scaleShape(k.rows, k.blocks), nil))
	axes := []int{0}
	if k.blocks > 1 {
		axes = []int{0, 1}
	}
	return g.m(g.b.Mul(w, g.bcast(s, axes, weightShape(dtypes.Float32, k.rows, k.cols, k.blocks).Dimensions...)))
}

// scaleShape is an Int8 weight's scale buffer shape: its rows, blocked as
// weightShape blocks them.
func scaleShape(rows, blocks int) shapes.Shape {
	if blocks == 1 {
		return shapes.Make(dtypes.Float32, rows)
	}
	return shapes.Make(dtypes.Float32, blocks, rows/blocks)
}

// weightShape is the resident weight's buffer shape. It is fixed at
// upload: reshaping a parameter inside the graph would copy it per call.
func weightShape(dtype dtypes.DType, rows, cols, blocks int) shapes.Shape {
	if blocks == 1 {
		return shapes.Make(dtype, rows, cols)
	}
	return shapes.Make(dtype, blocks, rows/blocks, cols)
}

// splitFor is the number of row blocks a weight of rows rows is cut into
// on simplego. simplego parallelises a DotGeneral only over its batch
// axis (and, past 16K output elements per batch item, re-packs both
// operands into blocks on every call). Cutting W's rows into blocks that
// are a batch axis gives every core work at decode's small m and keeps the
// per-item problem small, without ever moving the weight: the blocks are
// contiguous row ranges of the same buffer.
func splitFor(rows int) int {
	want := max(1, splitBlocks)
	for b := want; b > 1; b-- {
		if rows%b == 0 && rows/b >= 8 {
			return b
		}
	}
	return 1
}

var splitBlocks = 4 * runtime.NumCPU()

// Close releases the resident weights, the compiled executables and the
// backend. The device is unusable afterwards; Close is idempotent.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for name, w := range d.weights {
		for _, b := range w.params() {
			errs = append(errs, guard("free "+name, func() error { return d.be.BufferFinalize(b) }))
		}
	}
	d.weights = nil
	d.execMu.Lock()
	for _, exe := range d.execs {
		errs = append(errs, guard("free executable", func() error { exe.Finalize(); return nil }))
	}
	d.execs = nil
	d.execMu.Unlock()
	errs = append(errs, guard("finalize backend", func() error { d.be.Finalize(); return nil }))
	return errors.Join(errs...)
}

// guard runs f, turning a panic inside gomlx into an error.
func guard(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: gomlx panicked: %v", what, r)
		}
	}()
	return f()
}

// run executes exe on the operand in and the resident params, frees in,
// and copies the one output into dst (a slice of the output's dtype).
func (d *Device) run(exe backends.Executable, in backends.Buffer, params []backends.Buffer, dst any) error {
	out, err := exe.Execute(append([]backends.Buffer{in}, params...), nil, 0)
	ferr := d.be.BufferFinalize(in)
	if err != nil {
		return err
	}
	if len(out) != 1 {
		for _, o := range out {
			_ = d.be.BufferFinalize(o)
		}
		return fmt.Errorf("executable returned %d outputs, want 1", len(out))
	}
	err = d.be.BufferToFlatData(out[0], dst)
	if ferr2 := d.be.BufferFinalize(out[0]); ferr == nil {
		ferr = ferr2
	}
	if err != nil {
		return err
	}
	return ferr
}
