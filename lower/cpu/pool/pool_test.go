package pool

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

type countJob struct {
	hits []atomic.Int32
	who  []int
}

func (j *countJob) Do(task, worker int) {
	j.hits[task].Add(1)
	j.who[task] = worker
}

func TestRunEveryTaskOnce(t *testing.T) {
	p := New(4)
	defer p.Close()
	for _, n := range []int{0, 1, 3, 4, 5, 100} {
		for _, run := range []func(Job, int){p.Run, func(j Job, n int) { p.RunN(j, n, 2) },
			func(j Job, n int) { p.RunStatic(j, n, 0) }} {
			j := &countJob{hits: make([]atomic.Int32, n), who: make([]int, n)}
			run(j, n)
			for i := range j.hits {
				if h := j.hits[i].Load(); h != 1 {
					t.Fatalf("n=%d: task %d ran %d times", n, i, h)
				}
			}
		}
	}
}

func TestRunStaticAssignment(t *testing.T) {
	p := New(4)
	defer p.Close()
	for _, maxActive := range []int{0, 1, 3} {
		const n = 23
		j := &countJob{hits: make([]atomic.Int32, n), who: make([]int, n)}
		p.RunStatic(j, n, maxActive)
		active := 4
		if maxActive >= 1 {
			active = maxActive
		}
		for task, w := range j.who {
			if w != task%active {
				t.Fatalf("maxActive %d: task %d on worker %d, want %d", maxActive, task, w, task%active)
			}
		}
	}
}

func TestClosedRunsSerially(t *testing.T) {
	p := New(3)
	p.Close()
	p.Close()
	j := &countJob{hits: make([]atomic.Int32, 10), who: make([]int, 10)}
	p.Run(j, 10)
	for task, w := range j.who {
		if w != 0 || j.hits[task].Load() != 1 {
			t.Fatalf("task %d: worker %d, %d runs", task, w, j.hits[task].Load())
		}
	}
}

// TestDroppedPoolStops: a Pool never closed stops its goroutines once it
// is collected (the masks' convenience constructors drop theirs).
func TestDroppedPoolStops(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		New(4)
	}
	for range 100 {
		runtime.GC()
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d goroutines, %d before", runtime.NumGoroutine(), before)
}

func TestRunAllocatesNothing(t *testing.T) {
	p := New(4)
	defer p.Close()
	j := &countJob{hits: make([]atomic.Int32, 64), who: make([]int, 64)}
	if a := testing.AllocsPerRun(100, func() { p.Run(j, 64); p.RunStatic(j, 64, 0) }); a != 0 {
		t.Fatalf("%v allocations per run", a)
	}
}

// TestSpinAndPark: runs back to back (helpers still spinning), after a
// pause longer than spinFor (helpers parked), and with fewer participants
// than helpers (the idle ones must not join) each run every task exactly
// once; Close stops helpers in either state.
func TestSpinAndPark(t *testing.T) {
	p := New(4)
	for i := range 300 {
		switch i % 3 {
		case 1:
			time.Sleep(3 * spinFor)
		case 2:
			time.Sleep(spinFor / 2)
		}
		n := 1 + i%17
		j := &countJob{hits: make([]atomic.Int32, n), who: make([]int, n)}
		switch i % 4 {
		case 0:
			p.Run(j, n)
		case 1:
			p.RunN(j, n, 2)
		case 2:
			p.RunStatic(j, n, 3)
		default:
			p.RunN(j, n, 1)
		}
		for task := range j.hits {
			if h := j.hits[task].Load(); h != 1 {
				t.Fatalf("run %d: task %d ran %d times", i, task, h)
			}
		}
	}
	p.Close()
}

// TestAlternatingWidths: runs with fewer participants than helpers
// alternate, back to back, with runs that take them all (the helpers that
// sat one out must join the next exactly once), dynamic and static.
func TestAlternatingWidths(t *testing.T) {
	p := New(4)
	defer p.Close()
	iters := 5000
	if testing.Short() {
		iters = 1000
	}
	for i := range iters {
		n := 2 + i%9
		j := &countJob{hits: make([]atomic.Int32, n), who: make([]int, n)}
		switch i % 3 {
		case 0:
			p.RunN(j, n, 2)
		case 1:
			p.Run(j, n)
		default:
			p.RunStatic(j, n, 0)
		}
		for task := range j.hits {
			if h := j.hits[task].Load(); h != 1 {
				t.Fatalf("run %d: task %d ran %d times", i, task, h)
			}
		}
	}
}
