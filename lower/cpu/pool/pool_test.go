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

// slowJob records each task's worker and takes a while per task, so that a
// Stop finds tasks left.
type slowJob struct {
	hits []atomic.Int32
	who  []atomic.Int32
}

func (j *slowJob) Do(task, worker int) {
	j.hits[task].Add(1)
	j.who[task].Store(int32(worker))
	for t := time.Now(); time.Since(t) < 20*time.Microsecond; {
	}
}

// TestIdle: an Idle run's tasks run at most once, on pool goroutines only,
// while the caller goes on; Stop (and a later Run) ends it with the
// unclaimed tasks skipped, and the pool then runs as before.
func TestIdle(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 || runtime.NumCPU() < 2 {
		t.Skip("Idle needs spinning helpers: at least 2 CPUs")
	}
	p := New(2)
	defer p.Close()
	const n = 10000
	ran := 0
	for try := 0; try < 100 && ran == 0; try++ {
		// Runs until the helper spins (one woken from parking can spin
		// out its time before the caller is rescheduled, then park).
		for r := 0; r < 10 && (r == 0 || p.s.parked[0].Load()); r++ {
			p.Run(&countJob{hits: make([]atomic.Int32, 2), who: make([]int, 2)}, 2)
		}
		j := &slowJob{hits: make([]atomic.Int32, n), who: make([]atomic.Int32, n)}
		p.Idle(j, n)
		time.Sleep(time.Millisecond) // the caller's own work
		p.Stop()
		for i := range j.hits {
			h := j.hits[i].Load()
			if h > 1 {
				t.Fatalf("task %d ran %d times", i, h)
			}
			if h == 1 {
				ran++
				if w := j.who[i].Load(); w == 0 {
					t.Fatalf("task %d ran on the caller", i)
				}
			}
		}
		if ran == n {
			t.Fatalf("all %d tasks ran in 1 ms: Stop skipped none", n)
		}
		// Claimed tasks are a prefix: the helper claims in order.
		for i := 0; i < ran; i++ {
			if j.hits[i].Load() != 1 {
				t.Fatalf("task %d skipped but %d ran", i, ran)
			}
		}
		c := &countJob{hits: make([]atomic.Int32, 50), who: make([]int, 50)}
		p.Idle(&slowJob{hits: make([]atomic.Int32, n), who: make([]atomic.Int32, n)}, n)
		p.Run(c, 50) // ends the Idle run first
		for i := range c.hits {
			if c.hits[i].Load() != 1 {
				t.Fatalf("after Idle: task %d ran %d times", i, c.hits[i].Load())
			}
		}
	}
	if ran == 0 {
		t.Fatal("no Idle task ran in 100 tries")
	}
	p.Stop() // without an Idle run: nothing
}

func TestIdleSerialPool(t *testing.T) {
	p := New(1)
	defer p.Close()
	j := &slowJob{hits: make([]atomic.Int32, 5), who: make([]atomic.Int32, 5)}
	p.Idle(j, 5)
	p.Stop()
	for i := range j.hits {
		if j.hits[i].Load() != 0 {
			t.Fatalf("a one-worker pool ran Idle task %d", i)
		}
	}
}
