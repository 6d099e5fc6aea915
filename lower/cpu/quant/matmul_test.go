package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"gelo/device/wire"
)

// refMatMul is the naive reference: for every output, exact integer block
// sums straight from the block bytes, then the canonical float32 order
// (blocks in increasing order, one rounding per operation, bias last).
func refMatMul(a *wire.Activations, w *wire.Matrix, bias []float32) []float32 {
	m, k, n := a.Rows(), a.Cols(), w.Rows
	y := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var acc float32
			for b := 0; b < k/wire.QK; b++ {
				xq, dx := a.Block(i, b)
				blk := w.Block(j, b)
				var isum int64
				for t := 0; t < wire.QK; t++ {
					var qw int64
					if w.Format == wire.Q8_0 {
						qw = int64(int8(blk[2+t]))
					} else {
						nib := blk[2+t%16]
						if t < 16 {
							nib &= 0x0f
						} else {
							nib >>= 4
						}
						qw = int64(nib) - 8
					}
					isum += qw * int64(xq[t])
				}
				if isum != int64(int32(isum)) || math.Abs(float64(isum)) >= 1<<24 {
					panic("block sum out of range")
				}
				s := float32(w.Scale(j, b) * dx)
				p := float32(float32(isum) * s)
				acc = float32(acc + p)
			}
			if bias != nil {
				acc = float32(acc + bias[j])
			}
			y[i*n+j] = acc
		}
	}
	return y
}

// Kernel modes: the portable code, the AVX2 assembly, and the AVX2
// assembly with the AVX-512 VNNI Q8_0 GEMM kernel.
const (
	modeGo     = 0
	modeAVX2   = 1
	modeAVX512 = 2
	// modeAVX512Prefetch is modeAVX512 with the other prefetch variant of
	// the one-row kernels (prefetchL2 flipped), so that both are tested
	// whichever this machine picks.
	modeAVX512Prefetch = 3
	// modeAMX is modeAVX512 with the AMX GEMM kernels (where the process
	// may run them); modes 2 and 3 run the VNNI ones.
	modeAMX = 4
)

var defaultPrefetchL2, defaultAMX = prefetchL2, useAMX

// asmModes returns the kernel modes to test: the portable code, and each
// assembly variant this machine has.
func asmModes() []int {
	modes := []int{modeGo}
	if haveAsm && useAsm {
		modes = append(modes, modeAVX2)
		if useAVX512 {
			modes = append(modes, modeAVX512, modeAVX512Prefetch)
		}
		if defaultAMX {
			modes = append(modes, modeAMX)
		}
	}
	return modes
}

// withAsm runs f with the kernels of the given mode selected.
func withAsm(mode int, f func()) {
	oldAsm, old512, oldPF, oldAMX := useAsm, useAVX512, prefetchL2, useAMX
	useAsm, useAVX512 = mode >= modeAVX2, mode >= modeAVX512
	prefetchL2 = defaultPrefetchL2 != (mode == modeAVX512Prefetch)
	useAMX = defaultAMX && mode == modeAMX
	defer func() { useAsm, useAVX512, prefetchL2, useAMX = oldAsm, old512, oldPF, oldAMX }()
	f()
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

func TestMatMulQReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	c := NewCtx(3)
	defer c.Close()
	shapes := [][3]int{ // m, k, n
		{1, 32, 1}, {1, 32, 16}, {3, 32, 9}, {1, 64, 7}, {1, 96, 8}, {1, 256, 9}, {1, 288, 100}, {1, 1024, 257},
		{2, 32, 3}, {2, 64, 4}, {3, 96, 5}, {5, 256, 13}, {4, 64, 8}, {64, 128, 64},
		{67, 96, 37}, {130, 64, 21}, {9, 1024, 300},
	}
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
		for _, sh := range shapes {
			m, k, n := sh[0], sh[1], sh[2]
			w, err := wire.Quantize(f, randData(rng, n*k, 0.1), n, k)
			if err != nil {
				t.Fatal(err)
			}
			var a wire.Activations
			if err := a.Quantize(randData(rng, m*k, 1), m, k); err != nil {
				t.Fatal(err)
			}
			bias := randData(rng, n, 1)
			for _, bs := range [][]float32{nil, bias} {
				want := refMatMul(&a, w, bs)
				for _, asm := range asmModes() {
					y := make([]float32, m*n+3)
					y[m*n] = 42 // guard
					withAsm(asm, func() {
						if err := c.MatMulQ(y, &a, w, bs); err != nil {
							t.Fatal(err)
						}
					})
					if i := firstDiff(y[:m*n], want); i >= 0 {
						t.Fatalf("%v m=%d k=%d n=%d bias=%v asm=%v: y[%d] = %g (%#x), ref %g (%#x)",
							f, m, k, n, bs != nil, asm, i, y[i], math.Float32bits(y[i]), want[i], math.Float32bits(want[i]))
					}
					if y[m*n] != 42 {
						t.Fatal("wrote past m*n")
					}
				}
			}
		}
	}
}

