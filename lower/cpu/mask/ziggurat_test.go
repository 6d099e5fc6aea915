package mask

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// zigSamples draws n normals with zigFill from a cc8 keyed by seed, in
// rows of 999 (odd, so the single-word tail path is exercised too).
func zigSamples(n int, seed byte) []float32 {
	var g cc8
	g.init(&[32]byte{seed, 1, 2, 3})
	x := make([]float32, n)
	for i := 0; i < n; i += 999 {
		zigFill(&g, x[i:min(i+999, n)])
	}
	return x
}

// TestZigguratTables checks the layer geometry computed at init: every
// layer has area v (the top cap, the rectangles, and the base strip
// r f(r) plus the tail integral), the fast path covers 98.5 % of
// candidates, and the signed half of the tables mirrors the first.
func TestZigguratTables(t *testing.T) {
	x := func(l int) float64 { return zigW[l] * zigScale }
	f := func(v float64) float64 { return math.Exp(-0.5 * v * v) }
	if x(zigLayers-1) != zigR {
		t.Fatalf("x_255 = %v, want r = %v", x(zigLayers-1), zigR)
	}
	if a := x(1) * (1 - zigF[1]); math.Abs(a-zigV) > 1e-12*zigV {
		t.Errorf("top cap area %v, want %v", a, zigV)
	}
	for l := 2; l < zigLayers; l++ {
		if a := x(l) * (zigF[l-1] - zigF[l]); math.Abs(a-zigV) > 1e-12*zigV {
			t.Fatalf("layer %d area %v, want %v", l, a, zigV)
		}
		if math.Abs(zigF[l]-f(x(l))) > 1e-15 {
			t.Fatalf("f(x_%d) = %v, want %v", l, zigF[l], f(x(l)))
		}
	}
	base := zigR*f(zigR) + math.Sqrt(math.Pi/2)*math.Erfc(zigR/math.Sqrt2)
	if math.Abs(base-zigV) > 1e-12*zigV {
		t.Errorf("base strip area %v, want %v", base, zigV)
	}
	if q := x(0); math.Abs(q*f(zigR)-zigV) > 1e-15 {
		t.Errorf("base width q = %v: q f(r) != v", q)
	}
	fast := 0.0
	for l := 0; l < zigLayers; l++ {
		fast += float64(zigK[l]) / zigScale / zigLayers
		if zigK[l|zigSign] != zigK[l] || zigW[l|zigSign] != -zigW[l] {
			t.Fatalf("signed tables differ at layer %d", l)
		}
	}
	if zigK[1] != 0 || fast < 0.984 || fast > 0.986 {
		t.Errorf("fast-path fraction %v (k_1 = %d)", fast, zigK[1])
	}
}

// TestZigguratNormal checks 10^6 samples against N(0, 1). Tolerances
// (deterministic seed; a correct sampler fails each with probability
// < 1e-5 for a random seed):
//   - mean, variance, skewness and excess kurtosis within 5 standard
//     errors (sqrt(1/n), sqrt(2/n), sqrt(6/n), sqrt(24/n));
//   - Kolmogorov-Smirnov D_n < 2.0/sqrt(n) (the 0.1 % critical value is
//     1.95/sqrt(n));
//   - chi-square over 1000 equiprobable bins (999 dof, mean 999,
//     sd 44.7) below 999 + 5 sd;
//   - tail beyond the base strip's rectangle, |x| > r (expected n*2.58e-4
//     = 258), within 5 sd, and the largest |x| in (4, 7).
func TestZigguratNormal(t *testing.T) {
	const n = 1_000_000
	x32 := zigSamples(n, 7)
	x := make([]float64, n)
	var s1, s2, s3, s4 float64
	tail := 0
	maxAbs := 0.0
	for i, v := range x32 {
		f := float64(v)
		x[i] = f
		s1 += f
		f2 := f * f
		s2 += f2
		s3 += f2 * f
		s4 += f2 * f2
		if math.Abs(f) > zigR {
			tail++
		}
		maxAbs = math.Max(maxAbs, math.Abs(f))
	}
	mean, vr := s1/n, s2/n
	skew, kurt := s3/n, s4/n-3
	t.Logf("mean %.2e var %.6f skew %.2e exkurt %.2e tail %d max|x| %.3f", mean, vr, skew, kurt, tail, maxAbs)
	check := func(name string, got, want, se float64) {
		if math.Abs(got-want) > 5*se {
			t.Errorf("%s = %v, want %v +- 5 x %v", name, got, want, se)
		}
	}
	check("mean", mean, 0, math.Sqrt(1.0/n))
	check("variance", vr, 1, math.Sqrt(2.0/n))
	check("skewness", skew, 0, math.Sqrt(6.0/n))
	check("excess kurtosis", kurt, 0, math.Sqrt(24.0/n))
	pTail := math.Erfc(zigR / math.Sqrt2)
	check("tail count", float64(tail), n*pTail, math.Sqrt(n*pTail))
	if maxAbs < 4 || maxAbs > 7 {
		t.Errorf("max |x| = %v", maxAbs)
	}

	phi := func(v float64) float64 { return 0.5 * math.Erfc(-v/math.Sqrt2) }
	slices.Sort(x)
	d := 0.0
	for i, v := range x {
		p := phi(v)
		d = math.Max(d, math.Max(p-float64(i)/n, float64(i+1)/n-p))
	}
	t.Logf("KS D = %.5f (limit %.5f)", d, 2.0/math.Sqrt(n))
	if d > 2.0/math.Sqrt(n) {
		t.Errorf("Kolmogorov-Smirnov D = %v", d)
	}

	const bins = 1000
	var cnt [bins]int
	for _, v := range x {
		cnt[min(int(phi(v)*bins), bins-1)]++
	}
	chi := 0.0
	for _, c := range cnt {
		e := float64(n) / bins
		chi += (float64(c) - e) * (float64(c) - e) / e
	}
	t.Logf("chi-square = %.1f (999 dof)", chi)
	if chi > 999+5*math.Sqrt(2*999) {
		t.Errorf("chi-square %v over %d bins", chi, bins)
	}
}

