package gomlx

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"gelo/device"
	"gelo/device/wire"
	"gelo/lwe"
)

// u32Case is one MatMulU32 check: m rows of c against a [rows, cols]
// weight; words and weights say how the operands are drawn.
type u32Case struct {
	name           string
	m, rows, cols  int
	words, weights string
}

// u32Cases are the shapes the lwe level's contract names: m = 1, 3, 64,
// widths that are not multiples of 8, 16 or 32, odd d_out, and the
// extremes: words near 2^32 - 1 with every weight 127 (the sum wraps many
// times), and words whose every limb is 127 or -128/-127 against weights
// of the opposite sign (the largest limb dot products, |p| near
// 128 * 127 * d_in; at d_in = 1024 the float32 form's largest chunk sum,
// 16646144, just under 2^24); and d_in = 2048 (two float32 chunks, no
// padding; 1031 and 4099 pad one zero column).
var u32Cases = []u32Case{
	{"tiny", 1, 1, 1, "uniform", "uniform"},
	{"odd", 1, 7, 13, "uniform", "uniform"},
	{"m3", 3, 17, 33, "uniform", "uniform"},
	{"m64", 64, 31, 100, "uniform", "uniform"},
	{"wide", 3, 65, 1031, "uniform", "uniform"},
	{"decode", 1, 96, 1000, "uniform", "uniform"},
	{"blocks", 64, 64, 257, "uniform", "uniform"},
	{"wrap", 3, 9, 4099, "top", "max"},
	{"limb127", 3, 5, 4099, "0x7f7f7f7f", "min"},
	{"limb-128", 1, 5, 4099, "0x80808080", "min"},
	{"limb-128max", 3, 3, 511, "0x80808080", "max"},
	{"chunks", 3, 10, 2048, "uniform", "uniform"},
	{"chunkmax", 1, 3, 1024, "0x80808080", "min"},
}