// TestMatMulQExtremes: raw blocks with every quant value (-128 included for
// Q8_0, which ggml never writes but a file may hold) against activations at
// +-127, where the int16 pair sums of VPMADDUBSW are largest.
// TestMatMulQModes: every kernel mode (for Q8_0 and Q4_0 alike, so the AVX2
// 2x4 and the AVX-512 16-column kernels of both formats) is bit-identical to
// the portable code over many GEMM shapes (m from 2 to 40; k from one block to 3072; n with
// every remainder of the 16- and 4-column tiles, and panels narrower than a
// tile) and worker counts.
func TestMatMulQModes(t *testing.T) {
	modes := asmModes()
	if len(modes) < 2 {
		t.Skip("no assembly kernels on this machine/build")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	ks := []int{32, 64, 96, 160, 512, 3072}
	ns := []int{1, 3, 4, 7, 15, 16, 17, 31, 33, 40, 47, 64, 100, 181}
	ctxs := []*Ctx{NewCtx(1), NewCtx(2), NewCtx(3), NewCtx(5)}
	defer func() {
		for _, c := range ctxs {
			c.Close()
		}
	}()
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
		for ki, k := range ks {
			for ni, n := range ns {
				m := 2 + (ki*len(ns)+ni)%39 // 2..40, varied per shape
				if k == 3072 {
					m = []int{2, 16, 40, 17}[ni%4]
				}
				if testing.Short() && k == 3072 && n > 64 {
					continue
				}
				w, err := wire.Quantize(f, randData(rng, n*k, 0.1), n, k)
				if err != nil {
					t.Fatal(err)
				}
				var a wire.Activations
				if err := a.Quantize(randData(rng, m*k, 1), m, k); err != nil {
					t.Fatal(err)
				}
				bias := randData(rng, n, 1)
				for _, bs := range [][]float32{nil, bias} {
					want := make([]float32, m*n)
					withAsm(modeGo, func() {
						if err := ctxs[0].MatMulQ(want, &a, w, bs); err != nil {
							t.Fatal(err)
						}
					})
					checkModes(t, modes[1:], ctxs, &a, w, bs, want)
				}
			}
		}
	}
	// Every m from 2 to 40 at one shape with a 16-column remainder.
	k, n := 128, 53
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
		w, _ := wire.Quantize(f, randData(rng, n*k, 0.1), n, k)
		for m := 2; m <= 40; m++ {
			var a wire.Activations
			_ = a.Quantize(randData(rng, m*k, 1), m, k)
			want := refMatMul(&a, w, nil)
			for _, mode := range modes {
				y := make([]float32, m*n)
				withAsm(mode, func() {
					if err := ctxs[1].MatMulQ(y, &a, w, nil); err != nil {
						t.Fatal(err)
					}
				})
				if i := firstDiff(y, want); i >= 0 {
					t.Fatalf("%v m=%d mode=%d: y[%d] = %g, ref %g", f, m, mode, i, y[i], want[i])
				}
			}
		}
	}
}

func TestMatMulQExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	c := NewCtx(2)
	defer c.Close()
	m, k, n := 3, 256, 19
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
		bb := f.BlockBytes()
		data := make([]byte, n*k/wire.QK*bb)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		for blk := 0; blk < n*k/wire.QK; blk++ {
			h := float16.Fromfloat32(float32(rng.NormFloat64()) * 0.01).Bits()
			binary.LittleEndian.PutUint16(data[blk*bb:], h)
			switch blk % 4 { // saturate some blocks
			case 0:
				for t := 2; t < bb; t++ {
					data[blk*bb+t] = 0x80 // q8: -128; q4: nibbles 0 and 8
				}
			case 1:
				for t := 2; t < bb; t++ {
					data[blk*bb+t] = 0x7f // q8: 127; q4: 15 and 7
				}
			case 2:
				for t := 2; t < bb; t++ {
					data[blk*bb+t] = 0x00 // q4: -8
				}
			}
		}
		w, err := wire.NewMatrix(f, n, k, data)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, m*k)
		for i := range x {
			switch (i / wire.QK) % 3 {
			case 0:
				x[i] = 5 // q = 127 everywhere
			case 1:
				x[i] = float32(1 - 2*(i%2)) // +-127 alternating
			default:
				x[i] = float32(rng.NormFloat64())
			}
		}
		x[3] = -5
		var a wire.Activations
		if err := a.Quantize(x, m, k); err != nil {
			t.Fatal(err)
		}
		want := refMatMul(&a, w, nil)
		il, il16 := interleaved(t, w), interleavedAs(t, w, wire.Interleaved16)
		for _, asm := range asmModes() {
			for _, wm := range []*wire.Matrix{w, il, il16} {
				y := make([]float32, m*n)
				withAsm(asm, func() {
					if err := c.MatMulQ(y, &a, wm, nil); err != nil {
						t.Fatal(err)
					}
				})
				if i := firstDiff(y, want); i >= 0 {
					t.Fatalf("%v asm=%v layout=%d: y[%d] = %g, ref %g", f, asm, wm.Layout, i, y[i], want[i])
				}
			}
		}
	}
}

// checkModes asserts that the product of a and w (+ bs) is want, bit for
// bit, in every kernel mode and on every Ctx, and writes nothing past it.
func checkModes(t *testing.T, modes []int, ctxs []*Ctx, a *wire.Activations, w *wire.Matrix, bs, want []float32) {
	t.Helper()
	m, n := a.Rows(), w.Rows
	for _, mode := range modes {
		for ci, c := range ctxs {
			y := make([]float32, m*n+1)
			y[m*n] = 42
			withAsm(mode, func() {
				if err := c.MatMulQ(y, a, w, bs); err != nil {
					t.Fatal(err)
				}
			})
			if i := firstDiff(y[:m*n], want); i >= 0 {
				t.Fatalf("%v layout=%d m=%d k=%d n=%d bias=%v mode=%d ctx=%d: y[%d] = %g (%#x), want %g (%#x)",
					w.Format, w.Layout, m, a.Cols(), n, bs != nil, mode, ci, i, y[i], math.Float32bits(y[i]), want[i], math.Float32bits(want[i]))
			}
			if y[m*n] != 42 {
				t.Fatal("wrote past m*n")
			}
		}
	}
}

// interleaved returns an Interleaved8 copy of w.
func interleaved(t testing.TB, w *wire.Matrix) *wire.Matrix {
	return interleavedAs(t, w, wire.Interleaved8)
}

// interleavedAs returns a copy of w in layout l.
func interleavedAs(t testing.TB, w *wire.Matrix, l wire.Layout) *wire.Matrix {
	il := *w
	il.Data = append([]byte(nil), w.Data...)
	if err := il.InterleaveTo(l); err != nil {
		t.Fatal(err)
	}
	return &il
}

// TestMatMulQInterleaved: an Interleaved8 or Interleaved16 matrix gives
// the reference's bits in every kernel mode and worker count, for m = 1
// (decode) and GEMM row counts (Interleaved8: odd ones take the one-row
// kernel for the last row; Interleaved16: more than 16 rows take several
// calls), with whole groups only, a partial last group, and fewer rows
// than a group.
func TestMatMulQInterleaved(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	ctxs := []*Ctx{NewCtx(1), NewCtx(2), NewCtx(3)}
	defer func() {
		for _, c := range ctxs {
			c.Close()
		}
	}()
	shapes := [][3]int{ // m, k, n
		{1, 32, 8}, {1, 96, 13}, {1, 1024, 264}, {1, 3072, 40}, {1, 64, 5},
		{2, 64, 16}, {3, 96, 21}, {5, 256, 64}, {17, 128, 100}, {67, 64, 72}, {130, 96, 9}, {4, 32, 3},
		{1, 1024, 48}, {1, 64, 37}, {16, 96, 32}, {33, 64, 50}, {2, 32, 16},
	}
	for _, lay := range []wire.Layout{wire.Interleaved8, wire.Interleaved16} {
		for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
			testInterleavedShapes(t, rng, ctxs, lay, f, shapes)
		}
	}
}

