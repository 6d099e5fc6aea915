package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"gelo/device/wire"
)

// TestQuantizeActivationsParallel: the pool's row split gives exactly the
// serial wire.Activations.Quantize result.
func TestQuantizeActivationsParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m, k := 37, 1024
	x := randData(rng, m*k, 1)
	var a, p wire.Activations
	if err := a.Quantize(x, m, k); err != nil {
		t.Fatal(err)
	}
	c := NewCtx(3)
	defer c.Close()
	if err := c.QuantizeActivations(&p, x, m, k); err != nil {
		t.Fatal(err)
	}
	aq, pq := a.Quants(), p.Quants()
	for i := range aq {
		if aq[i] != pq[i] {
			t.Fatalf("quant %d differs", i)
		}
	}
	ad, pd := a.Scales(), p.Scales()
	for i := range ad {
		if math.Float32bits(ad[i]) != math.Float32bits(pd[i]) || a.Sums()[i] != p.Sums()[i] {
			t.Fatalf("block %d differs", i)
		}
	}
}

func randData(rng *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64()) * scale
	}
	return v
}
