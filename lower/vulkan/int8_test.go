//go:build cgo

package vulkan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gelo/device"
	"gelo/device/wire"
	"gelo/lower/cpu/kernels"
	"gelo/lwe"
)

// int8Options are the device setups the int8 tests run under: the CPU
// device's lane-per-row shaders, the GPU choice (tiled above 8 rows), and
// staging copies with weights split into parts and calls cut into chunks.
var int8Options = []struct {
	name string
	opt  Options
}{
	{"default", Options{}},
	{"gpu", Options{Kernels: "gpu"}},
	{"gpu-staged-parts", Options{Kernels: "gpu", Staging: true, PartBytes: 1024, IOBytes: 8192}},
	{"cpu-staged-parts", Options{Kernels: "cpu", Staging: true, PartBytes: 1024, IOBytes: 8192}},
}

// int8Shapes are [d_out, d_in] with odd widths: d_in not a multiple of 4,
// 8, 16 or 32 and odd d_out among them.
var int8Shapes = []struct{ out, in int }{{37, 64}, {5, 33}, {130, 97}, {1, 1}, {31, 255}, {7, 13}, {16, 8}}

// randInt8 returns an int8 weight [out, in] of uniform values in
// [-127, 127], the extremes -127 and 127 forced into every row, and
// random scales: the wire.Int8 matrix and the same integers as
// lwe.Weights.
func randInt8(t testing.TB, r *rand.Rand, out, in int) (*wire.Matrix, *lwe.Weights) {
	t.Helper()
	q := make([]int8, out*in)
	for i := range q {
		q[i] = int8(r.IntN(255) - 127)
	}
	for j := range out {
		q[j*in+r.IntN(in)] = -127
		q[j*in+r.IntN(in)] = 127
	}
	return int8Matrix(t, q, out, in, r)
}

// int8Matrix packs q (and a random scale a row) as wire.Int8 and as
// lwe.Weights.
func int8Matrix(t testing.TB, q []int8, out, in int, r *rand.Rand) (*wire.Matrix, *lwe.Weights) {
	t.Helper()
	rb := in + 4
	data := make([]byte, out*rb)
	scale := make([]float32, out)
	for j := range out {
		for i := range in {
			data[j*rb+i] = byte(q[j*in+i])
		}
		scale[j] = float32(r.Float64() + 0.01)
		bits := math.Float32bits(scale[j])
		for b := range 4 {
			data[j*rb+in+b] = byte(bits >> (8 * b))
		}
	}
	m, err := wire.NewMatrix(wire.Int8, out, in, data)
	if err != nil {
		t.Fatal(err)
	}
	w, err := lwe.NewWeights(q, scale, out, in)
	if err != nil {
		t.Fatal(err)
	}
	return m, w
}

func randWords(r *rand.Rand, n int) []uint32 {
	c := make([]uint32, n)
	for i := range c {
		c[i] = r.Uint32()
	}
	return c
}

// checkU32 runs MatMulU32 and compares y with lwe.MulRef word for word.
func checkU32(t *testing.T, d *Device, name string, w *lwe.Weights, c []uint32, m int) {
	t.Helper()
	y := make([]uint32, m*w.Out)
	for i := range y {
		y[i] = 0xdeadbeef // a word the device must overwrite
	}
	if err := d.MatMulU32("test", name, c, m, y); err != nil {
		t.Fatal(err)
	}
	want := make([]uint32, m*w.Out)
	if err := lwe.MulRef(w, c, want); err != nil {
		t.Fatal(err)
	}
	for i := range y {
		if y[i] != want[i] {
			t.Fatalf("y[%d, %d] = %#x, want %#x (lwe.MulRef)", i/w.Out, i%w.Out, y[i], want[i])
		}
	}
}

// TestMatMulU32IsMulRef: the lwe product of random words by random int8
// weights equals lwe.MulRef word for word, under every shader and setup,
// at odd widths and at 1, 3, 8, 9, 64 and 512 rows.
func TestMatMulU32IsMulRef(t *testing.T) {
	for _, o := range int8Options {
		d := open(t, o.opt)
		r := rand.New(rand.NewPCG(7, 8))
		for _, sh := range int8Shapes {
			wm, w := randInt8(t, r, sh.out, sh.in)
			if err := d.UploadQ("q", wm); err != nil {
				t.Fatal(err)
			}
			for _, m := range []int{1, 3, 8, 9, 64, 512} {
				t.Run(fmt.Sprintf("%s/%dx%d/m=%d", o.name, sh.out, sh.in, m), func(t *testing.T) {
					checkU32(t, d, "q", w, randWords(r, m*sh.in), m)
				})
			}
		}
	}
}

// TestMatMulU32Wraps: words near 2^32 - 1 by weights that are all 127 (and
// all -127) wrap many times over; the product is still MulRef's.
func TestMatMulU32Wraps(t *testing.T) {
	for _, o := range int8Options[:2] {
		d := open(t, o.opt)
		r := rand.New(rand.NewPCG(9, 10))
		for _, v := range []int8{127, -127} {
			const out, in = 9, 100
			q := make([]int8, out*in)
			for i := range q {
				q[i] = v
			}
			wm, w := int8Matrix(t, q, out, in, r)
			if err := d.UploadQ("wrap", wm); err != nil {
				t.Fatal(err)
			}
			for _, m := range []int{3, 17} { // the gpu choice: mat-vec, tiled
				c := make([]uint32, m*in)
				for i := range c {
					c[i] = math.MaxUint32 - uint32(r.IntN(16))
				}
				t.Run(fmt.Sprintf("%s/w=%d/m=%d", o.name, v, m), func(t *testing.T) { checkU32(t, d, "wrap", w, c, m) })
			}
		}
	}
}