// u32Operands draws c [m, cols] and W_q [rows, cols] for tc and returns
// W_q as a wire.Int8 matrix (random positive scales) and as lwe.Weights.
func u32Operands(t testing.TB, r *rand.Rand, tc u32Case) ([]uint32, *wire.Matrix, *lwe.Weights) {
	t.Helper()
	c := make([]uint32, tc.m*tc.cols)
	for i := range c {
		switch tc.words {
		case "uniform":
			c[i] = r.Uint32()
		case "top":
			c[i] = math.MaxUint32 - r.Uint32N(256)
		case "0x7f7f7f7f":
			c[i] = 0x7f7f7f7f
		case "0x80808080":
			c[i] = 0x80808080
		default:
			t.Fatalf("unknown words %q", tc.words)
		}
	}
	q := make([]int8, tc.rows*tc.cols)
	for i := range q {
		switch tc.weights {
		case "uniform":
			q[i] = int8(r.IntN(2*wire.Int8QMax+1) - wire.Int8QMax)
		case "max":
			q[i] = wire.Int8QMax
		case "min":
			q[i] = -wire.Int8QMax
		default:
			t.Fatalf("unknown weights %q", tc.weights)
		}
	}
	if tc.weights == "uniform" && len(q) >= 2 {
		q[0], q[len(q)-1] = -wire.Int8QMax, wire.Int8QMax
	}
	rb := tc.cols + 4
	data := make([]byte, tc.rows*rb)
	for j := range tc.rows {
		for i := range tc.cols {
			data[j*rb+i] = byte(q[j*tc.cols+i])
		}
		binary.LittleEndian.PutUint32(data[j*rb+tc.cols:], math.Float32bits(0.01+r.Float32()))
	}
	wm, err := wire.NewMatrix(wire.Int8, tc.rows, tc.cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return c, wm, &lwe.Weights{Out: tc.rows, In: tc.cols, Q: q}
}

// checkU32 runs MatMulU32 twice (the second call reuses the cached
// executable) and compares every word with lwe.MulRef.
func checkU32(t *testing.T, d *Device, r *rand.Rand, tc u32Case) {
	t.Helper()
	c, wm, wq := u32Operands(t, r, tc)
	if err := d.UploadQ("wq", wm); err != nil {
		t.Fatal(err)
	}
	want := make([]uint32, tc.m*tc.rows)
	if err := lwe.MulRef(wq, c, want); err != nil {
		t.Fatal(err)
	}
	for call := range 2 {
		got := make([]uint32, tc.m*tc.rows)
		if err := d.MatMulU32("matmul", "wq", c, tc.m, got); err != nil {
			t.Fatal(err)
		}
		for k := range got {
			if got[k] != want[k] {
				t.Fatalf("call %d: y[%d, %d] = %#08x, lwe.MulRef says %#08x", call, k/tc.rows, k%tc.rows, got[k], want[k])
			}
		}
	}
}

// TestMatMulU32MatchesMulRef: the limb product on the go engine, in its
// int32 and float32 forms, with and without the row-block split, and with
// m cut into the smallest calls u32Rows makes (no budget: min(rows, cols)
// / 4 rows a call, 7 and a rest of 1 at m = 64 against [31, 100]), equals
// lwe.MulRef word for word.
func TestMatMulU32MatchesMulRef(t *testing.T) {
	r := rand.New(rand.NewPCG(50, 1))
	budget := u32BudgetGo
	defer func() { u32BudgetGo = budget }()
	for _, mode := range []string{"unsplit", "split", "small calls", "f32 unsplit", "f32 split", "f32 small calls"} {
		d := newGo(t, !strings.Contains(mode, "unsplit"))
		d.f32Limbs = strings.HasPrefix(mode, "f32")
		u32BudgetGo = budget
		if strings.HasSuffix(mode, "small calls") {
			u32BudgetGo = 0
		}
		for _, tc := range u32Cases {
			t.Run(fmt.Sprintf("%s/%s/m=%d/%dx%d", mode, tc.name, tc.m, tc.rows, tc.cols), func(t *testing.T) {
				per := d.u32Rows(&weight{rows: tc.rows, cols: tc.cols})
				if calls := (tc.m + per - 1) / per; strings.HasSuffix(mode, "small calls") && tc.m == 64 && calls < 4 {
					t.Fatalf("m = 64 in %d calls, want at least 4", calls)
				}
				checkU32(t, d, r, tc)
			})
		}
	}
}

// TestMatMulU32Backend is the same check, in both forms, on the backend
// $GELO_GOMLX_U32 names (default xla:cpu; bench/gpu/run.sh sets xla:cuda on a lent GPU,
// go in its dry run). It skips, saying why, where the backend is
// unavailable (XLA not linked, or no PJRT plugin).
func TestMatMulU32Backend(t *testing.T) {
	name := os.Getenv("GELO_GOMLX_U32")
	if name == "" {
		name = "xla:cpu"
	}
	d := openOrSkip(t, name)
	t.Logf("backend %s: %s", name, d.Description())
	r := rand.New(rand.NewPCG(50, 2))
	for _, form := range []string{"int32", "f32"} {
		d.f32Limbs = form == "f32"
		for _, tc := range u32Cases {
			t.Run(fmt.Sprintf("%s/%s/m=%d/%dx%d", form, tc.name, tc.m, tc.rows, tc.cols), func(t *testing.T) {
				checkU32(t, d, r, tc)
			})
		}
	}
}

// TestSplitLimbsMatchesLWE: the executable's limbs (bytes of
// c + 0x80808080, less 128) are lwe.SplitLimbs's carry-chain limbs, on
// random words and on the words where a limb is at an end of its range
// or a carry runs through every byte.
func TestSplitLimbsMatchesLWE(t *testing.T) {
	r := rand.New(rand.NewPCG(50, 3))
	c := []uint32{0, 1, 0x7f, 0x80, 0xff, 0x100, 0x7f7f7f7f, 0x80808080, 0x7fffffff, 0x80000000,
		0xffffff80, 0xffffff7f, 0xfffffffe, 0xffffffff}
	for range 1000 {
		c = append(c, r.Uint32())
	}
	var want [4][]int8
	for l := range want {
		want[l] = make([]int8, len(c))
	}
	lwe.SplitLimbs(c, &want)

	be := newGo(t, false).be
	exe, err := func() (exe backends.Executable, err error) {
		defer catchBuild(&err)
		g := fb{be.Builder("limbs")}
		x := g.m(g.b.Parameter("c", shapes.Make(dtypes.Uint32, 1, len(c)), nil))
		return g.b.Compile([]backends.Op{splitLimbs(g, x, 1, len(c))}, nil)
	}()
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Finalize()
	in, err := be.BufferFromFlatData(0, c, shapes.Make(dtypes.Uint32, 1, len(c)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exe.Execute([]backends.Buffer{in}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]int32, 4*len(c))
	if err := be.BufferToFlatData(out[0], got); err != nil {
		t.Fatal(err)
	}
	for l := range 4 {
		for i, w := range c {
			if g := got[l*len(c)+i]; g != int32(want[l][i]) {
				t.Fatalf("limb %d of %#08x: executable %d, lwe.SplitLimbs %d", l, w, g, want[l][i])
			}
		}
	}
}

// An int8 weight stays int8 on the device (values and scales); MatMul
// widens it to s_w[j] * W_q[j, i] per call, so its product has the bits
// of the same product over the f32 weight wire.Dequantize writes.
func TestMatMulInt8MatchesF32(t *testing.T) {
	r := rand.New(rand.NewPCG(50, 4))
	for _, split := range []bool{false, true} {
		d := newGo(t, split)
		for _, s := range testShapes {
			wm, err := wire.Quantize(wire.Int8, randSlice(r, s.rows*s.cols), s.rows, s.cols)
			if err != nil {
				t.Fatal(err)
			}
			wf := make([]float32, s.rows*s.cols)
			if err := wm.Dequantize(wf); err != nil {
				t.Fatal(err)
			}
			if err := d.UploadQ("i8", wm); err != nil {
				t.Fatal(err)
			}
			if err := d.Upload("f", wf, s.rows, s.cols); err != nil {
				t.Fatal(err)
			}
			if w := d.weights["i8"]; w.dtype != dtypes.Int8 || w.scale == nil {
				t.Fatalf("int8 weight resident as %s (scales %v), want Int8 with its scales", w.dtype, w.scale != nil)
			}
			x := randSlice(r, s.m*s.cols)
			want, got := make([]float32, s.m*s.rows), make([]float32, s.m*s.rows)
			if err := d.MatMul("matmul", "f", x, s.m, want); err != nil {
				t.Fatal(err)
			}
			if err := d.MatMul("matmul", "i8", x, s.m, got); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("split=%v %+v: y[%d] = %v from int8, %v from its f32 expansion", split, s, i, got[i], want[i])
				}
			}
		}
	}
}

