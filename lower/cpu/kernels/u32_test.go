package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gelo/lwe"
)

// u32Weights builds n wire.Int8 rows of k values: a quarter -127, a
// quarter 127, the rest uniform in [-127, 127]; the 4 scale bytes are
// random (NaN patterns included), since the product ignores them.
func u32Weights(r *rand.Rand, n, k int) []byte {
	w := make([]byte, n*(k+int8RowScale))
	for j := range n {
		row := w[j*(k+int8RowScale) : (j+1)*(k+int8RowScale)]
		for i := range k {
			switch r.IntN(4) {
			case 0:
				row[i] = byte(0x81) // -127
			case 1:
				row[i] = 127
			default:
				row[i] = byte(int8(r.IntN(255) - 127))
			}
		}
		for i := k; i < len(row); i++ {
			row[i] = byte(r.Uint32())
		}
	}
	return w
}

func u32Words(r *rand.Rand, n int) []uint32 {
	x := make([]uint32, n)
	for i := range x {
		x[i] = r.Uint32()
	}
	return x
}

// naiveU32 is the product written as integers: each dot product summed
// exactly in int64 (|sum| <= 127 * 2^32 * k fits for k < 2^24), then
// reduced mod 2^32.
func naiveU32(x []uint32, w []byte, m, k, n int) []uint32 {
	y := make([]uint32, m*n)
	for r := range m {
		for j := range n {
			var s int64
			for i := range k {
				s += int64(int8(w[j*(k+int8RowScale)+i])) * int64(x[r*k+i])
			}
			y[r*n+j] = uint32(s)
		}
	}
	return y
}

// lweWeights is w's integers as lwe.Weights, for lwe.MulRef.
func lweWeights(t *testing.T, w []byte, k, n int) *lwe.Weights {
	t.Helper()
	q := make([]int8, n*k)
	for j := range n {
		for i := range k {
			q[j*k+i] = int8(w[j*(k+int8RowScale)+i])
		}
	}
	lw, err := lwe.NewWeights(q, make([]float32, n), n, k)
	if err != nil {
		t.Fatal(err)
	}
	return lw
}

type u32Case struct {
	name    string
	m, k, n int
	wrap    bool // every word 2^32-1-r (r < 16), every weight 127
}

// u32Cases: widths below one group of 8, not a multiple of 8, 16 or 32,
// odd output counts that leave rows past the last group of four, m = 1,
// 3 and 64, and the wrap case.
var u32Cases = []u32Case{
	{"k1", 1, 1, 1, false},
	{"k7", 1, 7, 3, false},
	{"k13-m3", 3, 13, 5, false},
	{"k8-exact", 1, 8, 4, false},
	{"k100-m3", 3, 100, 41, false},
	{"k1027-m1", 1, 1027, 33, false},
	{"k1027-m64", 64, 1027, 71, false},
	{"k1024-m64", 64, 1024, 257, false},
	{"wrap-m3", 3, 1031, 9, true},
	{"wrap-m64", 64, 256, 13, true},
}

func (tc u32Case) inputs(r *rand.Rand) ([]uint32, []byte) {
	x, w := u32Words(r, tc.m*tc.k), u32Weights(r, tc.n, tc.k)
	if tc.wrap {
		for i := range x {
			x[i] = ^uint32(r.IntN(16))
		}
		for j := range tc.n {
			row := w[j*(tc.k+int8RowScale):]
			for i := range tc.k {
				row[i] = 127
			}
		}
	}
	return x, w
}

// The kernel equals the product summed exactly in int64 and reduced,
// and lwe.MulRef (the level's reference), word for word, with the
// assembly on where the machine has it and with the portable Go kernel.
func TestMatMulU32Int8Reference(t *testing.T) {
	r := rand.New(rand.NewPCG(50, 1))
	c := NewCtx(3)
	defer c.Close()
	defer func(a bool) { useAsm = a }(useAsm)
	for _, tc := range u32Cases {
		x, w := tc.inputs(r)
		want := naiveU32(x, w, tc.m, tc.k, tc.n)
		ref := make([]uint32, tc.m*tc.n)
		if err := lwe.MulRef(lweWeights(t, w, tc.k, tc.n), x, ref); err != nil {
			t.Fatal(err)
		}
		if i := firstDiff(ref, want); i >= 0 {
			t.Fatalf("%s: lwe.MulRef y[%d] = %#x, the int64 sum gives %#x", tc.name, i, ref[i], want[i])
		}
		for _, asm := range []bool{defaultAsm, false} {
			useAsm = asm
			y := make([]uint32, tc.m*tc.n)
			c.MatMulU32Int8(y, x, w, tc.m, tc.k, tc.n)
			if i := firstDiff(y, want); i >= 0 {
				t.Fatalf("%s (asm %v): y[%d] = %#x, want %#x", tc.name, asm, i, y[i], want[i])
			}
		}
	}
}