func testInterleavedShapes(t *testing.T, rng *rand.Rand, ctxs []*Ctx, lay wire.Layout, f wire.Format, shapes [][3]int) {
	{
		for _, sh := range shapes {
			m, k, n := sh[0], sh[1], sh[2]
			w, err := wire.Quantize(f, randData(rng, n*k, 0.1), n, k)
			if err != nil {
				t.Fatal(err)
			}
			il := interleavedAs(t, w, lay)
			var a wire.Activations
			if err := a.Quantize(randData(rng, m*k, 1), m, k); err != nil {
				t.Fatal(err)
			}
			bias := randData(rng, n, 1)
			for _, bs := range [][]float32{nil, bias} {
				checkModes(t, asmModes(), ctxs, &a, il, bs, refMatMul(&a, w, bs))
			}
		}
	}
}

// TestMatMulQDeterminism: row i of a batch is bit-identical to the m=1
// product of row i, whatever the worker count, the kernels or the tiling.
func TestMatMulQDeterminism(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	m, k, n := 37, 320, 203
	xs := randData(rng, m*k, 1)
	bias := randData(rng, n, 0.5)
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
		w, err := wire.Quantize(f, randData(rng, n*k, 0.05), n, k)
		if err != nil {
			t.Fatal(err)
		}
		var ref []float32
		for _, workers := range []int{1, 2, 3, 8} {
			c := NewCtx(workers)
			for _, asm := range asmModes() {
				withAsm(asm, func() {
					y := make([]float32, m*n)
					if err := c.MatMul(y, xs, m, w, bias); err != nil {
						t.Fatal(err)
					}
					if ref == nil {
						ref = y
					} else if i := firstDiff(y, ref); i >= 0 {
						t.Fatalf("%v workers=%d asm=%v: batch differs at %d", f, workers, asm, i)
					}
					// Each row alone, and sub-batches at odd offsets.
					row := make([]float32, n)
					for i := 0; i < m; i++ {
						if err := c.MatMul(row, xs[i*k:(i+1)*k], 1, w, bias); err != nil {
							t.Fatal(err)
						}
						if j := firstDiff(row, ref[i*n:(i+1)*n]); j >= 0 {
							t.Fatalf("%v workers=%d asm=%v: row %d alone differs at col %d: %g vs %g", f, workers, asm, i, j, row[j], ref[i*n+j])
						}
					}
					for _, sub := range [][2]int{{3, 5}, {10, 2}, {1, 35}} {
						i0, mm := sub[0], sub[1]
						ys := make([]float32, mm*n)
						if err := c.MatMul(ys, xs[i0*k:(i0+mm)*k], mm, w, bias); err != nil {
							t.Fatal(err)
						}
						if j := firstDiff(ys, ref[i0*n:(i0+mm)*n]); j >= 0 {
							t.Fatalf("%v workers=%d asm=%v: rows %d+%d differ at %d", f, workers, asm, i0, mm, j)
						}
					}
				})
			}
			c.Close()
		}
	}
}

func TestMatMulQNaN(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	c := NewCtx(2)
	defer c.Close()
	k, n := 128, 24
	x := randData(rng, 2*k, 1)
	x[k+70] = float32(math.NaN())
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
		w, _ := wire.Quantize(f, randData(rng, n*k, 1), n, k)
		for _, asm := range asmModes() {
			y := make([]float32, 2*n)
			withAsm(asm, func() {
				if err := c.MatMul(y, x, 2, w, nil); err != nil {
					t.Fatal(err)
				}
			})
			for j := 0; j < n; j++ {
				if math.IsNaN(float64(y[j])) || !math.IsNaN(float64(y[n+j])) {
					t.Fatalf("%v asm=%v: col %d: clean row %g, NaN row %g", f, asm, j, y[j], y[n+j])
				}
			}
		}
	}
}

