// Package fanout runs n independent tasks on a few goroutines: the one
// fan-out of the load-time work (converting and hashing weights,
// synthesizing them, quantizing to K-quant blocks), where each of those
// wrote its own WaitGroup loop. It is not the kernels' pool
// (lower/cpu/pool), which is tuned for the short, latency-bound runs of a
// forward pass and sits below the packages that load a model; this one
// starts its goroutines per call, which costs nothing next to a load.
// Tasks are claimed in index order from a shared counter, so a result
// must not depend on which goroutine ran a task (each gets its worker
// index, for scratch it owns).
package fanout

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Workers is the number of goroutines Start uses for n tasks: workers
// (GOMAXPROCS when <= 0), at most n, at least 1.
func Workers(n, workers int) int {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return max(1, min(workers, n))
}

// Start runs fn(worker, i) for every i in [0, n), worker in [0,
// Workers(n, workers)), and returns at once; wait blocks until every task
// has run. With one worker the tasks run on the caller, before Start
// returns.
func Start(n, workers int, fn func(worker, i int)) (wait func()) {
	w := Workers(n, workers)
	var next atomic.Int64
	run := func(worker int) {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(worker, i)
		}
	}
	if w == 1 {
		run(0)
		return func() {}
	}
	var wg sync.WaitGroup
	for worker := range w {
		wg.Go(func() { run(worker) })
	}
	return wg.Wait
}

// Each is Start, then wait.
func Each(n, workers int, fn func(worker, i int)) { Start(n, workers, fn)() }

// EachErr runs fn for every task as Each does (every task runs, failed or
// not) and returns the error of the lowest-numbered task that failed, so
// the error does not depend on scheduling.
func EachErr(n, workers int, fn func(worker, i int) error) error {
	errs := make([]error, n)
	Each(n, workers, func(worker, i int) { errs[i] = fn(worker, i) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
