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
// A run starts by publishing a new run word: its sequence number and its
// participant count in one atomic value, so that a helper decides from one
// load which run it saw and whether it takes part (two loads let a helper
// that sat out one run read the next run's count against the old sequence
// and join that run twice). A helper spins on the word for up to spinFor
// after its last run before it parks on its channel (announcing it in
// parked), so that the next of the many short runs of a decode step finds
// it awake: waking a parked goroutine costs tens of microseconds, a large
// share of a small matmul. The caller wakes only parked participants.
type state struct {
	workers int
	wake    []chan struct{} // one per pool goroutine
	parked  []atomic.Bool   // helper i+1 is blocked (or about to block) on wake[i]
	word    atomic.Uint64   // the current run: seq<<16 | participants
	seq     uint64          // the caller's run counter
	active  int             // participants of the current run
	left    atomic.Int32    // helpers of the current run not yet done
	waiting atomic.Uint64   // word of the run whose caller is blocked (or about to block) on done; 0: none
	done    chan struct{}   // the last helper of a run wakes a blocked caller
	next    atomic.Int64    // dynamic: next task index to claim
	ntasks  int64
	static  bool
	idling  bool // the current run is Idle's: the caller does not take part
	cur     Job
	closed  atomic.Bool
	once    sync.Once

	// Tests' hooks, to hold a goroutine up where a race opens: set
	// before the first run. hookPublished runs in the caller between
	// publishing a run and waking its parked participants; hookLastDone
	// in the helper that ended a run, before it wakes the caller.
	hookPublished, hookLastDone func()
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
	workers = min(workers, 1<<15) // the run word's 16-bit participant count
	s := &state{workers: workers, wake: make([]chan struct{}, workers-1), parked: make([]atomic.Bool, workers-1),
		done: make(chan struct{}, 1)}
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
	last := time.Now() // end of this helper's last run
	for {
		w, ok := s.await(id, seen, ch, last)
		if !ok {
			return
		}
		seen = w
		if id < int(w&0xffff) {
			// A participant of run w (the caller waits for it, so the
			// run's fields stay put until it is done).
			s.work(id)
			// The wake is for run w's caller only: a helper held up
			// between its last decrement and the swap must not wake the
			// caller of a later run, who would return with that run's
			// tasks still running.
			if s.left.Add(-1) == 0 && s.lastDone() && s.waiting.CompareAndSwap(w, 0) {
				s.done <- struct{}{}
				// The caller, made runnable by the send, waits in this
				// P's next slot until this goroutine gives the P up:
				// spinning on in await it would hold it spinFor and
				// then park, and the caller's next run would wait to
				// wake it (runs of static tasks fell into that cycle,
				// 2-3x their work). Yield so the caller runs now.
				runtime.Gosched()
			}
			last = time.Now()
		}
	}
}

// await returns the word of the next run after seen, spinning until
// spinFor after last and then parking; false once the pool is closed.
func (s *state) await(id int, seen uint64, ch chan struct{}, last time.Time) (uint64, bool) {
	spin := s.spins() && time.Since(last) < spinFor
	for i := 0; spin; i++ {
		if w := s.word.Load(); w != seen {
			return w, true
		}
		if s.closed.Load() {
			return 0, false
		}
		if i%256 == 255 && time.Since(last) > spinFor {
			break
		}
	}
	p := &s.parked[id-1]
	for {
		p.Store(true)
		if w := s.word.Load(); w != seen && p.CompareAndSwap(true, false) {
			return w, true // a run began as we parked, and nobody woke us
		}
		if _, ok := <-ch; !ok {
			return 0, false
		}
		// The wake can be stale: a caller wakes the parked participants
		// after it publishes its run, and by then this helper may have
		// seen the run, done its share and parked again. Taking part
		// twice would end the run early (or never). A run it has not
		// seen cannot end without it.
		if w := s.word.Load(); w != seen {
			return w, true
		}
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

// Idle hands tasks 0..ntasks-1 of j to the pool goroutines and returns at
// once, the caller going on with work of its own. The next Run, RunN,
// RunStatic, Idle or Stop first ends it: the tasks not yet claimed are
// skipped, and it waits for the claimed ones. Idle is for work any task of
// which may be left undone (warming a cache with what the next run reads):
// it does nothing unless every pool goroutine is awake and spinning, since
// waking a parked one costs more than such work gains.
func (p *Pool) Idle(j Job, ntasks int) { p.s.idle(j, ntasks) }

// Stop ends an Idle run (see Idle); without one it does nothing.
func (p *Pool) Stop() { p.s.stop() }

// Idling reports whether an Idle run of j has tasks not yet claimed.
func (p *Pool) Idling(j Job) bool {
	return p.s.idling && p.s.cur == j && p.s.next.Load() < p.s.ntasks
}

func (s *state) idle(j Job, ntasks int) {
	s.stop()
	if ntasks <= 0 || s.workers <= 1 || s.closed.Load() || !s.spins() {
		return
	}
	for i := range s.parked {
		if s.parked[i].Load() {
			return
		}
	}
	s.cur, s.ntasks, s.static, s.active = j, int64(ntasks), false, s.workers
	s.next.Store(0)
	s.left.Store(int32(s.workers - 1))
	s.idling = true
	s.seq++
	s.word.Store(s.seq<<16 | uint64(s.workers))
	for i := range s.parked {
		// One that parked since the check above (rare) is woken: the run
		// cannot end without it.
		if s.parked[i].CompareAndSwap(true, false) {
			s.wake[i] <- struct{}{}
		}
	}
}

func (s *state) stop() {
	if !s.idling {
		return
	}
	s.idling = false
	s.next.Store(s.ntasks) // a later claim finds nothing left
	s.wait()
	s.cur = nil
}

func (s *state) run(j Job, ntasks, maxActive int, static bool) {
	s.stop()
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
	s.cur, s.ntasks, s.static, s.active = j, int64(ntasks), static, active
	s.next.Store(0)
	s.left.Store(int32(active - 1))
	s.seq++
	s.word.Store(s.seq<<16 | uint64(active))
	if s.hookPublished != nil {
		s.hookPublished()
	}
	for i := 0; i < active-1; i++ {
		if s.parked[i].CompareAndSwap(true, false) {
			s.wake[i] <- struct{}{}
		}
	}
	s.work(0)
	s.wait()
	s.cur, s.static = nil, false
}

// wait returns once every helper of the current run is done: spinning for
// up to spinFor, then blocked on done.
func (s *state) wait() {
	if s.spins() {
		start := time.Now()
		for i := 0; ; i++ {
			if s.left.Load() == 0 {
				return
			}
			if i%256 == 255 && time.Since(start) > spinFor {
				break
			}
		}
	}
	w := s.word.Load()
	s.waiting.Store(w)
	if s.left.Load() == 0 && s.waiting.CompareAndSwap(w, 0) {
		return // the last helper finished as we blocked, and woke nobody
	}
	<-s.done
}

// lastDone runs the test hook, if any, in the helper that ended a run.
func (s *state) lastDone() bool {
	if s.hookLastDone != nil {
		s.hookLastDone()
	}
	return true
}

// spins reports whether waiting goroutines may spin: only when every
// participant can have a CPU of its own, or a spinner would hold one that a
// participant needs.
func (s *state) spins() bool {
	return s.workers <= min(runtime.GOMAXPROCS(0), runtime.NumCPU())
}
