//go:build !amd64 || purego

package probe

import "math"

var useAsm = false

func dot(a []float32, b []float64) float64       { return dotGo(a, b[:len(a)]) }
func absDot(a []float32, b []float64) float64    { return absDotGo(a, b[:len(a)]) }
func absSum(a []float32) float64                 { return absSumGo(a) }
func sumSq(a []float32) float64                  { return sumSqGo(a) }
func axpy(acc []float64, w []float32, r float64) { axpyGo(acc[:len(w)], w, r) }

// SetAsm is a no-op without assembly kernels.
func SetAsm(bool) bool { return false }

func axpy4(acc []float64, w *[4][]float32, r *[4]float64) {
	for i := range w[0] {
		acc[i] = math.FMA(r[3], float64(w[3][i]), math.FMA(r[2], float64(w[2][i]), math.FMA(r[1], float64(w[1][i]), math.FMA(r[0], float64(w[0][i]), acc[i]))))
	}
}
