package gomlx

import (
	"fmt"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"gelo/device"
	"gelo/device/wire"
)

// The lwe level's device product (device.Lattice):
//
//	y[r, j] = sum_i int32(W_q[j, i]) * c[r, i]  mod 2^32
//
// in the form a GPU runs it (lwe.MulLimbs): each word of c is split into
// four signed byte limbs, c = sum_l b_l 2^(8l) mod 2^32 with b_l in
// [-128, 127]; the four limb matrices are multiplied by W_q in one integer
// product of 4m rows, exact in int32 (|b_l . w_j| <= 128 * 127 * d_in <
// 2^31 for d_in <= limbMaxIn); and the four products are recombined as
// y = sum_l p_l 2^(8l) mod 2^32. All of it is one executable (per call of
// at most u32Rows rows), so what crosses is the words of c in and the
// words of y out.
//
// The split needs no carry chain: the limbs are the bytes of
// t = c + 0x80808080 (mod 2^32) less 128 each, since
// sum_l (byte_l(t) - 128) 2^(8l) = t - 0x80808080 = c mod 2^32. The
// balanced base-256 digits of a word are unique, so these are the limbs
// lwe.SplitLimbs writes.
//
// Engine arithmetic this relies on: uint32 addition (the offset) and
// int32 multiplication and addition (the recombination, a ReduceSum)
// wrap modulo 2^32. In simplego they are Go's uint32/int32 operators,
// which wrap by the Go specification. XLA's elemental IR emitter
// (xla/service/elemental_ir_emitter.cc, EmitIntegerBinaryOp) emits
// integer Add and Multiply as plain LLVM add and mul, without the nsw or
// nuw flags (a TODO there says so), and those wrap; the StableHLO spec
// says only "integer addition". The version inside a given PJRT plugin is
// checked by TestMatMulU32Backend's wrap case, not assumed. The int32
// product itself never leaves int32 below limbMaxIn, so it relies on no
// wrap. No shift is used: simplego has no shift ops in gomlx v0.26.0, so
// a byte is (t / 2^(8l)) & 255 and a shift left is a multiplication by
// 2^(8l).
//
// gomlx v0.26.0's backends.Builder has no int8 x int8 -> int32 product:
// DotGeneral's output takes its operands' dtype (simplego's and XLA's,
// though go-xla's StableHLO builder has OutputDType), so an int8 product
// would wrap at 8 bits. The limbs and the weight are therefore converted
// to int32 inside the executable and multiplied as int32 x int32 -> int32;
// the weight stays resident as int8 (one byte a value), widened per call
// as bf16 weights are. Whether XLA's GPU compiler turns that into an
// int8 tensor-core GEMM, or runs an int32 dot at all fast, is for a lent
// GPU to measure (bench/gpu/run.sh). The second form, limbProductF32,
// multiplies the same limbs as float32 GEMMs over chunks of at most 1024
// columns, where every partial sum is an integer below 2^24 and so exact:
// the product every accelerator runs fastest, with the same bits
// (Device.f32Limbs selects it; int32 stays the default until measured).

var _ device.Lattice = (*Device)(nil)

// gomlx v0.26.0 sizes simplego's DotGeneral blocks for F32, F64 and BF16
// only (its init): an Int32 product gets a block of 1 x 1, and its large
// problem kernel, which steps 4 rows and 8 columns at a time, indexes past
// the block and panics in a worker goroutine (out of the reach of guard),
// as soon as the product has more than 16 outputs. Int32 has F32's element
// size, so it takes F32's block, unless a later gomlx sets its own.
func init() {
	if simplego.DotGeneralTargetBlockLog2Dim[dtypes.Int32] == 0 {
		simplego.DotGeneralTargetBlockLog2Dim[dtypes.Int32] = simplego.DotGeneralTargetBlockLog2Dim[dtypes.Float32]
	}
}

// limbMaxIn is the widest d_in whose limb dot products stay in int32:
// d_in * 128 * 127 < 2^31 (lwe.LimbMaxIn). MatMulU32 refuses wider
// weights rather than rely on the engine wrapping inside its GEMM (a GPU
// integer GEMM may saturate); Qwen3's widest input is 25600.
const limbMaxIn = (1<<31 - 1) / (wire.Int8QMax * 128)

// limbOffset is added to each word before its bytes are read as limbs.
const limbOffset = 0x80808080

// uploadInt8 keeps an Int8 matrix's values as an Int8 buffer and its row
// scales as a Float32 one.
func (d *Device) uploadInt8(name string, w *wire.Matrix) error {
	q := make([]int8, w.Rows*w.Cols)
	scale := make([]float32, w.Rows)
	for j := range w.Rows {
		row := w.Row(j)
		for i, b := range row[:w.Cols] {
			q[j*w.Cols+i] = int8(b)
		}
		scale[j] = wire.RowScaleInt8(row)
	}
	return d.uploadScaled(name, q, dtypes.Int8, scale, w.Rows, w.Cols)
}

