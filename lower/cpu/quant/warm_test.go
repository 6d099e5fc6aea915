package quant

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gelo/device/wire"
	"gelo/lower/cpu/pool"
)

// TestWarm: Warm reads the starts of the matvec's first tasks (one a
// worker, the rows MatMulQ gives them, at most warmTaskBytes each), goes on
// where it was ended when called again for the same matrix, starts over
// once the matvec ran, and leaves the product's bits alone.
func TestWarm(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, workers := range []int{1, 2, 3} {
		c := NewCtx(workers)
		for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0, wire.Q4_K} {
			for _, sh := range [][2]int{{256, 40}, {1024, 3072}, {1024, 8192}} {
				k, n := sh[0], sh[1]
				w, err := wire.Quantize(f, randData(rng, n*k, 0.1), n, k)
				if err != nil {
					t.Fatal(err)
				}
				for _, lay := range []wire.Layout{wire.RowMajor, LayoutFor(f)} {
					wl := *w
					wl.Data = slices.Clone(w.Data)
					if err := wl.InterleaveTo(lay); err != nil {
						t.Fatal(err)
					}
					var a wire.Activations
					if err := a.Quantize(randData(rng, k, 1), 1, k); err != nil {
						t.Fatal(err)
					}
					want := make([]float32, n)
					if err := c.MatMulQ(want, &a, &wl, nil); err != nil {
						t.Fatal(err)
					}
					c.Warm(&wl)
					starts, ends := c.warm.Ranges()
					unit, ldw := mvUnit(&wl), wl.RowBytes()
					tasks := mvTasks(n, ldw, max(1, n/unit), workers)
					if len(starts) != min(tasks, workers) {
						t.Fatalf("%v %v %dx%d, %d workers: %d tasks warmed, want %d", f, lay, n, k, workers, len(starts), min(tasks, workers))
					}
					for i := range starts {
						r0, r1 := taskRows(n, unit, tasks, i)
						if starts[i] != r0*ldw || ends[i] != min(r1*ldw, r0*ldw+pool.WarmTaskBytes) {
							t.Fatalf("%v %v %dx%d: task %d warms [%d, %d), want rows [%d, %d) of %d bytes", f, lay, n, k, i, starts[i], ends[i], r0, r1, ldw)
						}
					}
					time.Sleep(50 * time.Microsecond)
					c.Warm(&wl) // goes on (or finds it done)
					c.pool.Stop()
					got := make([]float32, n)
					if err := c.MatMulQ(got, &a, &wl, nil); err != nil {
						t.Fatal(err)
					}
					if c.warm.For(wl.Data) {
						t.Fatal("the matvec left its warming in place: the next step's would do nothing")
					}
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%v %v: y[%d] = %v after Warm, %v before", f, lay, i, got[i], want[i])
						}
					}
				}
			}
		}
		c.Close()
	}
}
