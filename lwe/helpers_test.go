package lwe

import (
	"math"
	"math/rand/v2"
	"testing"

	"gelo/keystream"
)

var testKey = []byte("gelo-test-lwe-session-key")

func testSeed(b byte) (s [SeedSize]byte) {
	for i := range s {
		s[i] = b + byte(i)
	}
	return s
}

// testStream is a keyed stream for the TEE's secret draws in tests.
func testStream(t testing.TB, tag byte) *keystream.Stream {
	t.Helper()
	var s keystream.Stream
	key := make([]byte, 32)
	key[0] = tag
	if err := s.Key(key, make([]byte, 12)); err != nil {
		t.Fatal(err)
	}
	return &s
}

// weightKind names a float weight matrix the tests build.
type weightKind string

const (
	wGauss   weightKind = "gaussian"   // N(0, 1): |w_j|_2 ~ 36 sqrt(d_in) after quantizing
	wMax     weightKind = "all-127"    // every weight at +-127: the largest norm there is
	wOutlier weightKind = "outlier"    // one huge weight per row: all others round to 0
	wMixed   weightKind = "mixed-rows" // one row of +127, the rest Gaussian, one zero row
	wZero    weightKind = "zero"       // all zero
)

func floatWeights(kind weightKind, out, in int, rng *rand.Rand) []float32 {
	w := make([]float32, out*in)
	for k := range w {
		j, i := k/in, k%in
		switch kind {
		case wGauss:
			w[k] = float32(rng.NormFloat64())
		case wMax:
			w[k] = float32(1 - 2*rng.IntN(2))
		case wOutlier:
			w[k] = float32(rng.NormFloat64() * 1e-3)
			if i == j%in {
				w[k] = 50
			}
		case wMixed:
			switch j {
			case 0:
				w[k] = 0.25
			case out - 1:
				w[k] = 0
			default:
				w[k] = float32(rng.NormFloat64())
			}
		case wZero:
		}
	}
	return w
}

func quantized(t testing.TB, kind weightKind, out, in int, seed uint64) *Weights {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	w, err := Quantize(floatWeights(kind, out, in, rng), out, in)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// scheme is one complete setup: A, the hints of ws, a pad generator and
// an encoder.
type scheme struct {
	p     Params
	a     *Public
	ws    []*Weights
	hints []*Hint
	gen   *PadGen
	enc   *Encoder
}

func newScheme(t testing.TB, p Params, ws ...*Weights) *scheme {
	t.Helper()
	a, err := NewPublic(testSeed(7), ws[0].In, p.Lambda)
	if err != nil {
		t.Fatal(err)
	}
	sc := &scheme{p: p, a: a, ws: ws}
	for _, w := range ws {
		h, err := ComputeHint(w, a, 2)
		if err != nil {
			t.Fatal(err)
		}
		sc.hints = append(sc.hints, h)
	}
	if sc.gen, err = NewPadGen(p, a, sc.hints, testKey, "test"); err != nil {
		t.Fatal(err)
	}
	if sc.enc, err = NewEncoder(p, ws...); err != nil {
		t.Fatal(err)
	}
	return sc
}

// secret regenerates the s and e of pad n: s as a dense int64 vector.
func (sc *scheme) secret(t testing.TB, n uint64) (s, e []int64) {
	t.Helper()
	ew := make([]uint32, sc.a.In)
	if err := sc.gen.draw(n, ew); err != nil {
		t.Fatal(err)
	}
	s = make([]int64, sc.p.Lambda)
	for k, c := range sc.gen.idx {
		s[c] = 1 - 2*int64(sc.gen.sgn[k]&1)
	}
	sc.gen.wipeSecret()
	e = make([]int64, len(ew))
	for i, v := range ew {
		e[i] = int64(int32(v))
	}
	return s, e
}

// rowKind names an activation row the tests feed.
type rowKind string

const (
	xGauss     rowKind = "gaussian"
	xAligned   rowKind = "aligned"   // x = w_j of the largest-norm row: Cauchy-Schwarz is tight
	xOutlier   rowKind = "outlier"   // one coordinate 1e38, the rest N(0, 1)
	xEqual     rowKind = "all-equal" // every coordinate 3.5
	xZero      rowKind = "zero"
	xTiny      rowKind = "subnormal" // every coordinate 1e-45 (float32's smallest)
	xMassive   rowKind = "massive"   // N(0, 1) times 1e30
	xAlternate rowKind = "alternate" // +-1e4 alternating
)

var allRows = []rowKind{xGauss, xAligned, xOutlier, xEqual, xZero, xTiny, xMassive, xAlternate}

func activation(kind rowKind, w *Weights, rng *rand.Rand) []float32 {
	x := make([]float32, w.In)
	jmax := 0
	for j, n := range w.Norm {
		if n > w.Norm[jmax] {
			jmax = j
		}
	}
	for i := range x {
		switch kind {
		case xGauss:
			x[i] = float32(rng.NormFloat64())
		case xAligned:
			x[i] = float32(w.Q[jmax*w.In+i]) * 0.01
		case xOutlier:
			x[i] = float32(rng.NormFloat64())
			if i == w.In/3 {
				x[i] = 1e38
			}
		case xEqual:
			x[i] = 3.5
		case xTiny:
			x[i] = math.SmallestNonzeroFloat32
		case xMassive:
			x[i] = float32(rng.NormFloat64() * 1e30)
		case xAlternate:
			x[i] = float32(1e4 * float64(1-2*(i%2)))
		}
	}
	return x
}

// columns returns the n columns col(0..n-1) (Public.Col and Hint.Col copy
// each one: a loop reading single words hoists them with this).
func columns(n int, col func(int) []uint32) [][]uint32 {
	out := make([][]uint32, n)
	for k := range out {
		out[k] = col(k)
	}
	return out
}
