package mask

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randF32(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func randF64(r *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	return x
}

func sameBits32(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

func sameBits64(a, b []float64) int {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

// withAsm runs f with the assembly kernels enabled (when available) and
// disabled, returning both results for comparison.
func withAsm(t *testing.T, f func()) (asm bool) {
	t.Helper()
	saved := useAsm
	defer func() { useAsm = saved }()
	useAsm = saved
	f()
	return saved
}

func TestFMA32MatchesHardware(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX2/FMA")
	}
	// sgemm1x16 with kc = 1 is one VFMADD231PS per lane: compare it with the
	// float64 round-to-odd emulation on operands with wide exponent spread
	// (where naive double rounding would go wrong).
	r := rand.New(rand.NewPCG(1, 2))
	wide := func() float32 {
		return float32(r.NormFloat64() * math.Exp2(float64(r.IntN(80)-40)))
	}
	var x, y, y0 [16]float32
	for it := 0; it < 50000; it++ {
		a := wide()
		for i := range x {
			x[i], y[i] = wide(), wide()
			if it%3 == 0 { // cancellation-heavy cases
				y[i] = -float32(float64(a)*float64(x[i])) * (1 + float32(r.IntN(3)-1)*0x1p-23)
			}
		}
		y0 = y
		sgemm1x16(&a, 1, &x[0], 16, &y[0], 1)
		for i := range x {
			if want := fma32(a, x[i], y0[i]); math.Float32bits(want) != math.Float32bits(y[i]) {
				t.Fatalf("fma32(%g,%g,%g) = %g, hardware %g", a, x[i], y0[i], want, y[i])
			}
		}
	}
}

func TestSgemmAsmMatchesGo(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX2/FMA")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ mr, nc, kc, rs, ks int }{
		{4, 16, 1, 37, 1}, {4, 16, 37, 1, 41}, {4, 40, 64, 70, 1}, {4, 27, 5, 1, 9},
		{1, 16, 9, 1, 1}, {3, 33, 17, 50, 1}, {2, 8, 3, 1, 13},
	} {
		ldx, ldy := tc.nc+3, tc.nc+5
		a := randF32(r, (tc.mr-1)*tc.rs+(tc.kc-1)*tc.ks+1)
		x := randF32(r, (tc.kc-1)*ldx+tc.nc)
		y0 := randF32(r, (tc.mr-1)*ldy+tc.nc)
		y1 := append([]float32(nil), y0...)
		sgemmTile(a, tc.rs, tc.ks, x, ldx, y0, ldy, tc.mr, tc.nc, tc.kc)
		useAsm = false
		sgemmTile(a, tc.rs, tc.ks, x, ldx, y1, ldy, tc.mr, tc.nc, tc.kc)
		useAsm = true
		if i := sameBits32(y0, y1); i >= 0 {
			t.Fatalf("%+v: asm/go differ at %d: %g vs %g", tc, i, y0[i], y1[i])
		}
	}
}

func TestFWHTAsmMatchesGo(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX2/FMA")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct{ s, h, n, radix int }{
		{4, 1, 8, 4}, {16, 4, 24, 4}, {64, 1, 19, 4}, {32, 8, 40, 4}, {2, 1, 16, 2}, {8, 4, 13, 2}, {32, 1, 8, 2},
	} {
		ld := tc.n + 2
		for _, withFac := range []bool{false, true} {
			if tc.radix == 2 && !withFac {
				continue
			}
			var fac []float32
			if withFac {
				fac = randF32(r, 2*tc.s)
			}
			p0 := randF32(r, (tc.s-1)*ld+tc.n)
			p1 := append([]float32(nil), p0...)
			fwhtPass(p0, ld, tc.s, tc.h, tc.n, tc.radix, fac)
			useAsm = false
			fwhtPass(p1, ld, tc.s, tc.h, tc.n, tc.radix, fac)
			useAsm = true
			if i := sameBits32(p0, p1); i >= 0 {
				t.Fatalf("%+v fac=%v: asm/go differ at %d", tc, withFac, i)
			}
		}
	}
}

func TestF64KernelsAsmMatchGo(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX2/FMA")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 4, 7, 16, 33, 100, 257} {
		ldv, lda := n+3, n+1
		v := randF64(r, 3*ldv+n)
		a := randF64(r, lda+n)
		var w0, w1 [8]float64
		dot4x2(v, ldv, a, lda, n, &w0)
		useAsm = false
		dot4x2(v, ldv, a, lda, n, &w1)
		useAsm = true
		if i := sameBits64(w0[:], w1[:]); i >= 0 {
			t.Fatalf("dot4x2 n=%d differ at %d", n, i)
		}
		for q := 0; q < 4; q++ {
			for c := 0; c < 2; c++ {
				if d := dot1(v[q*ldv:], a[c*lda:], n); math.Float64bits(d) != math.Float64bits(w0[q*2+c]) {
					t.Fatalf("dot1 != dot4x2 entry n=%d q=%d c=%d", n, q, c)
				}
			}
		}
		a0 := append([]float64(nil), a...)
		a1 := append([]float64(nil), a...)
		a2 := append([]float64(nil), a...)
		axpy4x2(v, ldv, a0, lda, n, &w0)
		useAsm = false
		axpy4x2(v, ldv, a1, lda, n, &w0)
		useAsm = true
		for c := 0; c < 2; c++ {
			ws := []float64{w0[c], w0[2+c], w0[4+c], w0[6+c]}
			axpy1(v, ldv, a2[c*lda:], n, ws, 4)
		}
		if i := sameBits64(a0, a1); i >= 0 {
			t.Fatalf("axpy4x2 n=%d differ at %d", n, i)
		}
		if i := sameBits64(a0, a2); i >= 0 {
			t.Fatalf("axpy1 != axpy4x2 n=%d at %d", n, i)
		}
		x, y := v[:n], a[:n]
		d0 := dot(x, y)
		useAsm = false
		d1 := dot(x, y)
		useAsm = true
		if math.Float64bits(d0) != math.Float64bits(d1) {
			t.Fatalf("dot n=%d differ", n)
		}
		y0 := append([]float64(nil), y...)
		y1 := append([]float64(nil), y...)
		axpy(-0.37, x, y0)
		useAsm = false
		axpy(-0.37, x, y1)
		useAsm = true
		if i := sameBits64(y0, y1); i >= 0 {
			t.Fatalf("axpy n=%d differ at %d", n, i)
		}
	}
}
