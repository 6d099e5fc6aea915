package eval

import (
	"math"
)

// Estimate is a mean with its standard error.
type Estimate struct {
	Value, Err float64
}

// moments accumulates a sum and a sum of squares in float64, the way
// llama.cpp's perplexity tool does. The standard error of the mean is
// then sqrt((sum2/n - mean^2) / (n - 1)): the population variance over
// n - 1, which is the sample variance over n, i.e. the usual standard
// error of a mean of n independent draws (tokens are not independent, so
// like llama.cpp's it understates the true uncertainty somewhat).
type moments struct {
	n         int64
	sum, sum2 float64
}

func (m *moments) add(x float64) {
	m.n++
	m.sum += x
	m.sum2 += x * x
}

// mean returns the mean and its standard error (0 with fewer than two
// values, or a variance that rounding made non-positive).
func (m moments) mean() Estimate {
	if m.n < 1 {
		return Estimate{}
	}
	f := m.sum / float64(m.n)
	v := m.sum2/float64(m.n) - f*f
	if m.n < 2 || v <= 0 {
		return Estimate{Value: f}
	}
	return Estimate{Value: f, Err: math.Sqrt(v / float64(m.n-1))}
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

// upper is bin i's upper edge (0 for the bin below the range, +Inf above).
func (h *histogram) upper(i int) float64 {
	switch {
	case i == 0:
		return 0
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
