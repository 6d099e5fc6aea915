package probe

import "math"

// The portable kernels: float64 sums in four interleaved accumulators.
// Their sums may differ from the assembly's in the last bits; the
// tolerance covers any order of float64 summation.

func dotGo(a []float32, b []float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * b[i]
		s1 += float64(a[i+1]) * b[i+1]
		s2 += float64(a[i+2]) * b[i+2]
		s3 += float64(a[i+3]) * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func absDotGo(a []float32, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += math.Abs(float64(v)) * b[i]
	}
	return s
}

func absSumGo(a []float32) float64 {
	s := 0.0
	for _, v := range a {
		s += math.Abs(float64(v))
	}
	return s
}

func sumSqGo(a []float32) float64 {
	s := 0.0
	for _, v := range a {
		s += float64(v) * float64(v)
	}
	return s
}

func axpyGo(acc []float64, w []float32, r float64) {
	for i, v := range w {
		acc[i] += r * float64(v)
	}
}
