// Package pool is the CPU backend's one worker pool: a fixed set of
// persistent goroutines that the kernels, the quantized kernels and the
// masks hand numbered tasks to. Which participant runs a task is the only
// thing the schedule decides; callers make every task's result independent
// of it (a worker index selects scratch, nothing else), so results never
// depend on the worker count or on GOMAXPROCS.
package pool

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Job is a unit of parallel work: Do(task, worker) computes task number
// task (0 <= task < ntasks) on behalf of participant worker (0 is the
// caller, 1..Workers()-1 the pool goroutines; it indexes per-worker
// scratch). A Job is typically a pointer to a struct preallocated by the
// caller, so handing one to the pool allocates nothing.
type Job interface {
	Do(task, worker int)
}

// Pool runs Jobs on the caller plus Workers()-1 goroutines started by New.
// It is used by ONE caller at a time: Run and RunStatic are not safe for
// concurrent use. Close stops the goroutines; a Pool dropped without Close
// stops them when it is collected.
type Pool struct{ s *state }

// state is what the goroutines share; they never reference the Pool
// itself, so an unreferenced Pool can be collected and its cleanup run.
//
// A run starts by bumping gen. A helper that has just finished a run spins
// on gen for up to spinFor before it parks on its channel (announcing it in
// parked), so that the next of the many short runs of a decode step finds it
// awake: waking a parked goroutine costs tens of microseconds, a large share
// of a small matmul. The caller wakes only parked helpers.
type state struct {
	workers int
	wake    []chan struct{} // one per pool goroutine
	parked  []atomic.Bool   // helper i+1 is blocked (or about to block) on wake[i]
	gen     atomic.Uint64   // run generation
	act     atomic.Int32    // participants of the run of generation gen
	left    atomic.Int32    // helpers of the current run not yet done
	next    atomic.Int64    // dynamic: next task index to claim
	ntasks  int64
	static  bool
	cur     Job
	closed  atomic.Bool
	once    sync.Once
}

// spinFor is how long an idle helper watches for the next run before it
// parks.
const spinFor = 50 * time.Microsecond

// New returns a pool of workers participants (the caller plus workers-1
// goroutines started now). workers <= 0 means runtime.GOMAXPROCS(0).
func New(workers int) *Pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	s := &state{workers: workers, wake: make([]chan struct{}, workers-1), parked: make([]atomic.Bool, workers-1)}
	for i := range s.wake {
		ch := make(chan struct{}, 1)
		s.wake[i] = ch
		go s.helper(i+1, ch)
	}
	p := &Pool{s}
	runtime.AddCleanup(p, (*state).close, s)
	return p
}

// Workers returns the number of participants (caller included).
func (p *Pool) Workers() int { return p.s.workers }

// Close stops the pool goroutines; later runs execute serially on the
// caller. Close is idempotent.
func (p *Pool) Close() { p.s.close() }

func (s *state) close() {
	s.once.Do(func() {
		s.closed.Store(true)
		for _, ch := range s.wake {
			close(ch)
		}
	})
}

func (s *state) helper(id int, ch chan struct{}) {
	var seen uint64
	for {
		g, ok := s.await(id, seen, ch)
		if !ok {
			return
		}
		seen = g
		if id < int(s.act.Load()) && s.gen.Load() == g {
			// A participant of run g (the caller waits for it, so the
			// run's fields stay put until it is done).
			s.work(id)
			s.left.Add(-1)
		}
	}
}

// await returns the generation of the next run after seen, spinning first
// and then parking; false once the pool is closed.
func (s *state) await(id int, seen uint64, ch chan struct{}) (uint64, bool) {
	// With one P, a spinning helper would only keep the caller from
	// running: park at once.
	start, spin := time.Now(), runtime.GOMAXPROCS(0) > 1
	for i := 0; spin; i++ {
		if g := s.gen.Load(); g != seen {
			return g, true
		}
		if s.closed.Load() {
			return 0, false
		}
		if i%256 == 255 && time.Since(start) > spinFor {
			break
		}
	}
	p := &s.parked[id-1]
	p.Store(true)
	if g := s.gen.Load(); g != seen && p.CompareAndSwap(true, false) {
		return g, true // a run began as we parked, and nobody woke us
	}
	if _, ok := <-ch; !ok {
		return 0, false
	}
	return s.gen.Load(), true
}

func (s *state) work(id int) {
	j, n := s.cur, s.ntasks
	if s.static {
		for t := int64(id); t < n; t += int64(s.act.Load()) {
			j.Do(int(t), id)
		}
		return
	}
	for {
		t := s.next.Add(1) - 1
		if t >= n {
			return
		}
		j.Do(int(t), id)
	}
}

// Run executes tasks 0..ntasks-1 of j and returns when all are done. The
// participants claim the next unclaimed task until none is left, so a
// slow or descheduled one holds up only the task it has claimed.
func (p *Pool) Run(j Job, ntasks int) { p.s.run(j, ntasks, 0, false) }

// RunN is Run on at most maxActive participants (maxActive < 1: all).
func (p *Pool) RunN(j Job, ntasks, maxActive int) { p.s.run(j, ntasks, maxActive, false) }

// RunStatic executes tasks 0..ntasks-1 of j on at most maxActive
// participants (maxActive < 1: all), task t always on participant
// t mod active, in increasing order: for jobs whose per-worker scratch
// carries state from one of its tasks to the next.
func (p *Pool) RunStatic(j Job, ntasks, maxActive int) { p.s.run(j, ntasks, maxActive, true) }

func (s *state) run(j Job, ntasks, maxActive int, static bool) {
	if ntasks <= 0 {
		return
	}
	active := s.workers
	if maxActive >= 1 && maxActive < active {
		active = maxActive
	}
	active = min(active, ntasks)
	if active <= 1 || s.closed.Load() {
		for t := 0; t < ntasks; t++ {
			j.Do(t, 0)
		}
		return
	}
	s.cur, s.ntasks, s.static = j, int64(ntasks), static
	s.next.Store(0)
	s.left.Store(int32(active - 1))
	s.act.Store(int32(active))
	s.gen.Add(1)
	for i := 0; i < active-1; i++ {
		if s.parked[i].CompareAndSwap(true, false) {
			s.wake[i] <- struct{}{}
		}
	}
	s.work(0)
	for i := 0; s.left.Load() != 0; i++ {
		if i%64 == 63 {
			runtime.Gosched()
		}
	}
	s.cur, s.static = nil, false
}
