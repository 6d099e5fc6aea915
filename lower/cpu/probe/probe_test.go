package probe_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gelo/device/wire"
	"gelo/lower/cpu"
	"gelo/lower/cpu/kernels"
	"gelo/lower/cpu/probe"
)

// product is one crossing computed by the local device: the payload, the
// weight as the device multiplies it, and the device's result.
type product struct {
	out, in, m int
	u, y       []float32
	row        probe.RowFunc
	w          []float32 // dequantized rows (what the pool reads)
}

// honest multiplies m random rows by a random [out, in] weight on the
// local device in the given format (f32, bf16, q8_0 or q4_0, the last two
// with q8_0 payloads, as a quantized plan sends them).
func honest(t testing.TB, format string, out, in, m int, seed uint64) *product {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	w := make([]float32, out*in)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.05)
	}
	u := make([]float32, m*in)
	for i := range u {
		u[i] = float32(r.NormFloat64() * 3)
	}
	ctx := kernels.NewCtx(2)
	defer ctx.Close()
	dev := cpu.NewLocalDevice(ctx)
	p := &product{out: out, in: in, m: m, y: make([]float32, m*out), w: w, u: u}
	switch format {
	case "f32":
		if err := dev.Upload("w", w, out, in); err != nil {
			t.Fatal(err)
		}
		if err := dev.MatMul("matmul", "w", u, m, p.y); err != nil {
			t.Fatal(err)
		}
	case "bf16":
		h := make([]uint16, len(w))
		for i, v := range w {
			h[i] = uint16(math.Float32bits(v) >> 16)
			w[i] = math.Float32frombits(uint32(h[i]) << 16)
		}
		if err := dev.UploadBF16("w", h, out, in); err != nil {
			t.Fatal(err)
		}
		if err := dev.MatMul("matmul", "w", u, m, p.y); err != nil {
			t.Fatal(err)
		}
	case "q8_0", "q4_0":
		f := wire.Q8_0
		if format == "q4_0" {
			f = wire.Q4_0
		}
		qm, err := wire.Quantize(f, w, out, in)
		if err != nil {
			t.Fatal(err)
		}
		if err := qm.Dequantize(w); err != nil {
			t.Fatal(err)
		}
		if err := dev.UploadQ("w", qm); err != nil {
			t.Fatal(err)
		}
		a := wire.NewActivations(m, in)
		if err := a.Quantize(u, m, in); err != nil {
			t.Fatal(err)
		}
		if err := dev.MatMulQ("matmul", "w", a, p.y); err != nil {
			t.Fatal(err)
		}
		if err := a.Dequantize(u); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("format %q", format)
	}
	p.row = func(j int, _ []float32) ([]float32, error) { return w[j*in : (j+1)*in], nil }
	return p
}

