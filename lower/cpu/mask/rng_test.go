package mask

import (
	"math"
	"testing"

	"gelo/keystream"
)

var testKey = []byte("gelo-test-session-key")

func TestRNGKnownAnswer(t *testing.T) {
	// Independent reference (Python: hmac/hashlib HKDF-SHA256 + RFC 8439
	// ChaCha20 block function), key "gelo-test-session-key", pass 7.
	r, err := NewPassRNG(testKey, 7)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{0x118d01afa974c85e, 0xebbf7b51e5eb1853, 0x9ad2e930d226e0e0, 0x36b48295decb2987}
	for i, w := range want {
		if got := r.Uint64(); got != w {
			t.Fatalf("word %d = %#x, want %#x", i, got, w)
		}
	}
}

func TestRNGNormalKnownAnswer(t *testing.T) {
	// Same independent reference: Marsaglia polar on (w>>11)*2^-53 words.
	r, _ := NewPassRNG(testKey, 7)
	want := []float64{0.48344960332007936, -1.321001812881014, -0.689875813640843,
		-0.06394265066904198, -0.546243185725145, 1.2553608681620319}
	for i, w := range want {
		if got := r.Normal(); math.Abs(got-w) > 1e-15*math.Max(1, math.Abs(w)) {
			t.Fatalf("Normal #%d = %.17g, want %.17g", i, got, w)
		}
	}
}

func TestRNGSameAndDifferentPass(t *testing.T) {
	a, _ := NewPassRNG(testKey, 3)
	b, _ := NewPassRNG(testKey, 3)
	c, _ := NewPassRNG(testKey, 4)
	d, _ := NewPassRNG([]byte("other key"), 3)
	same, diffPass, diffKey := true, 0, 0
	for i := 0; i < 2000; i++ { // crosses several refills
		x, y, z, w := a.Uint64(), b.Uint64(), c.Uint64(), d.Uint64()
		same = same && x == y
		if x != z {
			diffPass++
		}
		if x != w {
			diffKey++
		}
	}
	if !same {
		t.Fatal("same key+pass gave different streams")
	}
	if diffPass < 1990 || diffKey < 1990 {
		t.Fatalf("streams not independent: differing words pass=%d key=%d of 2000", diffPass, diffKey)
	}
}

func TestRNGDistributions(t *testing.T) {
	r, _ := NewPassRNG(testKey, 1)
	const n = 200000
	var sum, sum2, fsum float64
	plus := 0
	for i := 0; i < n; i++ {
		f := r.Float64()
		if f < 0 || f >= 1 {
			t.Fatalf("Float64 out of range: %v", f)
		}
		fsum += f
		g := r.Normal()
		sum += g
		sum2 += g * g
		if r.Sign() > 0 {
			plus++
		}
	}
	// 5-sigma bounds.
	if m := fsum / n; math.Abs(m-0.5) > 5*math.Sqrt(1.0/12/n) {
		t.Errorf("uniform mean %v", m)
	}
	if m := sum / n; math.Abs(m) > 5/math.Sqrt(n) {
		t.Errorf("normal mean %v", m)
	}
	if v := sum2 / n; math.Abs(v-1) > 5*math.Sqrt(2.0/n) {
		t.Errorf("normal variance %v", v)
	}
	if math.Abs(float64(plus)-n/2) > 5*math.Sqrt(n/4.0) {
		t.Errorf("signs: %d of %d positive", plus, n)
	}
}

func TestRNGFillMatchesScalar(t *testing.T) {
	a, _ := NewPassRNG(testKey, 9)
	b, _ := NewPassRNG(testKey, 9)
	a.Normal() // leave a spare cached
	b.Normal()
	buf := make([]float32, 101)
	a.FillNormal(buf)
	for i, v := range buf {
		if w := float32(b.Normal()); v != w {
			t.Fatalf("FillNormal[%d] = %v, Normal = %v", i, v, w)
		}
	}
	buf64 := make([]float64, 33)
	a.FillNormal64(buf64)
	for i, v := range buf64 {
		if w := b.Normal(); v != w {
			t.Fatalf("FillNormal64[%d] = %v, Normal = %v", i, v, w)
		}
	}
}

func TestRNGZeroiseAndErrors(t *testing.T) {
	if _, err := NewPassRNG(nil, 0); err == nil {
		t.Fatal("empty key accepted")
	}
	r, _ := NewPassRNG(testKey, 0)
	r.Uint64()
	r.Normal()
	r.Zeroise()
	if r.Live() {
		t.Fatal("live after Zeroise")
	}
	if r.ks != (keystream.Stream{}) {
		t.Fatal("cipher state or keystream buffer not wiped")
	}
	if r.Uint64() != 0 || r.Normal() != 0 {
		t.Fatal("zeroised RNG produced material")
	}
	if _, err := NewHD3(16, r); err == nil {
		t.Fatal("NewHD3 accepted a zeroised RNG")
	}
	if _, err := NewHaar(16, r); err == nil {
		t.Fatal("NewHaar accepted a zeroised RNG")
	}
	if _, err := NewHaar(16, nil); err == nil {
		t.Fatal("NewHaar accepted a nil RNG")
	}
	if err := r.Reset(testKey, 0); err != nil || !r.Live() {
		t.Fatal("Reset did not rekey")
	}
	fresh, _ := NewPassRNG(testKey, 0)
	if r.Uint64() != fresh.Uint64() {
		t.Fatal("Reset stream differs from NewPassRNG")
	}
}
