package pool

import (
	"sync/atomic"
	"testing"
	"time"
)

// doneJob counts each task's completions. Tasks on pool goroutines take
// a while, so that a caller that returns before its helpers are done
// finds a task not yet done; with slowCaller it is the caller's that do,
// so that the helpers are done before the caller waits.
type doneJob struct {
	done       []atomic.Int32
	slowCaller bool
}

func (j *doneJob) Do(task, worker int) {
	if (worker == 0) == j.slowCaller {
		time.Sleep(2 * time.Millisecond)
	}
	j.done[task].Add(1)
}

// TestRunWaitsForItsOwnHelpers: a helper that ended run r and was held up
// before it woke the caller must not wake the caller of run r+1 (which
// would return while r+1's tasks still run). The hook holds the last
// helper of the first run there until the next run's caller has blocked.
func TestRunWaitsForItsOwnHelpers(t *testing.T) {
	p := New(3)
	defer p.Close()
	var held atomic.Bool
	p.s.hookLastDone = func() {
		if held.CompareAndSwap(false, true) {
			time.Sleep(20 * time.Millisecond) // >> spinFor and the next run's tasks: the next caller blocks
		}
	}
	// The caller finds the first run's helpers done and returns without
	// blocking, its last helper held before its wake.
	p.RunStatic(&doneJob{done: make([]atomic.Int32, 3), slowCaller: true}, 3, 0)
	if !held.Load() {
		t.Fatal("the hook did not run: the first run's caller returned before its last helper")
	}
	next := &doneJob{done: make([]atomic.Int32, 3)}
	p.RunStatic(next, 3, 0) // one task per participant: the held helper owns one
	for task := range next.done {
		if d := next.done[task].Load(); d != 1 {
			t.Fatalf("the second run returned with task %d done %d times", task, d)
		}
	}
	if l := p.s.left.Load(); l != 0 {
		t.Fatalf("the second run returned with %d helpers left", l)
	}
}

// TestStaleWakeIsPassedOver: a caller wakes the parked participants after
// it publishes its run; a helper that saw the run while awake, did its
// task and parked again before that wake must not take part a second time
// (its task would run twice and the run's count of helpers left go
// negative). The hook holds the caller between publishing and waking until
// the helper has done its task and parked.
func TestStaleWakeIsPassedOver(t *testing.T) {
	p := New(2)
	defer p.Close()
	if !p.s.spins() {
		t.Skip("needs a helper that spins (2 CPUs and GOMAXPROCS >= 2): only a spinning helper sees a run before its wake")
	}
	var job *countJob
	exercised := false
	hold := func() {
		for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
			if job.hits[1].Load() == 1 && p.s.parked[0].Load() {
				exercised = true
				return
			}
		}
	}
	for attempt := 0; attempt < 50 && !exercised; attempt++ {
		p.s.hookPublished = nil
		p.RunStatic(&countJob{hits: make([]atomic.Int32, 2), who: make([]int, 2)}, 2, 0) // the helper spins after this
		job = &countJob{hits: make([]atomic.Int32, 2), who: make([]int, 2)}
		p.s.hookPublished = hold
		p.RunStatic(job, 2, 0) // task 1 on the helper
		p.s.hookPublished = nil
		time.Sleep(2 * time.Millisecond) // a second share would be done by now
		for task := range job.hits {
			if h := job.hits[task].Load(); h != 1 {
				t.Fatalf("attempt %d: task %d ran %d times", attempt, task, h)
			}
		}
		if l := p.s.left.Load(); l != 0 {
			t.Fatalf("attempt %d: the run ended with %d helpers left", attempt, l)
		}
	}
	if !exercised {
		t.Fatal("the helper never did its task and parked before the wake: the race was not set up")
	}
}
