package rowspace

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestWHTInvolution(t *testing.T) {
	rng := NewRand(12)
	x := Gaussian(16, 3, rng)
	y := mat.DenseCopyOf(x)
	WHT(y)
	// Against the explicit Sylvester matrix.
	h := mat.NewDense(16, 16, nil)
	for i := 0; i < 16; i++ {
		for j := 0; j < 16; j++ {
			v := 0.25
			if popcount(i&j)%2 == 1 {
				v = -0.25
			}
			h.Set(i, j, v)
		}
	}
	var want mat.Dense
	want.Mul(h, x)
	want.Sub(&want, y)
	if e := mat.Norm(&want, 2); e > 1e-12 {
		t.Fatalf("WHT differs from H x by %.2g", e)
	}
	WHT(y)
	y.Sub(y, x)
	if e := mat.Norm(y, 2); e > 1e-12 {
		t.Fatalf("H H x != x (%.2g)", e)
	}
	if err := WHT(mat.NewDense(12, 2, nil)); err == nil {
		t.Fatal("non power of two accepted")
	}
}

func popcount(x int) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

func TestHD3Distinguisher(t *testing.T) {
	rng := NewRand(13)
	for _, tc := range []struct{ s, d int }{{16, 32}, {32, 64}, {64, 96}} {
		X := Gaussian(tc.s, tc.d, rng)
		U, err := HD3Apply(RandomSigns(tc.s, rng), RandomSigns(tc.s, rng), RandomSigns(tc.s, rng), X)
		if err != nil {
			t.Fatal(err)
		}
		opts := HD3Options{Seed: uint64(tc.s)}
		v, err := HD3Distinguish(U, X, opts)
		if err != nil {
			t.Fatal(err)
		}
		// Must fail to fit: the hypothesis is wrong (X' independent of X).
		wrong, err := HD3Fit(U, Gaussian(tc.s, tc.d, rng), opts)
		if err != nil {
			t.Fatal(err)
		}
		dsH, err := DyadicScore(U, X)
		if err != nil {
			t.Fatal(err)
		}
		dsA, err := DyadicScore(Mix(Haar(tc.s, rng), X), X)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("HD3 s=%d d=%d: fit residual HD3 %.3g vs Haar %.3f (structured %v); wrong hypothesis %.3f; dyadic score HD3 %.2g vs Haar %.3f",
			tc.s, tc.d, v.Observed, v.Haar, v.Structured, wrong.Residual, dsH, dsA)
		if !v.Structured || v.Observed > 1e-6 {
			t.Fatalf("s=%d: the true HD3 hypothesis did not fit (%.3g)", tc.s, v.Observed)
		}
		if v.Haar < 0.5 || wrong.Residual < 0.5 {
			t.Fatalf("s=%d: a Haar mask or a wrong hypothesis fit (%.3f, %.3f)", tc.s, v.Haar, wrong.Residual)
		}
		if dsH > 1e-6 || dsA < 0.3 {
			t.Fatalf("s=%d: dyadic score %.3g (HD3) / %.3f (Haar)", tc.s, dsH, dsA)
		}
	}
}
