package quant

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"gelo/device/wire"
)

// TestAMXUnderPreemption: the AMX kernels keep their tile state across
// context switches. Four goroutines per CPU, each on its own one-worker
// Ctx (so the OS deschedules threads in the middle of kernel calls), run
// Q8_0, Q4_0 and Q4_K GEMMs on the tiles for about a second, and every
// result must equal the VNNI kernels' bit for bit. A guest kernel that
// dropped tile data at a deschedule (reported of some Firecracker guests)
// fails it.
func TestAMXUnderPreemption(t *testing.T) {
	if !defaultAMX {
		t.Skip("no AMX tiles granted here")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	const m, k, n = 32, 1024, 64
	type job struct {
		a    wire.Activations
		w    *wire.Matrix
		want []float32
	}
	var jobs []*job
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0, wire.Q4_K} {
		w, err := wire.Quantize(f, randData(rng, n*k, 0.1), n, k)
		if err != nil {
			t.Fatal(err)
		}
		j := &job{w: interleavedAs(t, w, wire.Interleaved16), want: make([]float32, m*n)}
		if err := j.a.Quantize(randData(rng, m*k, 1), m, k); err != nil {
			t.Fatal(err)
		}
		c := NewCtx(1)
		withAsm(modeAVX512, func() {
			if err := c.MatMulQ(j.want, &j.a, j.w, nil); err != nil {
				t.Fatal(err)
			}
		})
		c.Close()
		jobs = append(jobs, j)
	}
	deadline := time.Now().Add(time.Second)
	var mu sync.Mutex
	calls, bad := 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 4*runtime.NumCPU(); g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewCtx(1)
			defer c.Close()
			y := make([]float32, m*n)
			mine, wrong := 0, 0
			for i := 0; time.Now().Before(deadline); i++ {
				j := jobs[i%len(jobs)]
				if err := c.MatMulQ(y, &j.a, j.w, nil); err != nil {
					t.Error(err)
					return
				}
				mine++
				if firstDiff(y, j.want) >= 0 {
					wrong++
				}
			}
			mu.Lock()
			calls, bad = calls+mine, bad+wrong
			mu.Unlock()
		}()
	}
	wg.Wait()
	if bad > 0 {
		t.Fatalf("%d of %d AMX GEMMs differ from the VNNI kernels' bits under preemption", bad, calls)
	}
	t.Logf("%d AMX GEMMs on %d goroutines, all bit-identical to the VNNI kernels'", calls, 4*runtime.NumCPU())
}
