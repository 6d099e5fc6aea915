//go:build exhaustive

package kernels

import (
	"math"
	"sync"
	"testing"
)

// TestExpfExhaustive runs every float32 input (all 2^32 bit patterns)
// through the widest vector exp (expSumVec) and checks it against Go's
// expf, bit for bit (any NaN for a NaN): the check behind EXPF512's
// VSCALEFPS scaling. About 30 s on 2 cores, so behind a build tag:
//
//	go test -tags exhaustive -run TestExpfExhaustive ./lower/cpu/kernels
func TestExpfExhaustive(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly kernels")
	}
	const chunk = 1 << 16
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		bad int
	)
	const workers = 4
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]float32, chunk)
			var sums [4]float64
			for base := uint64(w) * chunk; base < 1<<32; base += workers * chunk {
				for i := range buf {
					buf[i] = math.Float32frombits(uint32(base) + uint32(i))
				}
				expSumVec(buf, chunk, 0, &sums)
				for i, got := range buf {
					x := math.Float32frombits(uint32(base) + uint32(i))
					want := expf(x)
					if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
						mu.Lock()
						if bad < 10 {
							t.Errorf("expf(%v [%08x]): vector %v, Go %v", x, math.Float32bits(x), got, want)
						}
						bad++
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	if bad > 0 {
		t.Fatalf("%d of 2^32 inputs differ", bad)
	}
}
