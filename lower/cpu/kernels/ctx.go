package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// job is a unit of parallel work: do(c, task, worker) computes task number
// task (0 <= task < ntasks) on behalf of participant worker (0 is the
// caller, 1..workers-1 the pool goroutines; it indexes per-worker scratch).
// Jobs are structs preallocated inside the Ctx, so handing one to the pool
// (a pointer to a field stored in an interface) allocates nothing.
type job interface {
	do(c *Ctx, task, worker int)
}

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
	workers int
	wake    []chan struct{} // one per pool goroutine (workers-1 of them)
	wg      sync.WaitGroup
	next    atomic.Int64 // next task index to claim
	ntasks  int64
	cur     job
	closed  bool

	// Preallocated jobs.
	mm   matmulJob
	att  attnJob
	nrm  normJob
	ew   ewJob
	rope ropeJob
	meas measureJob
	fz   fusedJob

	// scores holds one attention score buffer per worker.
	scores [][]float32
	// wide holds one widened bf16 weight panel per worker (MatMulTBF16).
	wide [][]float32
}

// NewCtx returns a Ctx with a pool of workers participants (the caller plus
// workers-1 goroutines started now). workers <= 0 means runtime.GOMAXPROCS(0).
func NewCtx(workers int) *Ctx {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	c := &Ctx{workers: workers}
	c.wake = make([]chan struct{}, workers-1)
	for i := range c.wake {
		ch := make(chan struct{}, 1)
		c.wake[i] = ch
		go c.worker(i+1, ch)
	}
	c.scores = make([][]float32, workers)
	c.wide = make([][]float32, workers)
	return c
}

// Workers returns the number of participants (caller included).
func (c *Ctx) Workers() int { return c.workers }

// Close stops the pool goroutines. The Ctx must not be used afterwards.
// Close is idempotent.
func (c *Ctx) Close() {
	if c.closed {
		return
	}
	c.closed = true
	for _, ch := range c.wake {
		close(ch)
	}
}

func (c *Ctx) worker(id int, ch chan struct{}) {
	for range ch {
		c.drain(id)
		c.wg.Done()
	}
}

func (c *Ctx) drain(id int) {
	j, n := c.cur, c.ntasks
	for {
		t := c.next.Add(1) - 1
		if t >= n {
			return
		}
		j.do(c, int(t), id)
	}
}

// run executes tasks 0..ntasks-1 of j on the pool and returns when all are
// done. Which participant runs which task is dynamic, so j.do must make each
// task's result independent of the worker (it only selects scratch).
func (c *Ctx) run(j job, ntasks int) {
	if ntasks <= 0 {
		return
	}
	helpers := c.workers - 1
	if ntasks-1 < helpers {
		helpers = ntasks - 1
	}
	if helpers <= 0 || c.closed {
		for t := 0; t < ntasks; t++ {
			j.do(c, t, 0)
		}
		return
	}
	c.cur = j
	c.ntasks = int64(ntasks)
	c.next.Store(0)
	c.wg.Add(helpers)
	for i := 0; i < helpers; i++ {
		c.wake[i] <- struct{}{}
	}
	c.drain(0)
	c.wg.Wait()
	c.cur = nil
}