// TestMatMulQAccuracy: against the float32 product with the dequantized
// weights and the unquantized input, the error is at the quantization level.
func TestMatMulQAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	c := NewCtx(2)
	defer c.Close()
	m, k, n := 4, 512, 64
	x := randData(rng, m*k, 1)
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
		w, _ := wire.Quantize(f, randData(rng, n*k, 0.05), n, k)
		wd := make([]float32, n*k)
		_ = w.Dequantize(wd)
		y := make([]float32, m*n)
		if err := c.MatMul(y, x, m, w, nil); err != nil {
			t.Fatal(err)
		}
		var num, den float64
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s float64
				for t := 0; t < k; t++ {
					s += float64(x[i*k+t]) * float64(wd[j*k+t])
				}
				num += (float64(y[i*n+j]) - s) * (float64(y[i*n+j]) - s)
				den += s * s
			}
		}
		// Only the activation is quantized relative to this reference.
		if rel := math.Sqrt(num / den); rel > 0.01 {
			t.Fatalf("%v: relative error %g", f, rel)
		}
	}
}

func TestMatMulQErrors(t *testing.T) {
	c := NewCtx(1)
	defer c.Close()
	w, _ := wire.Quantize(wire.Q8_0, make([]float32, 8*64), 8, 64)
	var a wire.Activations
	_ = a.Quantize(make([]float32, 2*64), 2, 64)
	y := make([]float32, 16)
	if err := c.MatMulQ(y[:15], &a, w, nil); err == nil {
		t.Error("short y accepted")
	}
	if err := c.MatMulQ(y, &a, w, make([]float32, 7)); err == nil {
		t.Error("short bias accepted")
	}
	if err := c.MatMulQ(y, &wire.Activations{}, w, nil); err == nil {
		t.Error("empty activations accepted")
	}
	if err := c.MatMulQ(y, nil, w, nil); err == nil {
		t.Error("nil activations accepted")
	}
	if err := c.MatMulQ(y, &a, nil, nil); err == nil {
		t.Error("nil matrix accepted")
	}
	var b wire.Activations
	_ = b.Quantize(make([]float32, 96), 1, 96)
	if err := c.MatMulQ(y, &b, w, nil); err == nil {
		t.Error("k mismatch accepted")
	}
	bad := *w
	bad.Data = bad.Data[:10]
	if err := c.MatMulQ(y, &a, &bad, nil); err == nil {
		t.Error("truncated matrix accepted")
	}
	bad = *w
	bad.Cols = 48
	if err := c.MatMulQ(y, &a, &bad, nil); err == nil {
		t.Error("cols 48 accepted")
	}
	if err := c.MatMul(y, make([]float32, 100), 2, w, nil); err == nil {
		t.Error("short x accepted")
	}
}

func TestMatMulQAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	c := NewCtx(2)
	defer c.Close()
	k, n := 256, 72
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0, wire.Q4_K} {
		rm, _ := wire.Quantize(f, randData(rng, n*k, 1), n, k)
		ws := []*wire.Matrix{rm}
		if l := LayoutFor(f); l != wire.RowMajor {
			ws = append(ws, interleavedAs(t, rm, l)) // the AMX kernels' (m = 65)
		}
		for _, w := range ws {
			for _, m := range []int{1, 2, 65} {
				x := randData(rng, m*k, 1)
				y := make([]float32, m*n)
				bias := randData(rng, n, 1)
				var a wire.Activations
				_ = a.Quantize(x, m, k)
				_ = c.MatMul(y, x, m, w, bias) // warm-up: grows the scratch
				if got := testing.AllocsPerRun(20, func() {
					if err := c.MatMulQ(y, &a, w, bias); err != nil {
						t.Fatal(err)
					}
				}); got != 0 {
					t.Errorf("%v layout %d m=%d: MatMulQ allocates %v", f, w.Layout, m, got)
				}
				if got := testing.AllocsPerRun(20, func() {
					if err := c.MatMul(y, x, m, w, bias); err != nil {
						t.Fatal(err)
					}
				}); got != 0 {
					t.Errorf("%v m=%d: MatMul allocates %v", f, m, got)
				}
				if got := testing.AllocsPerRun(20, func() {
					_ = c.QuantizeActivations(&a, x, m, k)
				}); got != 0 {
					t.Errorf("m=%d: QuantizeActivations allocates %v", m, got)
				}
			}
		}
	}
}

func TestFormatString(t *testing.T) {
	if fmt.Sprint(wire.Q8_0, wire.Q4_0, wire.Format(3)) != "q8_0 q4_0 Format(3)" {
		t.Error(fmt.Sprint(wire.Q8_0, wire.Q4_0, wire.Format(3)))
	}
}
