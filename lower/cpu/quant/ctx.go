package quant

import (
	"gelo/device/wire"
	"gelo/lower/cpu/pool"
)

// job is a unit of parallel work: do(task) computes task number task
// (0 <= task < ntasks). Jobs are structs preallocated inside the Ctx, so
// handing one to the pool allocates nothing.
type job interface {
	do(task int)
}

// poolJob adapts the Ctx's current job to pool.Job (a field of the Ctx,
// so running it allocates nothing).
type poolJob struct{ j job }

func (p *poolJob) Do(task, _ int) { p.j.do(task) }

// Ctx owns a persistent worker pool (and scratch) for the quantized
// kernels, so that steady-state calls allocate nothing.
//
// A Ctx is used by ONE caller at a time: its methods are not safe for
// concurrent use. Results never depend on the number of workers: every
// output element is computed by exactly one task, in the canonical order
// of the package documentation.
//
// Call Close when done to stop the pool goroutines.
type Ctx struct {
	pool *pool.Pool
	pj   poolJob

	// Preallocated jobs.
	mm   matmulJob
	qa   quantJob
	warm pool.Warmer

	// act is the scratch of MatMul (grown on demand).
	act wire.Activations
	// amxTab is the Q4_K AMX kernel's table of activation scales (grown
	// on demand).
	amxTab []float32
}

// NewCtx returns a Ctx with a pool of workers participants (the caller plus
// workers-1 goroutines started now). workers <= 0 means runtime.GOMAXPROCS(0).
func NewCtx(workers int) *Ctx { return &Ctx{pool: pool.New(workers)} }

// NewCtxOn returns a Ctx that runs on p, a pool shared with other kernels
// of the same single caller (one set of goroutines, kept warm by every
// op). Closing either closes p.
func NewCtxOn(p *pool.Pool) *Ctx { return &Ctx{pool: p} }

// Workers returns the number of participants (caller included).
func (c *Ctx) Workers() int { return c.pool.Workers() }

// Close stops the pool goroutines. Later calls run serially on the caller.
// Close is idempotent.
func (c *Ctx) Close() { c.pool.Close() }

// run executes tasks 0..ntasks-1 of j on the pool and returns when all are
// done. Which participant runs which task is dynamic, so a task's result
// must not depend on who runs it.
func (c *Ctx) run(j job, ntasks int) {
	c.pj.j = j
	c.pool.Run(&c.pj, ntasks)
	c.pj.j = nil
}

// quantJob quantizes activation rows in parallel.
type quantJob struct {
	a       *wire.Activations
	x       []float32
	rowsPer int
}

// quantTaskValues: activation values per quantization task.
const quantTaskValues = 16 << 10

func (j *quantJob) do(task int) {
	i0 := task * j.rowsPer
	i1 := min(i0+j.rowsPer, j.a.Rows())
	q, d, s := j.a.RowBlocks(i0, i1)
	x := j.x[i0*j.a.Cols():]
	quantizeBlocks(q, d, s, x)
}

// quantizeBlocks fills blocks of quants q, scales d and sums s from x (len(d)
// blocks of wire.QK values) with the assembly where present, any block it
// leaves to wire.QuantizeActBlock: the same bits either way
// (TestQuantizeActAsm).
func quantizeBlocks(q []int8, d []float32, s []int32, x []float32) {
	const qk = wire.QK
	for b := 0; b < len(d); {
		b += quantizeActAsm(q[b*qk:], d[b:], s[b:], x[b*qk:])
		if b < len(d) {
			d[b], s[b] = wire.QuantizeActBlock(q[b*qk:(b+1)*qk], x[b*qk:(b+1)*qk])
			b++
		}
	}
}

// QuantizeActivations quantizes the row-major m x k matrix x into a (k a
// positive multiple of 32), rows in parallel. The result is identical to
// a.Quantize(x, m, k).
func (c *Ctx) QuantizeActivations(a *wire.Activations, x []float32, m, k int) error {
	if err := a.Prepare(x, m, k); err != nil {
		return err
	}
	j := &c.qa
	j.a, j.x = a, x
	j.rowsPer = max(1, quantTaskValues/k)
	c.run(j, (m+j.rowsPer-1)/j.rowsPer)
	j.a, j.x = nil, nil
	return nil
}
