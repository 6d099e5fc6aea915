package quant

import (
	"sync/atomic"

	"gelo/device/wire"
)

// Warming the next matvec's weights. Between two matmuls of a decode step
// the caller runs the small ops (norms, RoPE, the KV append, quantizing
// the next input) alone, a few microseconds each and together about a
// tenth of the step, while the other workers spin and the memory system
// idles. Warm hands them the first bytes of the next matvec's tasks to
// read meanwhile, so that the matvec finds its start in cache. It computes
// nothing: the products are the same bits with or without it.
const (
	// warmChunk: bytes read per Idle task, small so that the next run
	// (which ends the warming) waits little for the claimed ones.
	warmChunk = 16 << 10
	// warmTaskBytes: the most bytes warmed of each task, about what the
	// idle workers read in the longest gaps of a step.
	warmTaskBytes = 512 << 10
)

// warmJob reads warmChunk-byte chunks of the starts of the first tasks of
// a matvec, round-robin across the tasks (each worker's first task finds
// as much in cache as the others').
type warmJob struct {
	w      *wire.Matrix
	starts []int // byte offset of each warmed task's rows
	ends   []int // end of its warmed bytes
	chunks int   // chunks in all
	base   int   // chunks read by earlier Idle runs (a prefix of the order)
	done   atomic.Int64
	sink   atomic.Uint32
}

func (j *warmJob) Do(task, _ int) {
	c := j.base + task
	t, k := c%len(j.starts), c/len(j.starts)
	off := j.starts[t] + k*warmChunk
	end := min(off+warmChunk, j.ends[t])
	var s byte
	data := j.w.Data
	for i := off; i < end; i += 64 {
		s += data[i]
	}
	j.sink.Add(uint32(s))
	j.done.Add(1)
}

// Warm has the pool's idle workers read the start of w's matvec tasks
// (MatMulQ with one activation row) while the caller goes on; the next run
// on the pool ends it. Called again for the same w it goes on from where
// the last one was ended. It does nothing for a pool of one worker or one
// whose helpers are parked (pool.Idle).
func (c *Ctx) Warm(w *wire.Matrix) {
	j := &c.warm
	if j.w == w && c.pool.Idling() {
		return // still at it
	}
	c.pool.Stop() // the job below is no longer read
	if j.w != w {
		j.w, j.base = w, 0
		j.done.Store(0)
		j.starts, j.ends, j.chunks = j.starts[:0], j.ends[:0], 0
		unit := mvUnit(w)
		units := max(1, w.Rows/unit)
		ldw := w.RowBytes()
		tasks := mvTasks(w.Rows, ldw, units, c.Workers())
		for t := 0; t < min(tasks, c.Workers()); t++ {
			r0, r1 := taskRows(w.Rows, unit, tasks, t)
			b0, b1 := r0*ldw, min(r1*ldw, r0*ldw+warmTaskBytes)
			j.starts, j.ends = append(j.starts, b0), append(j.ends, b1)
			j.chunks = max(j.chunks, (b1-b0+warmChunk-1)/warmChunk)
		}
		j.chunks *= len(j.starts)
	}
	j.base = int(j.done.Load())
	if j.base < j.chunks {
		c.pool.Idle(j, j.chunks-j.base)
	}
}