// MatMulU32 computes y[m, rows] = c[m, cols] W_q^T modulo 2^32 for a
// resident int8 weight (wire.Int8, uploaded with UploadQ), reading its
// int8 values and ignoring its scales. c goes in, y comes back into the
// caller's slice, nothing else moves. A large m runs as calls of u32Rows
// rows; one executable is compiled per call size and weight shape and
// cached as MatMul's are.
func (d *Device) MatMulU32(op, weightName string, c []uint32, m int, y []uint32) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return fmt.Errorf("gomlx %s %q: device is closed", op, weightName)
	}
	w, ok := d.weights[weightName]
	if !ok {
		return fmt.Errorf("gomlx %s: weight %q was never uploaded", op, weightName)
	}
	if w.dtype != dtypes.Int8 {
		return fmt.Errorf("gomlx %s %q: the u32 product needs an int8 weight (wire.Int8 through UploadQ), this one is %s", op, weightName, w.dtype)
	}
	if w.cols > limbMaxIn {
		return fmt.Errorf("gomlx %s %q: d_in %d is past %d, where an int8 limb dot product can leave int32", op, weightName, w.cols, limbMaxIn)
	}
	if m <= 0 || len(c)%w.cols != 0 || len(c)/w.cols != m || len(y)%w.rows != 0 || len(y)/w.rows != m {
		return fmt.Errorf("gomlx %s %q: c holds %d words and y %d, want %d x %d and %d x %d",
			op, weightName, len(c), len(y), m, w.cols, m, w.rows)
	}
	// The executable's int32 result has y's bits: read it through an
	// int32 view of y rather than converting in the graph.
	yi := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(y))), len(y))
	chunk := d.u32Rows(w)
	for r0 := 0; r0 < m; r0 += chunk {
		mm := min(chunk, m-r0)
		if err := d.matMulU32(w, c[r0*w.cols:(r0+mm)*w.cols], mm, yi[r0*w.rows:(r0+mm)*w.rows]); err != nil {
			return fmt.Errorf("gomlx %s %q (m=%d, rows %d to %d): %w", op, weightName, m, r0, r0+mm, err)
		}
	}
	return nil
}

// u32Rows is how many rows of c one executable call takes for w: every
// row is independent, so MatMulU32 cuts a large m into calls of this many
// rows (and one of the rest), each compiled once, and the bits do not
// change. A call's limbs and limb products are [4, rows, width] int32
// tensors; on simplego a call's peak is about 4.4 times the larger
// (measured: 141 MB over the resident weight for [4, 256, 8192], 32 MiB),
// so a hint computation (m = lambda = 4096) against a vocabulary-wide LM
// head would need tens of GB in one call. Each call also widens the whole
// int8 weight to int32 (4 bytes a value; XLA may fuse that into the
// product, simplego does not), so a call is never made smaller than that
// copy: the limb tensors get max(budget, 4 rows cols) bytes. The float32
// form's chunk products are a chunk count times wider.
func (d *Device) u32Rows(w *weight) int {
	budget := u32BudgetXLA
	if d.split {
		budget = u32BudgetGo
	}
	width := max(w.rows, w.cols)
	if d.f32Limbs { // its chunk products: [chunks, 4 rows of c, rows of w]
		width = max(w.cols, w.rows*(w.cols+f32ChunkMax-1)/f32ChunkMax)
	}
	return max(1, max(budget, 4*w.rows*w.cols)/(4*4*width))
}

// The bytes of one [4, rows, width] int32 tensor of a MatMulU32 call
// (u32Rows) where the weight's int32 copy is smaller: 16 MiB on simplego
// (a [512, 64] weight: 2048 rows a call; a [4096, 4096] one: 1024, by
// its copy's 64 MiB); 256 MiB on XLA (4096 rows a call at width 4096, so
// a prefill's n = 2048 is one call).
var u32BudgetGo, u32BudgetXLA = 16 << 20, 256 << 20

// matMulU32 runs one call of MatMulU32's executable: m rows of c, the
// int32 view yi of their products.
func (d *Device) matMulU32(w *weight, c []uint32, m int, yi []int32) error {
	exe, err := d.executable(execKey{m: m, rows: w.rows, cols: w.cols, blocks: w.blocks, dtype: w.dtype, u32: true, f32Limbs: d.f32Limbs})
	if err != nil {
		return err
	}
	return guard("u32 matmul", func() error {
		cb, err := d.be.BufferFromFlatData(0, c, shapes.Make(dtypes.Uint32, m, w.cols))
		if err != nil {
			return err
		}
		return d.run(exe, cb, []backends.Buffer{w.buf}, yi)
	})
}