func (p *product) pool(t testing.TB, key string, size int) *probe.Pool {
	t.Helper()
	pl, err := probe.NewPool([]byte(key), "w", size, p.out, p.in, p.row, 2)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// exact is row i of the product in float64 from the operands.
func (p *product) exact(i int) []float64 {
	e := make([]float64, p.out)
	for j := range p.out {
		s := 0.0
		for k := range p.in {
			s += float64(p.u[i*p.in+k]) * float64(p.w[j*p.in+k])
		}
		e[j] = s
	}
	return e
}

// Honest products never fail, in any weight format, at the widths of the
// 0.6B model's crossings; the statistic stays far below its bound (the
// calibration the README quotes).
func TestHonestProductsPass(t *testing.T) {
	shapes := [][2]int{{4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072}}
	if testing.Short() {
		shapes = shapes[:1]
	}
	for _, format := range []string{"f32", "bf16", "q8_0", "q4_0"} {
		worst := 0.0
		for si, sh := range shapes {
			p := honest(t, format, sh[0], sh[1], 9, uint64(si+1))
			pl := p.pool(t, "honest-"+format, 8)
			var sc probe.Scratch
			w := pl.Check(p.y, p.u, p.m, []int{0, 1, 2, 3, 4, 5, 6, 7}, &sc)
			if !(w <= 1) {
				t.Fatalf("%s [%d x %d]: honest product fails, statistic %.3g x its tolerance", format, sh[0], sh[1], w)
			}
			worst = max(worst, w)
			if format == "f32" {
				row := p.y[:p.out]
				t.Logf("[%d x %d]: tol / |y_0|_2 = %.2e", sh[0], sh[1], pl.Tol(p.u[:p.in], row)/math.Sqrt(sumSq(row)))
			}
		}
		t.Logf("%s: largest honest statistic %.2e of its tolerance", format, worst)
	}
}

// The assembly and portable kernels agree to float64 rounding.
func TestKernelsAgree(t *testing.T) {
	p := honest(t, "f32", 63, 1000, 3, 9) // 63 rows: the pool's 4-row kernel and its tail
	pl := p.pool(t, "k", 2)
	if got := pl.Tol(p.u[:p.in], p.y[:p.out]); !(got > 0) {
		t.Fatalf("tolerance %v", got)
	}
	var sc probe.Scratch
	y := append([]float32(nil), p.y...)
	y[5] += 1e-3 // a statistic well above rounding, so the two can be compared
	a := pl.Check(y, p.u, p.m, []int{0, 1}, &sc)
	defer probe.SetAsm(probe.SetAsm(false))
	b := pl.Check(y, p.u, p.m, []int{0, 1}, &sc)
	c := p.pool(t, "k", 2).Check(y, p.u, p.m, []int{0, 1}, &sc) // pool built by the portable kernels
	if math.Abs(a-b) > 1e-6*a || math.Abs(a-c) > 1e-6*a {
		t.Fatalf("statistic: asm %v, portable check %v, portable pool %v", a, b, c)
	}
}

// Measured pass rates of a row deviation D at multiples of the
// tolerance, over fresh pools (new session keys), against Bound. A rate
// above the bound beyond sampling error fails.
func TestPassRateWithinBound(t *testing.T) {
	p := honest(t, "f32", 256, 512, 1, 3)
	trials := 300
	if testing.Short() {
		trials = 100
	}
	pl0 := p.pool(t, "tol", 1)
	tol := pl0.Tol(p.u, p.y)
	exact := p.exact(0)
	r := rand.New(rand.NewPCG(5, 5))
	for _, tc := range []struct {
		name   string
		shape  func(d []float64)
		scales []float64
	}{
		{"one element", func(d []float64) { d[17] = 1 }, []float64{0.5, 1.5, 3, 10, 100}},
		{"dense noise", func(d []float64) {
			for j := range d {
				d[j] = r.NormFloat64()
			}
		}, []float64{0.01, 1, 3, 10, 100}},
	} {
		for _, scale := range tc.scales {
			d := make([]float64, p.out)
			tc.shape(d)
			l2 := 0.0
			for _, v := range d {
				l2 += v * v
			}
			f := scale * tol / math.Sqrt(l2)
			y := make([]float32, p.out)
			dev := make([]float64, p.out)
			for j := range y {
				y[j] = float32(exact[j] + f*d[j])
				dev[j] = float64(y[j]) - exact[j] // what the device really returns
			}
			for _, k := range []int{1, 2} {
				pass := 0
				for tr := range trials {
					pl := p.pool(t, fmt.Sprintf("trial-%d", tr), k)
					var sc probe.Scratch
					idx := make([]int, k)
					for i := range idx {
						idx[i] = i
					}
					if pl.Check(y, p.u, 1, idx, &sc) <= 1 {
						pass++
					}
				}
				rate := float64(pass) / float64(trials)
				bound := probe.Bound(dev, tol, k)
				slack := 3*math.Sqrt(bound*(1-bound)/float64(trials)) + 1.0/float64(trials)
				t.Logf("%s at |D|_2 = %g tol, K = %d: passed %d of %d (%.3f), bound %.3g", tc.name, scale, k, pass, trials, rate, bound)
				if rate > bound+slack {
					t.Errorf("%s at %g tol, K = %d: pass rate %.3f above the bound %.3g", tc.name, scale, k, rate, bound)
				}
			}
		}
	}
}

// A NaN, an infinity or a zeroed row fails; the draws are distinct and
// cover the pool.
func TestNonFiniteAndPicks(t *testing.T) {
	p := honest(t, "f32", 256, 256, 2, 4)
	pl := p.pool(t, "nf", 4)
	var sc probe.Scratch
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		y := append([]float32(nil), p.y...)
		y[3] = v
		if w := pl.Check(y, p.u, 2, []int{0}, &sc); w <= 1 {
			t.Errorf("y[3] = %v passes (statistic %v)", v, w)
		}
	}
	y := append([]float32(nil), p.y...)
	clear(y[256:])
	if w := pl.Check(y, p.u, 2, []int{0}, &sc); w <= 1 {
		t.Errorf("a zeroed row passes (statistic %v)", w)
	}
	var pk probe.Picker
	seen := map[int]int{}
	for pass := range uint64(200) {
		if err := pk.Begin([]byte("key-key-key-key-"), pass); err != nil {
			t.Fatal(err)
		}
		idx := pk.Pick(3, 8)
		if idx[0] == idx[1] || idx[0] == idx[2] || idx[1] == idx[2] {
			t.Fatalf("pass %d: repeated index in %v", pass, idx)
		}
		for _, i := range idx {
			seen[i]++
		}
	}
	for i := range 8 {
		if seen[i] < 40 { // 75 expected of 600 draws
			t.Errorf("index %d drawn %d times of 600", i, seen[i])
		}
	}
}

