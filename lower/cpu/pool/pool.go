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
type state struct {
	workers int
	wake    []chan struct{} // one per pool goroutine
	wg      sync.WaitGroup
	next    atomic.Int64 // dynamic: next task index to claim
	ntasks  int64
	active  int // static: participants sharing the tasks
	static  bool
	cur     Job
	closed  atomic.Bool
	once    sync.Once
}

// New returns a pool of workers participants (the caller plus workers-1
// goroutines started now). workers <= 0 means runtime.GOMAXPROCS(0).
func New(workers int) *Pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	s := &state{workers: workers, wake: make([]chan struct{}, workers-1)}
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
	for range ch {
		s.work(id)
		s.wg.Done()
	}
}

func (s *state) work(id int) {
	j, n := s.cur, s.ntasks
	if s.static {
		for t := int64(id); t < n; t += int64(s.active) {
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
	s.cur, s.ntasks, s.active, s.static = j, int64(ntasks), active, static
	s.next.Store(0)
	s.wg.Add(active - 1)
	for i := 0; i < active-1; i++ {
		s.wake[i] <- struct{}{}
	}
	s.work(0)
	s.wg.Wait()
	s.cur, s.static = nil, false
}
