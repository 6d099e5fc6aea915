package mask

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// orthoTol is the ||A^T A - I||_max bound: float32 round-off (~2^-24 per
// entry, accumulated in float64 in the check) with ample headroom.
const orthoTol = 1e-5

// roundTripTol bounds max|Unapply(Apply(X)) - X| / max|X|.
const roundTripTol = 2e-5

func newRNG(t testing.TB, pass uint64) *RNG {
	t.Helper()
	r, err := NewPassRNG(testKey, pass)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sample(t testing.TB, ws *Workspace, family string, s int, pass uint64) Mask {
	t.Helper()
	m, err := ws.Sample(family, s, newRNG(t, pass))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// columnsOf returns A[:, cols] (s x len(cols), row-major) by applying m to
// the matching columns of the identity.
func columnsOf(t testing.TB, m Mask, cols []int) []float32 {
	t.Helper()
	s, nc := m.Size(), len(cols)
	e := make([]float32, s*nc)
	for j, c := range cols {
		e[c*nc+j] = 1
	}
	if err := m.Apply(e, nc); err != nil {
		t.Fatal(err)
	}
	return e
}

// gramErr returns max |C^T C - I| for the s x nc row-major matrix C,
// accumulated in float64.
func gramErr(c []float32, s, nc int) float64 {
	cols := make([][]float64, nc)
	for j := range cols {
		cols[j] = make([]float64, s)
		for i := 0; i < s; i++ {
			cols[j][i] = float64(c[i*nc+j])
		}
	}
	worst := 0.0
	for i := 0; i < nc; i++ {
		for j := i; j < nc; j++ {
			g := dot(cols[i], cols[j])
			if i == j {
				g -= 1
			}
			worst = math.Max(worst, math.Abs(g))
		}
	}
	return worst
}

func spreadCols(s, n int) []int {
	if n >= s {
		cols := make([]int, s)
		for i := range cols {
			cols[i] = i
		}
		return cols
	}
	r := rand.New(rand.NewPCG(uint64(s), 11))
	cols := append([]int{0, 1, s - 1}, r.Perm(s)[:n-3]...)
	seen := map[int]bool{}
	out := cols[:0]
	for _, c := range cols {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

func TestOrthogonality(t *testing.T) {
	for _, tc := range []struct {
		family string
		s      int
		ncols  int // columns of A checked (all pairs among them)
	}{
		{"haar", 1, 1}, {"haar", 2, 2}, {"haar", 16, 16}, {"haar", 24, 24}, {"haar", 37, 37},
		{"haar", 2048, 384}, {"haar", 4096, 256},
		{"hd3", 2, 2}, {"hd3", 4, 4}, {"hd3", 8, 8}, {"hd3", 16, 16}, {"hd3", 32, 32},
		{"hd3", 2048, 2048}, {"hd3", 4096, 512},
	} {
		t.Run(fmt.Sprintf("%s/s=%d", tc.family, tc.s), func(t *testing.T) {
			if tc.family == "haar" && testing.Short() && (tc.s == 4096 || (tc.s >= 2048 && !useAsm)) {
				t.Skip("O(s^3) Haar QR at this size skipped in -short")
			}
			m := sample(t, NewWorkspace(0), tc.family, tc.s, 1)
			cols := spreadCols(tc.s, tc.ncols)
			err := gramErr(columnsOf(t, m, cols), tc.s, len(cols))
			t.Logf("||A^T A - I||_max over %d columns = %.3g", len(cols), err)
			if !(err < orthoTol) {
				t.Fatalf("orthogonality error %.3g > %g", err, orthoTol)
			}
		})
	}
}

func TestHD3RefusesBadSizes(t *testing.T) {
	for _, s := range []int{-4, 0, 1, 3, 24, 2040, 2049} {
		if _, err := NewHD3(s, newRNG(t, 0)); err == nil {
			t.Errorf("NewHD3(%d) accepted", s)
		}
	}
	for _, s := range []int{-1, 0, haarMaxSize + 1} {
		if _, err := NewHaar(s, newRNG(t, 0)); err == nil {
			t.Errorf("NewHaar(%d) accepted", s)
		}
	}
	if _, err := NewWorkspace(1).Sample("dct4", 16, newRNG(t, 0)); err == nil {
		t.Error("unknown family accepted")
	}
}

func randMatrix(seed uint64, s, d int) []float32 {
	r := rand.New(rand.NewPCG(seed, 99))
	x := make([]float32, s*d)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		family string
		s, d   int
	}{
		{"haar", 16, 1024}, {"haar", 24, 40}, {"haar", 13, 7}, {"haar", 2048, 72},
		{"hd3", 16, 1024}, {"hd3", 2, 5}, {"hd3", 8, 1}, {"hd3", 2048, 1000}, {"hd3", 4096, 24},
	} {
		t.Run(fmt.Sprintf("%s/s=%d/d=%d", tc.family, tc.s, tc.d), func(t *testing.T) {
			if tc.family == "haar" && tc.s >= 2048 && !useAsm && testing.Short() {
				t.Skip("large Haar without assembly skipped in -short")
			}
			m := sample(t, NewWorkspace(0), tc.family, tc.s, 2)
			x0 := randMatrix(1, tc.s, tc.d)
			x := append([]float32(nil), x0...)
			if err := m.Apply(x, tc.d); err != nil {
				t.Fatal(err)
			}
			moved := 0.0
			for i := range x {
				moved = math.Max(moved, math.Abs(float64(x[i]-x0[i])))
			}
			if tc.s > 1 && moved < 0.1 {
				t.Fatalf("Apply barely changed X (max change %g)", moved)
			}
			if err := m.Unapply(x, tc.d); err != nil {
				t.Fatal(err)
			}
			worst, scale := 0.0, 0.0
			for i := range x {
				worst = math.Max(worst, math.Abs(float64(x[i]-x0[i])))
				scale = math.Max(scale, math.Abs(float64(x0[i])))
			}
			t.Logf("max |A^T A X - X| / max|X| = %.3g", worst/scale)
			if worst > roundTripTol*scale {
				t.Fatalf("round trip error %.3g > %g", worst/scale, roundTripTol)
			}
		})
	}
}

// TestProtocolRoundTrip runs the whole TEE<->device exchange of the
// protocol: stack [H; S], mask, multiply by public W, unmask, strip.
func TestProtocolRoundTrip(t *testing.T) {
	const n, d, out = 21, 48, 33
	h := randMatrix(5, n, d)
	w := randMatrix(6, d, out)
	for _, fam := range []string{FamilyHaar, FamilyHD3} {
		k, err := ShieldRows(fam, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		s := n + k
		rng := newRNG(t, 42)
		x := make([]float32, s*d)
		copy(x, h)
		if err := FillShield(x[n*d:], k, d, h, n, DefaultEnergy, rng); err != nil {
			t.Fatal(err)
		}
		m, err := NewWorkspace(0).Sample(fam, s, rng)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Apply(x, d); err != nil {
			t.Fatal(err)
		}
		// Device: U W.
		uw := make([]float32, s*out)
		for i := 0; i < s; i++ {
			for j := 0; j < out; j++ {
				acc := 0.0
				for c := 0; c < d; c++ {
					acc += float64(x[i*d+c]) * float64(w[c*out+j])
				}
				uw[i*out+j] = float32(acc)
			}
		}
		if err := m.Unapply(uw, out); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := 0; i < n; i++ {
			for j := 0; j < out; j++ {
				acc := 0.0
				for c := 0; c < d; c++ {
					acc += float64(h[i*d+c]) * float64(w[c*out+j])
				}
				worst = math.Max(worst, math.Abs(float64(uw[i*out+j])-acc))
			}
		}
		t.Logf("%s: s=%d k=%d max |strip(A^T (A X) W) - H W| = %.3g", fam, s, k, worst)
		if worst > 1e-3 {
			t.Fatalf("%s: protocol round trip error %g", fam, worst)
		}
		m.Zeroise()
	}
}

func TestDeterministicMaterial(t *testing.T) {
	for _, fam := range []string{FamilyHaar, FamilyHD3} {
		const s = 64
		cols := spreadCols(s, s)
		a1 := columnsOf(t, sample(t, NewWorkspace(1), fam, s, 5), cols)
		a2 := columnsOf(t, sample(t, NewWorkspace(3), fam, s, 5), cols)
		if i := sameBits32(a1, a2); i >= 0 {
			t.Fatalf("%s: same key+pass gave different A at %d", fam, i)
		}
		a3 := columnsOf(t, sample(t, NewWorkspace(1), fam, s, 6), cols)
		diff := 0.0
		for i := range a1 {
			diff = math.Max(diff, math.Abs(float64(a1[i]-a3[i])))
		}
		if diff < 0.1 {
			t.Fatalf("%s: pass 5 and pass 6 masks nearly equal (max diff %g)", fam, diff)
		}
	}
}

// TestWorkerCountInvariance: sampling and Apply/Unapply give the same bits
// for any worker count and GOMAXPROCS. Shapes exercise the padded rows
// (s % 4 != 0), the 8-wide and Go column tails, and multi-block splits.
func TestWorkerCountInvariance(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		family string
		s, d   int
	}{
		{"haar", 301, 1003}, {"haar", 96, 600}, {"hd3", 512, 1003}, {"hd3", 2048, 200},
	} {
		var ref []float32
		for _, cfg := range []struct{ procs, workers int }{{1, 1}, {2, 2}, {4, 3}, {8, 7}, {2, 0}} {
			runtime.GOMAXPROCS(cfg.procs)
			m := sample(t, NewWorkspace(cfg.workers), tc.family, tc.s, 8)
			x := randMatrix(3, tc.s, tc.d)
			if err := m.Apply(x, tc.d); err != nil {
				t.Fatal(err)
			}
			y := randMatrix(4, tc.s, tc.d)
			if err := m.Unapply(y, tc.d); err != nil {
				t.Fatal(err)
			}
			got := append(x, y...)
			if ref == nil {
				ref = got
				continue
			}
			if i := sameBits32(ref, got); i >= 0 {
				t.Fatalf("%s s=%d d=%d: GOMAXPROCS=%d workers=%d differs at %d", tc.family, tc.s, tc.d, cfg.procs, cfg.workers, i)
			}
		}
	}
}

func TestNoAllocs(t *testing.T) {
	for _, tc := range []struct {
		family string
		s, d   int
	}{
		{"haar", 16, 1024}, {"haar", 256, 512}, {"hd3", 16, 1024}, {"hd3", 1024, 512},
	} {
		ws := NewWorkspace(2)
		rng := newRNG(t, 1)
		m, err := ws.Sample(tc.family, tc.s, rng)
		if err != nil {
			t.Fatal(err)
		}
		x := randMatrix(1, tc.s, tc.d)
		step := func() {
			_ = m.Apply(x, tc.d)
			_ = m.Unapply(x, tc.d)
		}
		step() // warm-up: sizes the per-shape scratch
		if a := testing.AllocsPerRun(10, step); a != 0 {
			t.Errorf("%s s=%d d=%d: Apply+Unapply allocates %v per run", tc.family, tc.s, tc.d, a)
		}
		resample := func() {
			if _, err := ws.Sample(tc.family, tc.s, rng); err != nil {
				t.Fatal(err)
			}
			step()
		}
		if a := testing.AllocsPerRun(3, resample); a != 0 {
			t.Errorf("%s s=%d d=%d: resampling in a warm workspace allocates %v per run", tc.family, tc.s, tc.d, a)
		}
	}
}

// TestMaskMixes is a statistical sanity check that masking hides rows: for
// a random stack X = [H; S] (n = 56 secret rows of width 256, shield at
// energy 4), no masked row U_i = (A X)_i is close to parallel to any
// secret row: max |cos(U_i, H_j)| < 0.5 over all pairs (typical values are
// ~0.1 for a dense orthogonal mix), and the mean |cos(U_i, H_i)| < 0.2.
func TestMaskMixes(t *testing.T) {
	const n, d = 56, 256
	h := randMatrix(7, n, d)
	for _, fam := range []string{FamilyHaar, FamilyHD3} {
		k, _ := ShieldRows(fam, n, 0)
		s := n + k
		rng := newRNG(t, 77)
		x := make([]float32, s*d)
		copy(x, h)
		if err := FillShield(x[n*d:], k, d, h, n, DefaultEnergy, rng); err != nil {
			t.Fatal(err)
		}
		m, err := NewWorkspace(1).Sample(fam, s, rng)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Apply(x, d); err != nil {
			t.Fatal(err)
		}
		cos := func(a, b []float32) float64 {
			var ab, aa, bb float64
			for i := range a {
				ab += float64(a[i]) * float64(b[i])
				aa += float64(a[i]) * float64(a[i])
				bb += float64(b[i]) * float64(b[i])
			}
			return ab / math.Sqrt(aa*bb)
		}
		worst, diag := 0.0, 0.0
		for i := 0; i < s; i++ {
			for j := 0; j < n; j++ {
				c := math.Abs(cos(x[i*d:(i+1)*d], h[j*d:(j+1)*d]))
				worst = math.Max(worst, c)
				if i == j {
					diag += c
				}
			}
		}
		diag /= n
		t.Logf("%s s=%d: max |cos(U_i, H_j)| = %.3f, mean |cos(U_i, H_i)| = %.3f", fam, s, worst, diag)
		if worst >= 0.5 || diag >= 0.2 {
			t.Fatalf("%s: mask does not mix (max %.3f, mean diag %.3f)", fam, worst, diag)
		}
	}
}

// TestHaarIsQROfGaussian checks that A is the sign-fixed Q factor of the
// Gaussian matrix drawn from the same stream: A^T G = diag(sign) R must be
// upper triangular with a positive diagonal.
func TestHaarIsQROfGaussian(t *testing.T) {
	for _, s := range []int{5, 40, 70} { // 70 spans three QR panels
		m := sample(t, NewWorkspace(2), FamilyHaar, s, 12)
		a := columnsOf(t, m, spreadCols(s, s)) // row-major A
		g := make([]float64, s*s)
		newRNG(t, 12).FillNormal64(g) // G[i][j] = g[j*s+i]
		for i := 0; i < s; i++ {
			for j := 0; j < s; j++ {
				r := 0.0
				for k := 0; k < s; k++ {
					r += float64(a[k*s+i]) * g[j*s+k]
				}
				if i > j && math.Abs(r) > 1e-4*math.Sqrt(float64(s)) {
					t.Fatalf("s=%d: (A^T G)[%d][%d] = %g, want 0", s, i, j, r)
				}
				if i == j && r <= 0 {
					t.Fatalf("s=%d: diag (A^T G)[%d] = %g, want > 0 (sign fix)", s, i, r)
				}
			}
		}
	}
}

func TestBadShapesAndZeroise(t *testing.T) {
	for _, fam := range []string{FamilyHaar, FamilyHD3} {
		m := sample(t, NewWorkspace(1), fam, 16, 1)
		x := randMatrix(1, 16, 8)
		if err := m.Apply(x[:16*8-1], 8); err == nil {
			t.Fatalf("%s: short x accepted", fam)
		}
		for _, v := range x[:16*8-1] {
			if v != 0 {
				t.Fatalf("%s: Apply left secret data in x after a shape error", fam)
			}
		}
		if err := m.Apply(x, 0); err == nil {
			t.Fatalf("%s: d = 0 accepted", fam)
		}
		y := randMatrix(2, 16, 8)
		y0 := append([]float32(nil), y...)
		if err := m.Unapply(y, 7); err == nil {
			t.Fatalf("%s: wrong d accepted", fam)
		}
		if sameBits32(y, y0) >= 0 {
			t.Fatalf("%s: Unapply modified y on a shape error", fam)
		}
		m.Zeroise()
		x = randMatrix(1, 16, 8)
		if err := m.Apply(x, 8); !errors.Is(err, ErrZeroised) {
			t.Fatalf("%s: Apply after Zeroise: %v", fam, err)
		}
		if err := m.Unapply(y, 8); !errors.Is(err, ErrZeroised) {
			t.Fatalf("%s: Unapply after Zeroise: %v", fam, err)
		}
		for _, v := range x {
			if v != 0 {
				t.Fatalf("%s: Apply after Zeroise left data in x", fam)
			}
		}
	}
	// Zeroise wipes the material itself.
	ws := NewWorkspace(1)
	h, _ := ws.Haar(16, newRNG(t, 1))
	d, _ := ws.HD3(16, newRNG(t, 1))
	x := randMatrix(1, 16, 4)
	_ = h.Apply(x, 4)
	_ = d.Apply(x, 4)
	ws.Zeroise()
	for _, buf := range [][]float32{h.pa, h.pt, h.ybuf, h.xbuf, d.store, d.slab} {
		for _, v := range buf[:cap(buf)] {
			if v != 0 {
				t.Fatal("mask material survived Zeroise")
			}
		}
	}
}