// TestMatMulU32Cache: one executable per (m, shape) for the u32 product,
// apart from MatMul's on the same int8 weight.
func TestMatMulU32Cache(t *testing.T) {
	d := newGo(t, true)
	r := rand.New(rand.NewPCG(50, 5))
	c, wm, _ := u32Operands(t, r, u32Case{m: 4, rows: 16, cols: 24, words: "uniform", weights: "uniform"})
	for _, name := range []string{"a", "b"} {
		if err := d.UploadQ(name, wm); err != nil {
			t.Fatal(err)
		}
	}
	y := make([]uint32, 4*16)
	for range 3 {
		for _, name := range []string{"a", "b"} {
			for _, m := range []int{1, 4} {
				if err := d.MatMulU32("matmul", name, c[:m*24], m, y[:m*16]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := d.MatMul("matmul", "a", make([]float32, 24), 1, make([]float32, 16)); err != nil {
		t.Fatal(err)
	}
	u32 := 0
	for k := range d.execs {
		if k.u32 {
			u32++
		}
	}
	if u32 != 2 || len(d.execs) != 3 {
		t.Errorf("%d executables, %d of them u32; want 3 (u32 at m = 1 and 4, MatMul at m = 1)", len(d.execs), u32)
	}
}

func TestMatMulU32BadInput(t *testing.T) {
	if limbMaxIn != lwe.LimbMaxIn {
		t.Errorf("limbMaxIn = %d, lwe.LimbMaxIn = %d", limbMaxIn, lwe.LimbMaxIn)
	}
	d := newGo(t, true)
	r := rand.New(rand.NewPCG(50, 6))
	_, wm, _ := u32Operands(t, r, u32Case{m: 1, rows: 3, cols: 4, words: "uniform", weights: "uniform"})
	if err := d.UploadQ("q", wm); err != nil {
		t.Fatal(err)
	}
	if err := d.Upload("f", make([]float32, 12), 3, 4); err != nil {
		t.Fatal(err)
	}
	wide, err := wire.NewMatrix(wire.Int8, 1, limbMaxIn+1, make([]byte, limbMaxIn+1+4))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UploadQ("wide", wide); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		weight    string
		nc, m, ny int
		want      string
	}{
		{"nope", 4, 1, 3, "never uploaded"},
		{"f", 4, 1, 3, "needs an int8 weight"},
		{"wide", limbMaxIn + 1, 1, 1, "can leave int32"},
		{"q", 4, 0, 0, "want 0 x 4"},
		{"q", 4, -1, 3, "want -1 x 4"},
		{"q", 5, 1, 3, "c holds 5 words"},
		{"q", 4, 1, 4, "y 4"},
		{"q", 8, 1, 3, "c holds 8 words"},
	} {
		err := d.MatMulU32("matmul", c.weight, make([]uint32, c.nc), c.m, make([]uint32, c.ny))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("MatMulU32 %q with %d words, m=%d, %d outputs: error %v, want one saying %q", c.weight, c.nc, c.m, c.ny, err, c.want)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.MatMulU32("matmul", "q", make([]uint32, 4), 1, make([]uint32, 3)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("MatMulU32 after Close: %v", err)
	}
}

// BenchmarkMatMulU32 is the lwe product, in its int32 form (u32) and its
// float32 form (u32f32), against the float product (f32) on the same
// resident int8 weight (MatMul widens it to f32), on the backend
// $GELO_GOMLX_U32 names (default go; bench/gpu/run.sh sets xla:cuda), at
// a Qwen3-4B/8B-like width [4096, 4096] and the row counts of B = 1
// decode, B = 64 decode and a prefill chunk ([256, 256] and m = 1, 64
// under -short). Gop/s counts one multiply-add
// of the product as two operations, as GFLOP/s does for the float one
// (the limb form does four int32 multiply-adds for each).
func BenchmarkMatMulU32(b *testing.B) {
	name := os.Getenv("GELO_GOMLX_U32")
	if name == "" {
		name = "go"
	}
	d, err := New(name)
	if Unavailable(err) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	rows, cols, ms := 4096, 4096, []int{1, 64, 512}
	if testing.Short() { // the dry run's: seconds on simplego
		rows, cols, ms = 256, 256, []int{1, 64}
	}
	r := rand.New(rand.NewPCG(50, 7))
	_, wm, _ := u32Operands(b, r, u32Case{m: 1, rows: rows, cols: cols, words: "uniform", weights: "uniform"})
	if err := d.UploadQ("w", wm); err != nil {
		b.Fatal(err)
	}
	for _, m := range ms {
		c := make([]uint32, m*cols)
		for i := range c {
			c[i] = r.Uint32()
		}
		y := make([]uint32, m*rows)
		x, yf := randSlice(r, m*cols), make([]float32, m*rows)
		ops := float64(2 * m * rows * cols)
		for _, form := range []string{"u32", "u32f32"} {
			b.Run(fmt.Sprintf("%s/%s/%dx%d/m=%d", name, form, rows, cols, m), func(b *testing.B) {
				d.f32Limbs = form == "u32f32"
				b.SetBytes(int64(4 * (len(c) + len(y))))
				for b.Loop() {
					if err := d.MatMulU32("matmul", "w", c, m, y); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(ops*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gop/s")
			})
		}
		b.Run(fmt.Sprintf("%s/f32/%dx%d/m=%d", name, rows, cols, m), func(b *testing.B) {
			b.SetBytes(int64(4 * (len(x) + len(yf))))
			for b.Loop() {
				if err := d.MatMul("matmul", "w", x, m, yf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(ops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// The record says what Device is: a device.Lattice, so Device.Lattice.
func TestCapabilitiesLattice(t *testing.T) {
	_, ok := any(newGo(t, false)).(device.Lattice)
	if got := Capabilities().Device.Lattice; got != ok {
		t.Errorf("Capabilities().Device.Lattice = %v, Device is a device.Lattice: %v", got, ok)
	}
}

// Concurrent MatMulU32 calls on one weight (and the compiles racing them)
// each get their own product, word for word.
func TestConcurrentMatMulU32(t *testing.T) {
	d := newGo(t, true)
	r := rand.New(rand.NewPCG(50, 8))
	_, wm, wq := u32Operands(t, r, u32Case{m: 1, rows: 48, cols: 40, words: "uniform", weights: "uniform"})
	if err := d.UploadQ("w", wm); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for g := range 8 {
		c := make([]uint32, (1+g%3)*40)
		for i := range c {
			c[i] = r.Uint32()
		}
		go func() {
			m := len(c) / 40
			want, got := make([]uint32, m*48), make([]uint32, m*48)
			if err := lwe.MulRef(wq, c, want); err != nil {
				errs <- err
				return
			}
			for range 20 {
				if err := d.MatMulU32("matmul", "w", c, m, got); err != nil {
					errs <- err
					return
				}
				if !slices.Equal(got, want) {
					errs <- fmt.Errorf("goroutine %d: product differs from lwe.MulRef", g)
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