// The AVX2 kernel and the portable one give the same words on shapes the
// assembly takes whole (k a multiple of 8, rows in fours) and with tails.
func TestMatMulU32Int8AsmMatchesGo(t *testing.T) {
	if !defaultAsm {
		t.Skip("no AVX2 on this machine: only the portable kernel runs")
	}
	defer func(a bool) { useAsm = a }(useAsm)
	r := rand.New(rand.NewPCG(50, 2))
	c := NewCtx(2)
	defer c.Close()
	for _, tc := range []struct{ m, k, n int }{{1, 8, 4}, {1, 5, 7}, {2, 1027, 13}, {4, 1024, 64}, {1, 3072, 1030}} {
		x, w := u32Words(r, tc.m*tc.k), u32Weights(r, tc.n, tc.k)
		useAsm = true
		asm := make([]uint32, tc.m*tc.n)
		c.MatMulU32Int8(asm, x, w, tc.m, tc.k, tc.n)
		useAsm = false
		portable := make([]uint32, tc.m*tc.n)
		c.MatMulU32Int8(portable, x, w, tc.m, tc.k, tc.n)
		if i := firstDiff(asm, portable); i >= 0 {
			t.Fatalf("m%d k%d n%d: y[%d] is %#x in AVX2, %#x in Go", tc.m, tc.k, tc.n, i, asm[i], portable[i])
		}
	}
}

// The worker count changes the split, never a word; nor does taking the
// rows one at a time.
func TestMatMulU32Int8Workers(t *testing.T) {
	r := rand.New(rand.NewPCG(50, 3))
	const m, k, n = 5, 203, 1001
	x, w := u32Words(r, m*k), u32Weights(r, n, k)
	var first []uint32
	for _, workers := range []int{1, 2, 3, 8} {
		c := NewCtx(workers)
		y := make([]uint32, m*n)
		c.MatMulU32Int8(y, x, w, m, k, n)
		for i := range m {
			one := make([]uint32, n)
			c.MatMulU32Int8(one, x[i*k:(i+1)*k], w, 1, k, n)
			if !slices.Equal(one, y[i*n:(i+1)*n]) {
				t.Fatalf("%d workers: row %d alone differs from it in a batch of %d", workers, i, m)
			}
		}
		c.Close()
		if first == nil {
			first = y
		} else if i := firstDiff(y, first); i >= 0 {
			t.Fatalf("%d workers: y[%d] = %#x, one worker gives %#x", workers, i, y[i], first[i])
		}
	}
}

// Shapes that do not fit are the caller's bug and panic with the shapes;
// empty products leave y alone.
func TestMatMulU32Int8Shapes(t *testing.T) {
	c := NewCtx(2)
	defer c.Close()
	w := make([]byte, 3*(4+int8RowScale))
	for _, tc := range []struct {
		name       string
		y, x       int
		m, k, n    int
		wantsPanic bool
	}{
		{"fits", 6, 8, 2, 4, 3, false},
		{"m=0", 0, 0, 0, 4, 3, false},
		{"n=0", 0, 8, 2, 4, 0, false},
		{"short y", 5, 8, 2, 4, 3, true},
		{"short x", 6, 7, 2, 4, 3, true},
		{"short w", 8, 8, 2, 4, 4, true},
		{"k=0", 6, 0, 2, 0, 3, true},
		{"m<0", 6, 8, -1, 4, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := make([]uint32, tc.y)
			for i := range y {
				y[i] = 7
			}
			msg := func() (msg string) {
				defer func() {
					if p := recover(); p != nil {
						msg = fmt.Sprint(p)
					}
				}()
				c.MatMulU32Int8(y, make([]uint32, tc.x), w, tc.m, tc.k, tc.n)
				return ""
			}()
			if got := msg != ""; got != tc.wantsPanic {
				t.Fatalf("panicked %v (%q), want %v", got, msg, tc.wantsPanic)
			}
			if tc.wantsPanic && !strings.Contains(msg, "MatMulU32Int8: bad shapes") {
				t.Fatalf("panic %q does not say what was wrong", msg)
			}
			if tc.m*tc.n == 0 && slices.ContainsFunc(y, func(v uint32) bool { return v != 7 }) {
				t.Fatalf("an empty product wrote y: %v", y)
			}
		})
	}
}

func firstDiff(a, b []uint32) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// BenchmarkMatMulU32Int8: the lwe product next to MatMulTInt8 (the same
// int8 weights times f32 rows) at k = n = 1024, m = 1 and 64, in
// multiply-adds per second (GMAC/s) and weight GB/s (the weight bytes,
// scales included, read once per call).
func BenchmarkMatMulU32Int8(b *testing.B) {
	const k, n = 1024, 1024
	for _, m := range []int{1, 64} {
		r := rand.New(rand.NewPCG(50, uint64(m)))
		w := u32Weights(r, n, k)
		for i := range n { // a finite scale for the f32 kernel
			copy(w[i*(k+int8RowScale)+k:], []byte{0, 0, 0x80, 0x3f})
		}
		xu := u32Words(r, m*k)
		xf := make([]float32, m*k)
		for i := range xf {
			xf[i] = float32(r.NormFloat64())
		}
		yu, yf := make([]uint32, m*n), make([]float32, m*n)
		for _, kind := range []string{"u32", "int8-f32"} {
			b.Run(fmt.Sprintf("%s/m=%d", kind, m), func(b *testing.B) {
				c := NewCtx(0)
				defer c.Close()
				b.ResetTimer()
				for range b.N {
					if kind == "u32" {
						c.MatMulU32Int8(yu, xu, w, m, k, n)
					} else {
						c.MatMulTInt8(yf, xf, w, m, k, n, nil)
					}
				}
				b.StopTimer()
				s := b.Elapsed().Seconds()
				b.ReportMetric(float64(m*k*n)*float64(b.N)/s/1e9, "GMAC/s")
				b.ReportMetric(float64(len(w))*float64(b.N)/s/1e9, "wGB/s")
			})
		}
	}
}
