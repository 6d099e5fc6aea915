//go:build !amd64 || purego

package kernels

// useAsm is always false without assembly kernels.
var useAsm = false

const haveAsm = false

func gemm4x3(x0, x1, x2, x3, w []float32, ldw, k, ntiles int, y0, y1, y2, y3 []float32) {
	gemm4x3Go(x0, x1, x2, x3, w, ldw, k, ntiles, y0, y1, y2, y3)
}

func gemv1x8(x, w []float32, ldw, k, ntiles int, y []float32) {
	gemv1x8Go(x, w, ldw, k, ntiles, y)
}

func dot(x, w []float32, k int) float32 { return dotGo(x, w, k) }

func sum64(p []float32, n int) float32 { return sumGo(p, n) }

func fmaLoop(iters int) { fmaLoopGo(iters) }

func wsum(out, p, v []float32, ldv, t, d int, acc bool) { wsumGo(out, p, v, ldv, t, d, acc) }

func prefetchRows(p []float32, stride, rows, width int) {}
