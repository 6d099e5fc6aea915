//go:build !quant_nof32

package quant

import "gelo/lower/cpu/kernels"

func init() {
	f32MatMulWorkers = func(workers int) (func(y, x, w []float32, m, k, n int), func()) {
		c := kernels.NewCtx(workers)
		return func(y, x, w []float32, m, k, n int) { c.MatMulT(y, x, w, m, k, n, nil) }, c.Close
	}
	f32MatMul = func() (func(y, x, w []float32, m, k, n int), func()) { return f32MatMulWorkers(0) }
}
