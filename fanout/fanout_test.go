package fanout

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

// Every task runs exactly once, each worker index is in range, and the
// caller is not blocked by Start when there are several workers.
func TestEachRunsEveryTaskOnce(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 4}, {1, 4}, {7, 1}, {100, 3}, {5, 0}, {3, 16}} {
		runs := make([]atomic.Int32, tc.n)
		w := Workers(tc.n, tc.workers)
		var bad atomic.Bool
		Each(tc.n, tc.workers, func(worker, i int) {
			if worker < 0 || worker >= w {
				bad.Store(true)
			}
			runs[i].Add(1)
		})
		for i := range runs {
			if runs[i].Load() != 1 {
				t.Errorf("n %d workers %d: task %d ran %d times", tc.n, tc.workers, i, runs[i].Load())
			}
		}
		if bad.Load() {
			t.Errorf("n %d workers %d: a worker index outside [0, %d)", tc.n, tc.workers, w)
		}
	}
}

// The error is the lowest-numbered failure's, whatever the scheduling,
// and every task still runs.
func TestEachErrLowestIndex(t *testing.T) {
	for range 20 {
		var ran atomic.Int32
		err := EachErr(50, 4, func(_, i int) error {
			ran.Add(1)
			if i%7 == 3 {
				return fmt.Errorf("task %d", i)
			}
			return nil
		})
		if err == nil || err.Error() != "task 3" || ran.Load() != 50 {
			t.Fatalf("err %v after %d tasks, want task 3 after 50", err, ran.Load())
		}
	}
	if err := EachErr(10, 2, func(int, int) error { return nil }); err != nil {
		t.Error(err)
	}
	sentinel := errors.New("x")
	if err := EachErr(1, 1, func(int, int) error { return sentinel }); !errors.Is(err, sentinel) {
		t.Error(err)
	}
}

// Start returns before the tasks finish when it has several workers, and
// wait waits for them.
func TestStartOverlaps(t *testing.T) {
	release := make(chan struct{})
	var done atomic.Int32
	wait := Start(4, 2, func(int, int) { <-release; done.Add(1) })
	if done.Load() != 0 {
		t.Fatal("Start waited for its tasks")
	}
	close(release)
	wait()
	if done.Load() != 4 {
		t.Fatalf("%d tasks done after wait", done.Load())
	}
}
