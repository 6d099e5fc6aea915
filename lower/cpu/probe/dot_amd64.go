//go:build amd64 && !purego

package probe

import (
	"math"

	"golang.org/x/sys/cpu"
)

// useAsm selects the AVX2+FMA kernels, decided once from feature detection
// (tests flip it to compare with the fallback).
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func dotF32F64AVX2(a *float32, b *float64, n int) float64

//go:noescape
func absDotF32F64AVX2(a *float32, b *float64, n int) float64

//go:noescape
func absSumF32AVX2(a *float32, n int) float64

//go:noescape
func sumSqF32AVX2(a *float32, n int) float64

//go:noescape
func axpyF32F64AVX2(acc *float64, w *float32, r float64, n int)

//go:noescape
func axpy4F32F64AVX2(acc *float64, w0, w1, w2, w3 *float32, r *[4]float64, n int)

// axpy4 adds r[t] * w[t][i] to acc[i] for t = 0..3 in order (the rows of
// w of equal length, len(acc) >= it).
func axpy4(acc []float64, w *[4][]float32, r *[4]float64) {
	k := len(w[0])
	acc = acc[:k]
	w0, w1, w2, w3 := w[0][:k], w[1][:k], w[2][:k], w[3][:k]
	n := k &^ 15
	if useAsm && n > 0 {
		axpy4F32F64AVX2(&acc[0], &w0[0], &w1[0], &w2[0], &w3[0], r, n)
	} else {
		n = 0
	}
	for i := n; i < k; i++ {
		acc[i] = math.FMA(r[3], float64(w3[i]), math.FMA(r[2], float64(w2[i]), math.FMA(r[1], float64(w1[i]), math.FMA(r[0], float64(w0[i]), acc[i]))))
	}
}

// axpy adds r * w[i] to acc[i] (len(acc) >= len(w)).
func axpy(acc []float64, w []float32, r float64) {
	acc = acc[:len(w)]
	n := len(w) &^ 15
	if useAsm && n > 0 {
		axpyF32F64AVX2(&acc[0], &w[0], r, n)
	} else {
		n = 0
	}
	axpyGo(acc[n:], w[n:], r)
}

// sumSq is the sum of a[i]^2.
func sumSq(a []float32) float64 {
	n := len(a) &^ 15
	s := 0.0
	if useAsm && n > 0 {
		s = sumSqF32AVX2(&a[0], n)
	} else {
		n = 0
	}
	return s + sumSqGo(a[n:])
}

// dot is the sum of float64(a[i]) * b[i] over len(a) (len(b) >= len(a)).
func dot(a []float32, b []float64) float64 {
	b = b[:len(a)]
	n := len(a) &^ 15
	s := 0.0
	if useAsm && n > 0 {
		s = dotF32F64AVX2(&a[0], &b[0], n)
	} else {
		n = 0
	}
	return s + dotGo(a[n:], b[n:])
}

// absDot is the sum of |a[i]| * b[i] over len(a).
func absDot(a []float32, b []float64) float64 {
	b = b[:len(a)]
	n := len(a) &^ 15
	s := 0.0
	if useAsm && n > 0 {
		s = absDotF32F64AVX2(&a[0], &b[0], n)
	} else {
		n = 0
	}
	return s + absDotGo(a[n:], b[n:])
}

// absSum is the sum of |a[i]|.
func absSum(a []float32) float64 {
	n := len(a) &^ 15
	s := 0.0
	if useAsm && n > 0 {
		s = absSumF32AVX2(&a[0], n)
	} else {
		n = 0
	}
	return s + absSumGo(a[n:])
}

// SetAsm switches the assembly kernels on or off and returns the previous
// setting (tests compare the two).
func SetAsm(on bool) bool {
	prev := useAsm
	useAsm = on && cpu.X86.HasAVX2 && cpu.X86.HasFMA
	return prev
}
