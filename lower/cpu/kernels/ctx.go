package kernels

import "gelo/lower/cpu/pool"

// job is a unit of parallel work: do(c, task, worker) computes task number
// task (0 <= task < ntasks) on behalf of participant worker (0 is the
// caller, 1..workers-1 the pool goroutines; it indexes per-worker scratch).
// Jobs are structs preallocated inside the Ctx, so handing one to the pool
// (a pointer to a field stored in an interface) allocates nothing.
type job interface {
	do(c *Ctx, task, worker int)
}

// poolJob adapts the Ctx's current job to pool.Job (a field of the Ctx,
// so running it allocates nothing).
type poolJob struct {
	c *Ctx
	j job
}

func (p *poolJob) Do(task, worker int) { p.j.do(p.c, task, worker) }

// Ctx owns a persistent worker pool and the scratch memory of the kernels,
// so that steady-state kernel calls allocate nothing.
//
// A Ctx is used by ONE caller at a time: its kernels are not safe for
// concurrent use (each call uses the pool and scratch exclusively). Use one
// Ctx per concurrent caller. Results never depend on the number of workers:
// every output element is computed by exactly one task, in a fixed order.
//
// Call Close when done to stop the pool goroutines.
type Ctx struct {
	pool    *pool.Pool
	pj      poolJob
	workers int // pool.Workers(), read by the job splits

	// Preallocated jobs.
	mm       matmulJob
	att      attnJob
	nrm      normJob
	ew       ewJob
	rope     ropeJob
	meas     measureJob
	readBufs readBufsJob
	fz       fusedJob
	bd       bf16DotJob
	rb       roundJob
	sl       sliceJob
	i8       int8Job
	u32      u32Job

	// warm reads the next one-row product's first bytes (WarmMatVec).
	warm pool.Warmer

	// scores holds one attention score buffer per worker.
	scores [][]float32
	// wide holds one widened bf16 weight panel per worker (MatMulTBF16).
	wide [][]float32
	// xb16 holds the input rows rounded to bf16 (MatMulTBF16Dot).
	xb16 []uint16
	// kvWide holds one chunk of widened 16-bit cache rows per worker
	// (Attention); kvRow one f32 cache row (the fused appends).
	kvWide, kvRow [][]float32
}

// NewCtx returns a Ctx with a pool of workers participants (the caller plus
// workers-1 goroutines started now). workers <= 0 means runtime.GOMAXPROCS(0).
func NewCtx(workers int) *Ctx {
	c := &Ctx{pool: pool.New(workers)}
	c.pj.c, c.workers = c, c.pool.Workers()
	c.scores = make([][]float32, c.workers)
	c.wide = make([][]float32, c.workers)
	c.kvWide = make([][]float32, c.workers)
	c.kvRow = make([][]float32, c.workers)
	return c
}

// Workers returns the number of participants (caller included).
func (c *Ctx) Workers() int { return c.workers }

// Pool is the Ctx's worker pool, for other kernels of the same caller to
// share (quant.NewCtxOn).
func (c *Ctx) Pool() *pool.Pool { return c.pool }

// Close stops the pool goroutines. The Ctx must not be used afterwards.
// Close is idempotent.
func (c *Ctx) Close() { c.pool.Close() }

// run executes tasks 0..ntasks-1 of j on the pool and returns when all are
// done. Which participant runs which task is dynamic, so j.do must make each
// task's result independent of the worker (it only selects scratch).
func (c *Ctx) run(j job, ntasks int) {
	c.pj.j = j
	c.pool.Run(&c.pj, ntasks)
	c.pj.j = nil
}
