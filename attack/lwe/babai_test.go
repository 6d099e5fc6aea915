package lwe

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

// TestBabaiApprox bounds the error of lnBabaiProb's closed form: per factor,
// erf(sqrt(a t)) against the exact 1 - I_{1-t}((k-1)/2, 1/2) the estimator
// uses, a = (k-1)/2, over the ranks and ratios t = ||b*_i||^2/(4||e||^2)
// that occur. The relative error of a factor is about 0.25/k (the test
// allows 2/k), so the at most k factors move ln P by about 0.25 (under
// 0.4 bit of cost) and less where most factors are 1.
func TestBabaiApprox(t *testing.T) {
	for _, k := range []int{100, 400, 1000, 3000} {
		a := float64(k-1) / 2
		for _, x := range []float64{1e-4, 1e-2, 0.1, 0.5, 1, 2, 5, 10} {
			tt := x / a
			exact := 1 - mathext.RegIncBeta(a, 0.5, 1-tt)
			approx := math.Erf(math.Sqrt(x))
			if rel := math.Abs(approx-exact) / exact; rel > 2/float64(k) {
				t.Errorf("k %d, a t = %g: approx %.6g, exact %.6g, relative error %.2g > 2/k", k, x, approx, exact, rel)
			}
		}
	}
}
