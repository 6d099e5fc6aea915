package mask

import (
	"math"
	"testing"
)

func TestShieldRowsHD3(t *testing.T) {
	for _, minK := range []int{0, 8, 9, 16} {
		floor := minK
		if floor == 0 {
			floor = DefaultMinShield
		}
		for n := 1; n <= 300; n++ {
			k, err := ShieldRows(FamilyHD3, n, minK)
			if err != nil {
				t.Fatal(err)
			}
			s := n + k
			if k < floor || s&(s-1) != 0 {
				t.Fatalf("n=%d minK=%d: k=%d (s=%d) not a valid pow2 shield", n, minK, k, s)
			}
			// Minimal: the next smaller power of two cannot hold n + floor.
			if s/2 >= n+floor {
				t.Fatalf("n=%d minK=%d: k=%d not minimal", n, minK, k)
			}
		}
	}
	if k, _ := ShieldRows(FamilyHD3, 2040, 0); k != 8 {
		t.Fatalf("n=2040: k=%d, want 8", k)
	}
	if k, _ := ShieldRows(FamilyHD3, 2048, 0); k != 2048 {
		t.Fatalf("n=2048: k=%d, want 2048", k)
	}
	if k, _ := ShieldRows(FamilyHaar, 123, 0); k != 8 {
		t.Fatalf("haar: k=%d, want 8", k)
	}
	for _, bad := range []struct {
		fam     string
		n, minK int
	}{{"hd3", -1, 8}, {"hd3", 5, 4}, {"haar", 5, -1}, {"dct4", 5, 8}, {"hd3", maxStack, 8}} {
		if _, err := ShieldRows(bad.fam, bad.n, bad.minK); err == nil {
			t.Errorf("ShieldRows(%q, %d, %d) accepted", bad.fam, bad.n, bad.minK)
		}
	}
}

func TestFillShieldEnergy(t *testing.T) {
	const n, d, k = 10, 64, 8
	h := randMatrix(3, n, d)
	for i := 0; i < d; i++ { // uneven row norms
		h[2*d+i] *= 5
	}
	mean := 0.0
	for i := 0; i < n; i++ {
		mean += rowNorm(h[i*d : (i+1)*d])
	}
	mean /= n
	for _, energy := range []float64{DefaultEnergy, 0.5} {
		dst := make([]float32, k*d)
		if err := FillShield(dst, k, d, h, n, energy, newRNG(t, 1)); err != nil {
			t.Fatal(err)
		}
		for r := 0; r < k; r++ {
			got := rowNorm(dst[r*d : (r+1)*d])
			if math.Abs(got-energy*mean) > 1e-6*energy*mean {
				t.Fatalf("row %d norm %v, want %v", r, got, energy*mean)
			}
		}
		// Rows differ (fresh Gaussians), and the fill is deterministic.
		if rowNorm(dst[:d]) == 0 || dst[0] == dst[d] {
			t.Fatal("shield rows look degenerate")
		}
		again := make([]float32, k*d)
		_ = FillShield(again, k, d, h, n, energy, newRNG(t, 1))
		if sameBits32(dst, again) >= 0 {
			t.Fatal("shield fill not deterministic")
		}
	}
	// All-zero data rows (and n = 0): rows get norm energy * 1.
	zero := make([]float32, n*d)
	dst := make([]float32, k*d)
	for _, nn := range []int{n, 0} {
		if err := FillShield(dst, k, d, zero, nn, 4, newRNG(t, 2)); err != nil {
			t.Fatal(err)
		}
		if got := rowNorm(dst[:d]); math.Abs(got-4) > 1e-5 {
			t.Fatalf("zero data (n=%d): row norm %v, want 4", nn, got)
		}
	}
}

func TestFillShieldErrors(t *testing.T) {
	h := randMatrix(1, 4, 8)
	dst := make([]float32, 8*8)
	rng := newRNG(t, 1)
	nan := float32(math.NaN())
	bad := []struct {
		name   string
		dst    []float32
		k, d   int
		data   []float32
		n      int
		energy float64
		rng    *RNG
	}{
		{"short dst", dst[:10], 8, 8, h, 4, 4, rng},
		{"short data", dst, 8, 8, h[:5], 4, 4, rng},
		{"d=0", dst, 8, 0, h, 4, 4, rng},
		{"k<0", dst, -1, 8, h, 4, 4, rng},
		{"energy 0", dst, 8, 8, h, 4, 0, rng},
		{"energy NaN", dst, 8, 8, h, 4, math.NaN(), rng},
		{"energy Inf", dst, 8, 8, h, 4, math.Inf(1), rng},
		{"nil rng", dst, 8, 8, h, 4, 4, nil},
		{"NaN data", dst, 8, 8, []float32{nan, 0, 0, 0, 0, 0, 0, 0}, 1, 4, rng},
	}
	for _, b := range bad {
		if err := FillShield(b.dst, b.k, b.d, b.data, b.n, b.energy, b.rng); err == nil {
			t.Errorf("%s: accepted", b.name)
		}
	}
}
