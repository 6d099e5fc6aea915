package kernels

import (
	"math/rand/v2"
	"testing"
	"time"

	"gelo/lower/cpu/pool"
)

// TestWarmMatVec: the warming reads the starts of the one-row product's
// first tasks (one a worker, the rows the decode split gives them, at most
// pool.WarmTaskBytes each), the product starts it over, and its bits are
// the same with or without it.
func TestWarmMatVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, workers := range []int{1, 2, 3} {
		c := NewCtx(workers)
		for _, sh := range [][2]int{{64, 40}, {1024, 3072}, {1024, 8192}, {1000, 1024}} {
			k, n := sh[0], sh[1]
			x, w := randSlice(rng, k), randSlice(rng, n*k)
			wb := make([]uint16, n*k)
			RoundBF16(wb, w)
			for _, kind := range []string{"f32", "bf16", "bf16dot"} {
				rowBytes := 4 * k
				product := func(y []float32) { c.MatMulT(y, x, w, 1, k, n, nil) }
				warm := func() { c.WarmMatVec(w, k, n) }
				switch kind {
				case "bf16", "bf16dot":
					rowBytes = 2 * k
					dot := kind == "bf16dot"
					product = func(y []float32) { c.MatMulTBF16(y, x, wb, 1, k, n, nil) }
					if dot {
						product = func(y []float32) { c.MatMulTBF16Dot(y, x, wb, 1, k, n, nil) }
					}
					warm = func() { c.WarmMatVecBF16(wb, k, n, dot) }
				}
				want := make([]float32, n)
				product(want)
				warm()
				starts, ends := c.warm.Ranges()
				if kind == "bf16" && (k%8 != 0 || !useAsm) {
					if len(starts) != 0 {
						t.Fatalf("%s %dx%d: warmed a product that widens panels", kind, n, k)
					}
				} else {
					tasks := decodeTasks(n, rowBytes, workers)
					if len(starts) != min(tasks, workers) {
						t.Fatalf("%s %dx%d, %d workers: %d tasks warmed, want %d", kind, n, k, workers, len(starts), min(tasks, workers))
					}
					s := split{m: 1, n: n, colTasks: tasks, rowsPer: 1, rowTasks: 1}
					for i := range starts {
						_, _, j0, j1 := s.bounds(i)
						if starts[i] != j0*rowBytes || ends[i] != min(j1*rowBytes, j0*rowBytes+pool.WarmTaskBytes) {
							t.Fatalf("%s %dx%d: task %d warms [%d, %d), want rows [%d, %d) of %d bytes", kind, n, k, i, starts[i], ends[i], j0, j1, rowBytes)
						}
					}
				}
				time.Sleep(50 * time.Microsecond)
				warm() // goes on (or finds it done)
				got := make([]float32, n)
				product(got)
				if s, _ := c.warm.Ranges(); len(s) != 0 {
					t.Fatalf("%s: the product left its warming in place: the next step's would do nothing", kind)
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s %dx%d: y[%d] = %v after warming, %v before", kind, n, k, i, got[i], want[i])
					}
				}
			}
		}
		c.Close()
	}
}
