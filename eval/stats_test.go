package eval

import (
	"math"
	"testing"
)

// TestHistogramQuantiles: a percentile is its exact value's bin's upper
// edge: at or above the exact order statistic, by at most 10^(1/100);
// values under the range (zero, rounding's tiny negatives) read as at
// most 10^-12, and nothing reads above the maximum.
func TestHistogramQuantiles(t *testing.T) {
	h := newHistogram()
	var maxV float64
	for i := 1; i <= 1000; i++ {
		v := float64(i) * 1e-6
		h.add(v)
		maxV = v
	}
	for _, tc := range []struct{ q, exact float64 }{
		{0.5, 500e-6}, {0.9, 900e-6}, {0.99, 990e-6}, {0.01, 10e-6}, {0.001, 1e-6},
	} {
		got := h.quantile(tc.q, maxV)
		if got < tc.exact || got > tc.exact*math.Pow(10, 1.0/binsPerDecade) {
			t.Errorf("q %v: %v, exact %v", tc.q, got, tc.exact)
		}
	}
	if got := h.quantile(1, maxV); got != maxV {
		t.Errorf("q 1: %v, max %v", got, maxV)
	}
	low := newHistogram()
	for _, v := range []float64{0, -1e-7, 1e-13, 5} {
		low.add(v)
	}
	if got := low.quantile(0.75, 5); got != 1e-12 {
		t.Errorf("under the range: %v, want 1e-12", got)
	}
	if got := low.quantile(1, 5); got != 5 {
		t.Errorf("max: %v, want 5", got)
	}
}
