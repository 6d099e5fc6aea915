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

// TestQuantizeActAsm: the assembly quantizer (where it runs) gives the
// bits of wire.QuantizeActBlock on every block: random data at scales from
// subnormal to near the float32 maximum, exact ties (x * id = n + 0.5,
// which round away from zero), signed zeros, all-zero blocks, subnormal
// blocks whose 1/d overflows, and NaNs and infinities (those blocks go to
// the Go code, the blocks after them back to the assembly).
func TestQuantizeActAsm(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly quantizer here")
	}
	const qk = wire.QK
	rng := rand.New(rand.NewPCG(3, 9))
	var x []float32
	block := func(f func(i int) float32) {
		for i := 0; i < qk; i++ {
			x = append(x, f(i))
		}
	}
	for _, sc := range []float32{1e-40, 1e-38, 1e-30, 1e-6, 1, 3.5, 1e6, 1e30, 3e38} {
		for range 64 {
			block(func(int) float32 { return float32(rng.NormFloat64()) * sc })
		}
	}
	// amax = 127: id = 1 (d = 1), and every k + 0.5 is a tie.
	block(func(i int) float32 {
		if i == 0 {
			return 127
		}
		return float32(i%64-32) + 0.5
	})
	block(func(i int) float32 { // amax = 254: id = 0.5, x = 2k+1 ties
		if i == 0 {
			return -254
		}
		return float32(2*(i%32) - 31)
	})
	block(func(int) float32 { return 0 })
	block(func(i int) float32 { return float32(math.Copysign(0, float64(i%2*2-1))) })
	block(func(i int) float32 { return math.Float32frombits(uint32(i + 1)) })       // tiny subnormals: 1/d overflows
	block(func(i int) float32 { return math.Float32frombits(uint32(i+1) | 1<<31) }) // negative ones
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		block(func(i int) float32 {
			if i == 7 {
				return bad
			}
			return float32(rng.NormFloat64())
		})
		block(func(int) float32 { return float32(rng.NormFloat64()) })
	}
	for range 1 << 12 { // random bit patterns (NaNs, infinities, subnormals)
		block(func(int) float32 { return math.Float32frombits(rng.Uint32()) })
	}
	checkQuantizeBlocks(t, x)
}

// checkQuantizeBlocks fails t unless quantizeBlocks gives every whole
// block of x the bits of wire.QuantizeActBlock.
func checkQuantizeBlocks(t testing.TB, x []float32) {
	const qk = wire.QK
	n := len(x) / qk
	q, d, s := make([]int8, n*qk), make([]float32, n), make([]int32, n)
	quantizeBlocks(q, d, s, x)
	wq := make([]int8, qk)
	for b := 0; b < n; b++ {
		wd, ws := wire.QuantizeActBlock(wq, x[b*qk:(b+1)*qk])
		if math.Float32bits(d[b]) != math.Float32bits(wd) || s[b] != ws {
			t.Fatalf("block %d: d %v sum %d, want %v %d", b, d[b], s[b], wd, ws)
		}
		for i := range wq {
			if q[b*qk+i] != wq[i] {
				t.Fatalf("block %d quant %d (x %v): %d, want %d", b, i, x[b*qk+i], q[b*qk+i], wq[i])
			}
		}
	}
}

// FuzzQuantizeActAsm: any float32 bit patterns, the assembly quantizer's
// blocks against wire.QuantizeActBlock's.
func FuzzQuantizeActAsm(f *testing.F) {
	f.Add(make([]byte, 4*wire.QK))
	f.Add([]byte{0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x3f})
	f.Fuzz(func(t *testing.T, raw []byte) {
		const qk = wire.QK
		n := len(raw) / (4 * qk)
		if n == 0 {
			return
		}
		x := make([]float32, n*qk)
		for i := range x {
			x[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
		}
		checkQuantizeBlocks(t, x)
	})
}
