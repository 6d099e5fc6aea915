package eval

import (
	"math"
)

// Estimate is a mean with its standard error.
type Estimate struct {
	Value, Err float64
}

// moments accumulates a mean and the sum of squared deviations by
// Welford's update. The standard error of the mean is the one llama.cpp's
// perplexity tool reports: sqrt(var / (n - 1)), var the population
// variance (it computes var as sum2/n - mean^2 from running sums; Welford's
// update is the same estimator without that formula's cancellation, which
// makes a constant sequence's error 0 instead of rounding noise). It is
// the usual standard error of a mean of n independent draws; tokens are
// not independent, so like llama.cpp's it understates the uncertainty
// somewhat.
type moments struct {
	n       int64
	avg, ss float64
}

func (m *moments) add(x float64) {
	m.n++
	d := x - m.avg
	m.avg += d / float64(m.n)
	m.ss += d * (x - m.avg)
}

// mean returns the mean and its standard error (0 with fewer than two
// values).
func (m moments) mean() Estimate {
	if m.n < 2 {
		return Estimate{Value: m.avg}
	}
	return Estimate{Value: m.avg, Err: math.Sqrt(m.ss / float64(m.n) / float64(m.n-1))}
}

// comoment accumulates the co-moment of two sequences (Welford's update
// for a covariance), for the error of a difference of their means.
type comoment struct {
	n      int64
	ma, mb float64
	c      float64
}

func (m *comoment) add(a, b float64) {
	m.n++
	da := a - m.ma
	m.ma += da / float64(m.n)
	m.mb += (b - m.mb) / float64(m.n)
	m.c += da * (b - m.mb)
}

// meanCov is the covariance of the two means: the population covariance
// over n - 1, as llama.cpp computes it.
func (m comoment) meanCov() float64 {
	if m.n < 2 {
		return 0
	}
	return m.c / float64(m.n) / float64(m.n-1)
}

// expOf turns a mean log into its exponential with the error propagated
// to first order (d exp(x) = exp(x) dx), as llama.cpp reports PPL.
func expOf(e Estimate) Estimate {
	v := math.Exp(e.Value)
	return Estimate{Value: v, Err: v * e.Err}
}

// histogram keeps KL values in logarithmic bins, so percentiles take
// bounded memory whatever the text's length: binsPerDecade bins a decade
// from 10^histLo to 10^histHi, one bin below (every value under 10^histLo,
// zero and the tiny negatives rounding gives included) and one above. A
// percentile is reported as its bin's upper edge: at most a factor
// 10^(1/binsPerDecade) (2.3 %) above the exact value.
type histogram struct {
	bins []int64
	n    int64
}

const (
	binsPerDecade = 100
	histLo        = -12
	histHi        = 4
)

func newHistogram() *histogram {
	return &histogram{bins: make([]int64, (histHi-histLo)*binsPerDecade+2)}
}

func (h *histogram) bin(x float64) int {
	if !(x >= math.Pow(10, histLo)) {
		return 0
	}
	i := 1 + int(math.Floor((math.Log10(x)-histLo)*binsPerDecade))
	return min(max(i, 1), len(h.bins)-1)
}

func (h *histogram) add(x float64) {
	h.bins[h.bin(x)]++
	h.n++
}

// upper is bin i's upper edge (10^histLo for the bin below the range,
// +Inf above).
func (h *histogram) upper(i int) float64 {
	switch {
	case i == 0:
		return math.Pow(10, histLo)
	case i == len(h.bins)-1:
		return math.Inf(1)
	}
	return math.Pow(10, histLo+float64(i)/binsPerDecade)
}

// quantile returns the upper edge of the bin that holds the q-th
// quantile (q in [0, 1]), capped at max, the exact maximum.
func (h *histogram) quantile(q, maxV float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var c int64
	for i, b := range h.bins {
		c += b
		if c >= rank {
			return min(h.upper(i), maxV)
		}
	}
	return maxV
}
