package gomlx

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gelo/device"
	"gelo/device/wire"
	"gelo/lower/cpu"
	"gelo/lower/cpu/kernels"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// refMatMul is y = x W^T in float64.
func refMatMul(x, w []float32, m, rows, cols int) []float64 {
	y := make([]float64, m*rows)
	for i := 0; i < m; i++ {
		for j := 0; j < rows; j++ {
			var s float64
			for k := 0; k < cols; k++ {
				s += float64(x[i*cols+k]) * float64(w[j*cols+k])
			}
			y[i*rows+j] = s
		}
	}
	return y
}

// relErr is max|got - want| / max|want|.
func relErr(got []float32, want []float64) float64 {
	var num, den float64
	for i := range want {
		num = math.Max(num, math.Abs(float64(got[i])-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	return num / den
}

func newGo(t testing.TB, split bool) *Device {
	t.Helper()
	d, err := New("go")
	if err != nil {
		t.Fatal(err)
	}
	d.split = split
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

// matmulTolerance bounds max|y - y_ref| / max|y_ref|. Both the local
// kernels and simplego sum in float32 but in different orders (8-wide
// unrolled partial sums in 64-column blocks vs the local AVX kernels), so
// they differ by f32 round-off: about sqrt(cols) * eps_f32 ~ 1e-6 for
// cols <= 3072 on random normal data. Measured: at most 8e-7 against
// float64 and against the local device; 1e-5 leaves an order of magnitude
// and still catches a wrong transpose or block mapping (errors of order 1).
const matmulTolerance = 1e-5

var testShapes = []struct{ m, rows, cols int }{
	{1, 8, 4},
	{1, 1024, 3072},
	{3, 17, 33}, // prime rows: one block
	{9, 64, 32}, // a shielded decode step's row count
	{16, 96, 1000},
	{16, 3072, 1024},
	{40, 512, 257}, // past simplego's small-problem threshold unsplit
}

func TestMatMulMatchesLocalDevice(t *testing.T) {
	ctx := kernels.NewCtx(0)
	defer ctx.Close()
	local := cpu.NewLocalDevice(ctx)
	r := rand.New(rand.NewPCG(1, 2))
	for _, split := range []bool{true, false} {
		dev := newGo(t, split)
		for _, s := range testShapes {
			t.Run(fmt.Sprintf("split=%v/m=%d/%dx%d", split, s.m, s.rows, s.cols), func(t *testing.T) {
				w := randSlice(r, s.rows*s.cols)
				x := randSlice(r, s.m*s.cols)
				name := fmt.Sprintf("w%dx%d", s.rows, s.cols)
				for _, d := range []interface {
					Upload(string, []float32, int, int) error
				}{dev, local} {
					if err := d.Upload(name, w, s.rows, s.cols); err != nil {
						t.Fatal(err)
					}
				}
				got := make([]float32, s.m*s.rows)
				want := make([]float32, s.m*s.rows)
				// Twice: the second call reuses the cached executable.
				for range 2 {
					if err := dev.MatMul("matmul", name, x, s.m, got); err != nil {
						t.Fatal(err)
					}
				}
				if err := local.MatMul("matmul", name, x, s.m, want); err != nil {
					t.Fatal(err)
				}
				ref := refMatMul(x, w, s.m, s.rows, s.cols)
				eRef, eLocal := relErr(got, ref), relErr(got, f64(want))
				t.Logf("relative error vs float64 %.2g, vs local device %.2g", eRef, eLocal)
				if eRef > matmulTolerance || eLocal > matmulTolerance {
					t.Errorf("relative error %.3g vs float64, %.3g vs local (tolerance %g)", eRef, eLocal, matmulTolerance)
				}
			})
		}
	}
}

func f64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func TestExecutableCache(t *testing.T) {
	d := newGo(t, true)
	r := rand.New(rand.NewPCG(3, 4))
	for i, name := range []string{"a", "b"} { // same shape: one executable per m
		if err := d.Upload(name, randSlice(r, 64*32), 64, 32); err != nil {
			t.Fatal(err)
		}
		_ = i
	}
	y := make([]float32, 4*64)
	for range 3 {
		for _, name := range []string{"a", "b"} {
			for _, m := range []int{1, 4} {
				if err := d.MatMul("matmul", name, randSlice(r, m*32), m, y[:m*64]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if n := len(d.execs); n != 2 {
		t.Errorf("%d executables compiled for one weight shape at two row counts, want 2", n)
	}
	// Re-uploading replaces the weight.
	w := make([]float32, 64*32)
	w[0] = 2
	if err := d.Upload("a", w, 64, 32); err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 32)
	x[0] = 3
	if err := d.MatMul("matmul", "a", x, 1, y[:64]); err != nil {
		t.Fatal(err)
	}
	if y[0] != 6 || y[1] != 0 {
		t.Errorf("after re-upload y[0:2] = %v, want [6 0]", y[:2])
	}
}

func TestBadInput(t *testing.T) {
	if _, err := New("tpu"); err == nil {
		t.Error("New(\"tpu\") succeeded")
	}
	if _, err := New("go:no_such_option"); err == nil {
		t.Error("New with a bad simplego option succeeded")
	}
	d := newGo(t, true)
	w := make([]float32, 12)
	for _, c := range []struct {
		n, rows, cols int
	}{{12, 0, 12}, {12, 3, 5}, {12, -3, -4}, {0, 1, 0}, {12, 24, 0}} {
		if err := d.Upload("w", w[:c.n], c.rows, c.cols); err == nil {
			t.Errorf("Upload of %d values as [%d, %d] succeeded", c.n, c.rows, c.cols)
		}
	}
	if err := d.Upload("w", w, 3, 4); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		weight string
		nx, m  int
		ny     int
	}{{"nope", 4, 1, 3}, {"w", 4, 0, 0}, {"w", 4, -1, 3}, {"w", 5, 1, 3}, {"w", 4, 1, 4}, {"w", 8, 1, 3}} {
		if err := d.MatMul("matmul", c.weight, make([]float32, c.nx), c.m, make([]float32, c.ny)); err == nil {
			t.Errorf("MatMul %q with %d x values, m=%d, %d y values succeeded", c.weight, c.nx, c.m, c.ny)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.MatMul("matmul", "w", make([]float32, 4), 1, make([]float32, 3)); err == nil {
		t.Error("MatMul after Close succeeded")
	}
	if err := d.Upload("w", w, 3, 4); err == nil {
		t.Error("Upload after Close succeeded")
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestXLA runs the MatMul check on XLA's CPU plugin, or checks that its
// absence is reported cleanly.
func TestXLA(t *testing.T) {
	d := openOrSkip(t, "xla:cpu")
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range testShapes {
		w, x := randSlice(r, s.rows*s.cols), randSlice(r, s.m*s.cols)
		if err := d.Upload("w", w, s.rows, s.cols); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, s.m*s.rows)
		if err := d.MatMul("matmul", "w", x, s.m, y); err != nil {
			t.Fatal(err)
		}
		if e := relErr(y, refMatMul(x, w, s.m, s.rows, s.cols)); e > matmulTolerance {
			t.Errorf("m=%d [%d, %d]: relative error %.3g (tolerance %g)", s.m, s.rows, s.cols, e, matmulTolerance)
		}
	}
}

// openOrSkip opens the named backend (an XLA one, or go), or skips saying
// why it is unavailable after checking that the reason is reported
// cleanly (ErrNoXLA where XLA is not linked, ErrNoPlugin with the
// directories searched where it is). The device is closed at the end of
// the test.
func openOrSkip(t *testing.T, name string) *Device {
	t.Helper()
	d, err := New(name)
	if err != nil {
		if !Unavailable(err) {
			t.Fatalf("New(%q) failed with an error that is not 'unavailable': %v", name, err)
		}
		if XLABuilt && (!errors.Is(err, ErrNoPlugin) || !strings.Contains(err.Error(), "searched: ") ||
			!strings.Contains(err.Error(), "PJRT_PLUGIN_LIBRARY_PATH")) {
			t.Errorf("XLA is linked but the error does not say where it searched: %v", err)
		}
		if !XLABuilt && !errors.Is(err, ErrNoXLA) {
			t.Errorf("XLA is not linked but the error is %v", err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

// BenchmarkMatMul compares the gomlx go backend (with and without the
// row-block split) with the local device on a [1024, 3072] weight
// (Qwen3-0.6B's down_proj, HF [out, in]) at decode-sized row counts.
func BenchmarkMatMul(b *testing.B) {
	const rows, cols = 1024, 3072
	r := rand.New(rand.NewPCG(7, 8))
	w := randSlice(r, rows*cols)
	ctx := kernels.NewCtx(0)
	defer ctx.Close()
	devs := []struct {
		name string
		dev  interface {
			Upload(string, []float32, int, int) error
			MatMul(string, string, []float32, int, []float32) error
		}
	}{{"local", cpu.NewLocalDevice(ctx)}, {"gomlx-go", newGo(b, true)}, {"gomlx-go-unsplit", newGo(b, false)}}
	for _, d := range devs {
		if err := d.dev.Upload("w", w, rows, cols); err != nil {
			b.Fatal(err)
		}
		for _, m := range []int{1, 16} {
			x := randSlice(r, m*cols)
			y := make([]float32, m*rows)
			b.Run(fmt.Sprintf("%s/m=%d", d.name, m), func(b *testing.B) {
				b.SetBytes(int64(4 * (len(x) + len(y))))
				for b.Loop() {
					if err := d.dev.MatMul("matmul", "w", x, m, y); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(2*m*rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMatMulOverhead is a [8, 8] weight at m=1: the arithmetic is
// negligible, so ns/op is the per-call cost of each device (buffer in,
// executable dispatch, buffer out).
func BenchmarkMatMulOverhead(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	w, x, y := randSlice(r, 64), randSlice(r, 8), make([]float32, 8)
	ctx := kernels.NewCtx(0)
	defer ctx.Close()
	for _, d := range []struct {
		name string
		dev  interface {
			Upload(string, []float32, int, int) error
			MatMul(string, string, []float32, int, []float32) error
		}
	}{{"local", cpu.NewLocalDevice(ctx)}, {"gomlx-go", newGo(b, true)}} {
		if err := d.dev.Upload("w", w, 8, 8); err != nil {
			b.Fatal(err)
		}
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := d.dev.MatMul("matmul", "w", x, 1, y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Both method sets the backends call.

// TestConcurrentMatMul: concurrent calls on shared weights (and a
// compile racing them) give each caller its own product.
func TestConcurrentMatMul(t *testing.T) {
	d := newGo(t, true)
	r := rand.New(rand.NewPCG(11, 12))
	const rows, cols = 48, 40
	w := randSlice(r, rows*cols)
	if err := d.Upload("w", w, rows, cols); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			m := 1 + g%3
			x := make([]float32, m*cols)
			for i := range x {
				x[i] = float32(g + i%7)
			}
			want := refMatMul(x, w, m, rows, cols)
			y := make([]float32, m*rows)
			for range 20 {
				if err := d.MatMul("matmul", "w", x, m, y); err != nil {
					errs <- err
					return
				}
				if e := relErr(y, want); e > matmulTolerance {
					errs <- fmt.Errorf("goroutine %d: relative error %.3g", g, e)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestMatMulQMatchesLocalDevice: the quantized pair (q8_0 rows times a
// q8_0 or q4_0 weight) against the local device's integer kernels and a
// float64 product of the encoded values. Same tolerance as the float
// path: both compute the product of the same encoded values, the local
// one as exact int8 block dots scaled in float32, this one in float32.
func TestMatMulQMatchesLocalDevice(t *testing.T) {
	ctx := kernels.NewCtx(0)
	defer ctx.Close()
	local := cpu.NewLocalDevice(ctx)
	dev := newGo(t, true)
	r := rand.New(rand.NewPCG(13, 14))
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
		for _, s := range []struct{ m, rows, cols int }{{1, 64, 32}, {9, 96, 256}, {16, 1024, 3072}} {
			t.Run(fmt.Sprintf("%v/m=%d/%dx%d", f, s.m, s.rows, s.cols), func(t *testing.T) {
				wm, err := wire.Quantize(f, randSlice(r, s.rows*s.cols), s.rows, s.cols)
				if err != nil {
					t.Fatal(err)
				}
				var xa wire.Activations
				if err := xa.Quantize(randSlice(r, s.m*s.cols), s.m, s.cols); err != nil {
					t.Fatal(err)
				}
				for _, d := range []device.Device{dev, local} {
					if err := d.UploadQ("wq", wm); err != nil {
						t.Fatal(err)
					}
				}
				got, want := make([]float32, s.m*s.rows), make([]float32, s.m*s.rows)
				if err := dev.MatMulQ("matmul", "wq", &xa, got); err != nil {
					t.Fatal(err)
				}
				if err := local.MatMulQ("matmul", "wq", &xa, want); err != nil {
					t.Fatal(err)
				}
				wf := make([]float32, s.rows*s.cols)
				if err := wm.Dequantize(wf); err != nil {
					t.Fatal(err)
				}
				xf := make([]float32, s.m*s.cols)
				for i := range s.m {
					for b := range s.cols / wire.QK {
						q, sc := xa.Block(i, b)
						for j, v := range q {
							xf[i*s.cols+b*wire.QK+j] = float32(v) * sc
						}
					}
				}
				eRef, eLocal := relErr(got, refMatMul(xf, wf, s.m, s.rows, s.cols)), relErr(got, f64(want))
				t.Logf("relative error vs float64 %.2g, vs local device %.2g", eRef, eLocal)
				if eRef > matmulTolerance || eLocal > matmulTolerance {
					t.Errorf("relative error %.3g vs float64, %.3g vs local (tolerance %g)", eRef, eLocal, matmulTolerance)
				}
			})
		}
	}
	if err := dev.UploadQ("bad", nil); err == nil {
		t.Error("UploadQ of a nil matrix succeeded")
	}
	if err := dev.MatMulQ("matmul", "wq", nil, nil); err == nil {
		t.Error("MatMulQ with nil activations succeeded")
	}
	if err := dev.MatMulQ("matmul", "wq", &wire.Activations{}, nil); err == nil {
		t.Error("MatMulQ with empty activations succeeded")
	}
}

// A bf16 weight multiplies exactly as its widened f32 copy: the same
// executable after an exact conversion, so the bits match Upload's.
func TestMatMulBF16MatchesF32(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, split := range []bool{false, true} {
		d := newGo(t, split)
		for _, s := range testShapes {
			x := randSlice(r, s.m*s.cols)
			wf := randSlice(r, s.rows*s.cols)
			wb := make([]uint16, len(wf))
			for i, v := range wf {
				wb[i] = uint16(math.Float32bits(v) >> 16)
				wf[i] = math.Float32frombits(uint32(wb[i]) << 16)
			}
			if err := d.Upload("f", wf, s.rows, s.cols); err != nil {
				t.Fatal(err)
			}
			if err := d.UploadBF16("b", wb, s.rows, s.cols); err != nil {
				t.Fatal(err)
			}
			want, got := make([]float32, s.m*s.rows), make([]float32, s.m*s.rows)
			if err := d.MatMul("matmul", "f", x, s.m, want); err != nil {
				t.Fatal(err)
			}
			if err := d.MatMul("matmul", "b", x, s.m, got); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("split=%v %+v: y[%d] = %v with bf16, %v with its f32 widening", split, s, i, got[i], want[i])
				}
			}
		}
		if err := d.UploadBF16("bad", make([]uint16, 5), 2, 3); err == nil {
			t.Error("UploadBF16 accepted 5 values for [2, 3]")
		}
	}
}
