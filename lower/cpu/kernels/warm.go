package kernels

import "unsafe"

// WarmMatVec has the pool's idle workers read the start of each of the
// first tasks (one a worker) of the one-row product with f32 weights w
// [n, k] (MatMulT with m = 1) while the caller goes on; the next run on the
// pool ends it (see pool.Warmer). Called again for the same w it goes on
// from where the last one was ended; the product itself makes the next one
// start over. It only reads: the product's bits are the same.
func (c *Ctx) WarmMatVec(w []float32, k, n int) {
	if n*k == 0 || len(w) < n*k {
		return
	}
	// A byte view of the weights, only read.
	c.warmRows(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 4*n*k), 4*k, n)
}

// WarmMatVecBF16 is WarmMatVec for bf16 weights: MatMulTBF16Dot's product
// when dot, else MatMulTBF16's (whose rows the assembly cannot take, k not
// a multiple of 8, are widened in small tasks that are not warmed).
func (c *Ctx) WarmMatVecBF16(w []uint16, k, n int, dot bool) {
	if n*k == 0 || len(w) < n*k || !dot && (k%8 != 0 || !useAsm) {
		return
	}
	c.warmRows(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 2*n*k), 2*k, n)
}

// warmRows warms the first tasks of a one-row product's decode split
// (decodeTasks) of n weight rows of rowBytes each.
func (c *Ctx) warmRows(data []byte, rowBytes, n int) {
	if !c.warm.For(data) {
		c.warm.Reset(c.pool, data)
		tasks := decodeTasks(n, rowBytes, c.workers)
		s := split{m: 1, n: n, colTasks: tasks, rowsPer: 1, rowTasks: 1}
		for t := 0; t < min(tasks, c.workers); t++ {
			_, _, j0, j1 := s.bounds(t)
			c.warm.Add(j0*rowBytes, j1*rowBytes)
		}
	}
	c.warm.Warm(c.pool)
}