// compileMatMulU32 builds c[m, cols] uint32, W[...] int8 -> y[m, rows]
// int32 with y's bits (see the comment at the top of this file).
func compileMatMulU32(be backends.Backend, k execKey) (exe backends.Executable, err error) {
	defer catchBuild(&err)
	g := fb{be.Builder(fmt.Sprintf("gelo_u32_m%d_%dx%d_b%d_f%v", k.m, k.rows, k.cols, k.blocks, k.f32Limbs))}
	c := g.m(g.b.Parameter("c", shapes.Make(dtypes.Uint32, k.m, k.cols), nil))
	w := g.m(g.b.Parameter("w", weightShape(dtypes.Int8, k.rows, k.cols, k.blocks), nil))
	limbs := g.reshape(splitLimbs(g, c, k.m, k.cols), 4*k.m, k.cols)
	var p backends.Op
	if k.f32Limbs {
		p = limbProductF32(g, limbs, w, 4*k.m, k)
	} else {
		p = rowsProduct(g, limbs, g.m(g.b.ConvertDType(w, dtypes.Int32)), 4*k.m, k)
	}
	y := recombine(g, g.reshape(p, 4, k.m, k.rows), k.m, k.rows)
	return g.b.Compile([]backends.Op{y}, nil)
}

// splitLimbs turns c [m, cols] uint32 into its signed byte limbs
// [4, m, cols] int32, limb l at index l: byte l of c + 0x80808080, less
// 128.
func splitLimbs(g fb, c backends.Op, m, cols int) backends.Op {
	off := g.m(g.b.Constant([]uint32{limbOffset}))
	t := g.m(g.b.Add(c, g.bcast(off, nil, m, cols)))
	t4 := g.bcast(t, []int{1, 2}, 4, m, cols)
	shift := g.bcast(g.m(g.b.Constant([]uint32{1, 1 << 8, 1 << 16, 1 << 24}, 4)), []int{0}, 4, m, cols)
	mask := g.bcast(g.m(g.b.Constant([]uint32{0xff})), nil, 4, m, cols)
	u := g.m(g.b.BitwiseAnd(g.m(g.b.Div(t4, shift)), mask))
	return g.m(g.b.Sub(g.m(g.b.ConvertDType(u, dtypes.Int32)), g.constI(128, 4, m, cols)))
}

// recombine sums the limb products p [4, m, rows] int32 as
// sum_l p[l] 2^(8l), wrapping modulo 2^32.
func recombine(g fb, p backends.Op, m, rows int) backends.Op {
	pow := g.bcast(g.m(g.b.Constant([]int32{1, 1 << 8, 1 << 16, 1 << 24}, 4)), []int{0}, 4, m, rows)
	return g.m(g.b.ReduceSum(g.m(g.b.Mul(p, pow)), 0))
}

// f32ChunkMax is the longest run of limb products limbProductF32 sums in
// float32: every partial sum of up to 1024 terms of magnitude at most
// 128 * 127 = 16256 is an integer below 1024 * 16256 = 16646144 < 2^24,
// so it is exact in float32 whatever the order, blocking or fusion.
const f32ChunkMax = 1024

// limbProductF32 is rowsProduct's limb product x[mm, cols] int32 times
// the int8 weight w, exact, through a float32 GEMM: the kind every
// accelerator runs fastest and XLA hands to its GEMM library. Limbs
// (|b| <= 128) and weights (|w| <= 127) are exact in float32, and in the
// reduced inputs a GPU may use for it (TF32's 11 significant bits,
// bfloat16's 8); the contraction is cut into chunks of at most
// f32ChunkMax columns (d_in padded with zero columns to chunks x K, fewer
// than chunks of them), each chunk's sum is exact (f32ChunkMax), and the
// chunks are summed in int32, exact below limbMaxIn. The result is the
// int32 product's, bit for bit.
func limbProductF32(g fb, x, w backends.Op, mm int, k execKey) backends.Op {
	chunks := (k.cols + f32ChunkMax - 1) / f32ChunkMax
	kk := (k.cols + chunks - 1) / chunks
	pad := chunks*kk - k.cols
	xf := g.m(g.b.ConvertDType(x, dtypes.Float32))
	// The row blocks are contiguous row ranges: [rows, cols] is a reshape.
	wf := g.reshape(g.m(g.b.ConvertDType(w, dtypes.Float32)), k.rows, k.cols)
	if pad > 0 {
		xf = g.m(g.b.Concatenate(1, xf, g.constF(0, mm, pad)))
		wf = g.m(g.b.Concatenate(1, wf, g.constF(0, k.rows, pad)))
	}
	x3, w3 := g.reshape(xf, mm, chunks, kk), g.reshape(wf, k.rows, chunks, kk)
	p := g.m(g.b.DotGeneral(x3, []int{2}, []int{1}, w3, []int{2}, []int{1})) // [chunks, mm, rows]
	return g.m(g.b.ReduceSum(g.m(g.b.ConvertDType(p, dtypes.Int32)), 0))
}