// TestMatMulU32HintSize is the hint's shape: lambda = 4096 rows (A's
// columns) at d_in 256 by d_out 128, under both shader layouts.
func TestMatMulU32HintSize(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 4096 rows by a 128 x 256 weight on a software device")
	}
	for _, o := range int8Options[:2] {
		d := open(t, o.opt)
		r := rand.New(rand.NewPCG(11, 12))
		const out, in, m = 128, 256, 4096
		wm, w := randInt8(t, r, out, in)
		if err := d.UploadQ("hint", wm); err != nil {
			t.Fatal(err)
		}
		t.Run(o.name, func(t *testing.T) { checkU32(t, d, "hint", w, randWords(r, m*in), m) })
	}
}

// TestMatMulInt8IsTheGoKernel: MatMul of f32 rows by an int8 weight gives
// the bits of the Go int8 kernel (kernels.MatMulTInt8, the local
// device's), under every shader and setup.
func TestMatMulInt8IsTheGoKernel(t *testing.T) {
	ctx := kernels.NewCtx(0)
	defer ctx.Close()
	for _, o := range int8Options {
		d := open(t, o.opt)
		r := rand.New(rand.NewPCG(13, 14))
		for _, sh := range int8Shapes {
			wm, _ := randInt8(t, r, sh.out, sh.in)
			if err := d.UploadQ("q", wm); err != nil {
				t.Fatal(err)
			}
			for _, m := range []int{1, 3, 8, 9, 40} {
				x := randF32(r, m*sh.in)
				y := make([]float32, m*sh.out)
				if err := d.MatMul("test", "q", x, m, y); err != nil {
					t.Fatal(err)
				}
				want := make([]float32, m*sh.out)
				ctx.MatMulTInt8(want, x, wm.Data, m, sh.in, sh.out, nil)
				for i := range y {
					if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s [%d, %d] m=%d: y[%d] = %v, want %v bit for bit", o.name, sh.out, sh.in, m, i, y[i], want[i])
					}
				}
			}
		}
	}
}

// TestInt8Errors: each product refuses the weights it does not multiply,
// and MatMulU32 refuses wrong lengths, naming the weight.
func TestInt8Errors(t *testing.T) {
	d := open(t, Options{})
	r := rand.New(rand.NewPCG(15, 16))
	wm, _ := randInt8(t, r, 3, 5)
	if err := d.UploadQ("i8", wm); err != nil {
		t.Fatal(err)
	}
	if err := d.Upload("f", make([]float32, 15), 3, 5); err != nil {
		t.Fatal(err)
	}
	q8, err := wire.Quantize(wire.Q8_0, make([]float32, 64), 2, 32)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UploadQ("q8", q8); err != nil {
		t.Fatal(err)
	}
	a := &wire.Activations{}
	if err := a.Quantize(make([]float32, 32), 1, 32); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"u32 on f32", func() error { return d.MatMulU32("op", "f", make([]uint32, 5), 1, make([]uint32, 3)) }, `"f" is f32`},
		{"u32 on q8_0", func() error { return d.MatMulU32("op", "q8", make([]uint32, 32), 1, make([]uint32, 2)) }, `"q8" is q8_0`},
		{"u32 missing", func() error { return d.MatMulU32("op", "nope", make([]uint32, 5), 1, make([]uint32, 3)) }, "never uploaded"},
		{"u32 short c", func() error { return d.MatMulU32("op", "i8", make([]uint32, 4), 1, make([]uint32, 3)) }, "c holds 4 words"},
		{"u32 long y", func() error { return d.MatMulU32("op", "i8", make([]uint32, 5), 1, make([]uint32, 4)) }, "y 4"},
		{"u32 no rows", func() error { return d.MatMulU32("op", "i8", nil, 0, nil) }, `"i8"`},
		{"q on int8", func() error { return d.MatMulQ("op", "i8", a, make([]float32, 3)) }, `"i8" is int8`},
		{"f32 on q8_0", func() error { return d.MatMul("op", "q8", make([]float32, 32), 1, make([]float32, 2)) }, `"q8" is q8_0`},
	} {
		err := c.call()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	e := open(t, Options{})
	e.Close()
	if err := e.MatMulU32("op", "i8", make([]uint32, 5), 1, make([]uint32, 3)); err == nil {
		t.Error("MatMulU32 after Close succeeded")
	}
}

// TestRecordLattice: the record says what the device does: Lattice set,
// and a Device, seen as any device.Device, runs the lwe product.
func TestRecordLattice(t *testing.T) {
	if !Capabilities().Device.Lattice {
		t.Error("the Vulkan record has Device.Lattice false; Device runs MatMulU32")
	}
	var dev device.Device = open(t, Options{})
	lat, ok := dev.(device.Lattice)
	if !ok {
		t.Fatal("the Vulkan Device is not a device.Lattice")
	}
	r := rand.New(rand.NewPCG(17, 18))
	wm, w := randInt8(t, r, 4, 40)
	if err := dev.UploadQ("i8", wm); err != nil {
		t.Fatal(err)
	}
	c := randWords(r, 2*40)
	y, want := make([]uint32, 2*4), make([]uint32, 2*4)
	if err := lat.MatMulU32("op", "i8", c, 2, y); err != nil {
		t.Fatal(err)
	}
	if err := lwe.MulRef(w, c, want); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(y, want) {
		t.Errorf("MatMulU32 through device.Lattice: %x, want %x", y, want)
	}
}