// TestZigguratPathsAgree checks that the AVX2 and rand.ChaCha8 paths of
// cc8 give the same samples (same stream and the same 64/60-word
// segments), and that zigFill is a pure function of the stream.
func TestZigguratPathsAgree(t *testing.T) {
	defer func(v bool) { useCC8Asm = v }(useCC8Asm)
	useCC8Asm = false
	ref := zigSamples(100_003, 3)
	if !useCC8AsmAvailable() {
		t.Skip("no AVX2 block function on this build")
	}
	useCC8Asm = true
	got := zigSamples(100_003, 3)
	if i := sameBits32(got, ref); i >= 0 {
		t.Fatalf("sample %d: asm %v, fallback %v", i, got[i], ref[i])
	}
}

// expRef is e^x to float64 rounding, from a 256-bit Taylor series of
// e^(x/1024) squared ten times. (math.Exp is not a reference: on amd64 it
// is a different, assembly algorithm that can differ from the portable
// one by more than an ulp.)
func expRef(x float64) float64 {
	const prec = 256
	y := new(big.Float).SetPrec(prec).SetFloat64(x / 1024)
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	for k := int64(1); k < 60; k++ {
		term.Mul(term, y)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(k))
		sum.Add(sum, term)
	}
	for i := 0; i < 10; i++ {
		sum.Mul(sum, sum)
	}
	f, _ := sum.Float64()
	return f
}

// TestZlogZexp checks the portable exp (against expRef) and log (against
// math.Log, which is the same algorithm) to 1 ulp over the ranges the
// sampler uses and beyond.
func TestZlogZexp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ulp := func(v float64) float64 { return math.Nextafter(v, math.Inf(1)) - v }
	for i := 0; i < 6000; i++ {
		var x float64
		switch i % 3 {
		case 0:
			x = -8 * r.Float64()
		case 1:
			x = 1400*r.Float64() - 700
		default:
			x = 1e-3*r.Float64() - 5e-4
		}
		if got, want := zexp(x), expRef(x); math.Abs(got-want) > ulp(want) {
			t.Fatalf("zexp(%v) = %v, want %v", x, got, want)
		}
	}
	for i := 0; i < 200000; i++ {
		y := r.Float64() + 0x1p-53
		if i%2 == 1 {
			y = math.Exp2(2000*r.Float64() - 1000)
		}
		if got, want := zlog(y), math.Log(y); math.Abs(got-want) > ulp(math.Abs(want)) {
			t.Fatalf("zlog(%v) = %v, math.Log %v", y, got, want)
		}
	}
	if zexp(0) != 1 || zlog(1) != 0 || zlog(0x1p-53) != -53*math.Ln2 {
		t.Fatal("zexp/zlog special values")
	}
}
