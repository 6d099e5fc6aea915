package mask

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestWhitenOrthonormal: for short and tall H (n < d, n = d, n > d), rows
// of very different norms and a rank-deficient H, X = [H/alpha; S; 0] has
// X^T X = I to float32 rounding, alpha is a power of two, and the data
// rows are H / alpha exactly.
func TestWhitenOrthonormal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name    string
		n, d, s int
		fill    func(i, j int) float64
	}{
		{"decode row", 1, 64, 128, func(i, j int) float64 { return r.NormFloat64() * 30 }},
		{"short", 7, 48, 55, func(i, j int) float64 { return r.NormFloat64() }},
		{"square", 32, 32, 64, func(i, j int) float64 { return r.NormFloat64() * 1e-3 }},
		{"tall", 90, 24, 128, func(i, j int) float64 { return r.NormFloat64() * float64(1+i%5*100) }},
		{"rank one", 6, 16, 22, func(i, j int) float64 { return float64(i+1) * float64(j%3) }},
		{"zero", 3, 8, 11, func(i, j int) float64 { return 0 }},
	} {
		h := make([]float32, c.n*c.d)
		for i := 0; i < c.n; i++ {
			for j := 0; j < c.d; j++ {
				h[i*c.d+j] = float32(c.fill(i, j))
			}
		}
		x := make([]float32, c.s*c.d)
		alpha, err := Whiten(x, h, c.n, c.d, c.s)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if fr, exp := math.Frexp(float64(alpha)); fr != 0.5 {
			t.Errorf("%s: alpha %v is not a power of two (2^%d x %v)", c.name, alpha, exp, fr)
		}
		for i := range h {
			if x[i]*alpha != h[i] {
				t.Fatalf("%s: data element %d: %v x alpha != %v", c.name, i, x[i], h[i])
			}
		}
		worst := 0.0
		for a := 0; a < c.d; a++ {
			for b := a; b < c.d; b++ {
				var g float64
				for i := 0; i < c.s; i++ {
					g += float64(x[i*c.d+a]) * float64(x[i*c.d+b])
				}
				if a == b {
					g--
				}
				worst = math.Max(worst, math.Abs(g))
			}
		}
		if worst > 1e-5 {
			t.Errorf("%s: max |X^T X - I| = %.3g, want rounding (< 1e-5)", c.name, worst)
		}
	}
}

func TestWhitenRefuses(t *testing.T) {
	x := make([]float32, 10*4)
	if _, err := Whiten(x, make([]float32, 8), 2, 4, 5); err == nil {
		t.Error("s < n + d accepted")
	}
	h := []float32{1, float32(math.NaN()), 0, 0}
	if _, err := Whiten(make([]float32, 5*4), h, 1, 4, 5); err == nil {
		t.Error("NaN row accepted")
	}
}