// An adaptive liar tunes its error from the outcomes: it grows its lie
// after each accept and halves it after each reject (a reject ends the
// session: a new key, so a new pool). It learns the tolerance's scale,
// nothing more: the lies it gets past stay within a few tolerances, where
// Bound says they pass, and none of the large ones does.
func TestAdaptiveLiar(t *testing.T) {
	p := honest(t, "f32", 256, 256, 1, 8)
	exact := p.exact(0)
	const k, rounds = 2, 300
	r := rand.New(rand.NewPCG(9, 9))
	pl := p.pool(t, "adaptive-0", 8)
	tol := pl.Tol(p.u, p.y)
	var pk probe.Picker
	scale, session, accepted, largest, bigAccepted := 1000.0, 0, 0, 0.0, 0
	for round := range rounds {
		d := make([]float64, p.out)
		n := 0.0
		for j := range d {
			d[j] = r.NormFloat64()
			n += d[j] * d[j]
		}
		y := make([]float32, p.out)
		for j := range y {
			y[j] = float32(exact[j] + scale*tol*d[j]/math.Sqrt(n))
		}
		if err := pk.Begin([]byte(fmt.Sprintf("adaptive-key-%d", session)), uint64(round)); err != nil {
			t.Fatal(err)
		}
		var sc probe.Scratch
		if pl.Check(y, p.u, 1, pk.Pick(k, pl.Size()), &sc) <= 1 {
			accepted++
			largest = max(largest, scale)
			if scale >= 30 {
				bigAccepted++
			}
			scale *= 1.5
			continue
		}
		session++
		pl = p.pool(t, fmt.Sprintf("adaptive-%d", session), 8)
		scale = max(scale/2, 0.1)
	}
	t.Logf("adaptive liar, K = %d: %d of %d lies accepted over %d sessions; largest accepted |D|_2 = %.1f tol (bound at 30 tol: %.1e per lie)",
		k, accepted, rounds, session+1, largest, math.Pow(math.Sqrt2/30, k))
	if bigAccepted > 2 {
		t.Errorf("%d lies of 30 tol or more accepted (bound: %.1e each)", bigAccepted, math.Pow(math.Sqrt2/30, k))
	}
}

// BenchmarkCheck times one crossing's check at the 0.6B model's widths
// (9 rows: a decode step's row and its 8 shield rows), K = 2.
func BenchmarkCheck(b *testing.B) {
	for _, sh := range [][2]int{{4096, 1024}, {1024, 3072}, {151936, 1024}} {
		b.Run(fmt.Sprintf("%dx%d", sh[0], sh[1]), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			w := make([]float32, sh[0]*sh[1])
			for i := range w {
				w[i] = float32(r.NormFloat64())
			}
			row := func(j int, _ []float32) ([]float32, error) { return w[j*sh[1] : (j+1)*sh[1]], nil }
			t0 := time.Now()
			pl, err := probe.NewPool([]byte("bench-key-bench-"), "w", 8, sh[0], sh[1], row, 2)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("pool of 8 built in %v", time.Since(t0))
			u := make([]float32, 9*sh[1])
			y := make([]float32, 9*sh[0])
			var sc probe.Scratch
			b.ResetTimer()
			for range b.N {
				pl.Check(y, u, 9, []int{1, 5}, &sc)
			}
		})
	}
}

func sumSq(a []float32) float64 {
	s := 0.0
	for _, v := range a {
		s += float64(v) * float64(v)
	}
	return s
}

// A many-row check (split over the workers) gives the largest statistic
// of its rows checked a few at a time, and catches a lie in any row.
func TestSplitCheck(t *testing.T) {
	p := honest(t, "f32", 128, 256, 40, 11)
	pl := p.pool(t, "split", 4)
	idx := []int{0, 3}
	var sc probe.Scratch
	y := append([]float32(nil), p.y...)
	y[37*p.out+5] += 0.5 // a lie in row 37
	all := pl.Check(y, p.u, p.m, idx, &sc)
	want := 0.0
	for i0 := 0; i0 < p.m; i0 += 8 {
		want = max(want, pl.Check(y[i0*p.out:(i0+8)*p.out], p.u[i0*p.in:(i0+8)*p.in], 8, idx, &sc))
	}
	if all != want || all <= 1 {
		t.Fatalf("split check %v, rows 8 at a time %v (the lie must fail)", all, want)
	}
}
