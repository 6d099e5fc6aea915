package quant

import "gelo/device/wire"

// Warm has the pool's idle workers read the start of each of the first
// tasks (one a worker) of w's matvec (MatMulQ with one activation row)
// while the caller goes on; the next run on the pool ends it (see
// pool.Warmer). Called again for the same w it goes on from where the last
// one was ended; the matvec itself makes the next Warm start over.
func (c *Ctx) Warm(w *wire.Matrix) {
	if !c.warm.For(w.Data) {
		c.warm.Reset(c.pool, w.Data)
		unit := mvUnit(w)
		ldw := w.RowBytes()
		tasks := mvTasks(w.Rows, ldw, max(1, w.Rows/unit), c.Workers())
		for t := 0; t < min(tasks, c.Workers()); t++ {
			r0, r1 := taskRows(w.Rows, unit, tasks, t)
			c.warm.Add(r0*ldw, r1*ldw)
		}
	}
	c.warm.Warm(c.pool)
}
