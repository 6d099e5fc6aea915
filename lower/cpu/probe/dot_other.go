//go:build !amd64 || purego

package probe

var useAsm = false

func dot(a []float32, b []float64) float64       { return dotGo(a, b[:len(a)]) }
func absDot(a []float32, b []float64) float64    { return absDotGo(a, b[:len(a)]) }
func absSum(a []float32) float64                 { return absSumGo(a) }
func sumSq(a []float32) float64                  { return sumSqGo(a) }
func axpy(acc []float64, w []float32, r float64) { axpyGo(acc[:len(w)], w, r) }

// SetAsm is a no-op without assembly kernels.
func SetAsm(bool) bool { return false }
