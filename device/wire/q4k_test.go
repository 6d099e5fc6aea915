package wire_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"gelo/device/wire"
	"gelo/models/gguf"
)

// TestQ4_KRoundTrip quantizes random data (Gaussian, heavy-tailed and
// offset super-blocks) and checks every value decodes within the format's
// error: one quant step of its sub-block's range/15 (the fit may clip an
// outlier by up to half a step more than rounding's half step), plus the
// 6-bit rounding of the sub-block scale (up to d/2 per level, 15 levels)
// and min (dmin/2); that the RMS error beats Q4_0's on the same data, and that the
// blocks decode to the same bits with models/gguf's dequantizer.
func TestQ4_KRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 16, 1024
	x := make([]float32, rows*cols)
	for i := range x {
		v := float32(rng.NormFloat64())
		switch (i / 256) % 4 {
		case 1:
			v = v*v*v + 0.5 // heavy tail, offset
		case 2:
			v = 3 + 0.1*v // all positive: the min matters
		case 3:
			v *= 1e-3
		}
		x[i] = v
	}
	m, err := wire.Quantize(wire.Q4_K, x, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(m.Data), rows*cols/256*144; got != want {
		t.Fatalf("%d bytes, want %d", got, want)
	}
	y := make([]float32, len(x))
	if err := m.Dequantize(y); err != nil {
		t.Fatal(err)
	}
	ref := make([]float32, len(x))
	if err := gguf.Dequantize(gguf.Q4_K, m.Data, ref); err != nil {
		t.Fatal(err)
	}
	for i := range y {
		if math.Float32bits(y[i]) != math.Float32bits(ref[i]) {
			t.Fatalf("value %d: wire %v, gguf %v", i, y[i], ref[i])
		}
	}
	for s := 0; s < len(x)/32; s++ {
		lo, hi := x[32*s], x[32*s]
		for _, v := range x[32*s : 32*s+32] {
			lo, hi = min(lo, v), max(hi, v)
		}
		blk := m.Data[s/8*144:]
		d := float64(f16(blk[0:2]))
		dmin := float64(f16(blk[2:4]))
		bound := float64(hi-min(lo, 0))/15 + 15*d/2 + dmin/2
		for i := 32 * s; i < 32*s+32; i++ {
			if e := math.Abs(float64(y[i] - x[i])); e > 1.001*bound+1e-7 {
				t.Fatalf("value %d (sub-block %d): %v decodes to %v, error %g > bound %g", i, s, x[i], y[i], e, bound)
			}
		}
	}
	q0, err := wire.Quantize(wire.Q4_0, x, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	y0 := make([]float32, len(x))
	if err := q0.Dequantize(y0); err != nil {
		t.Fatal(err)
	}
	var e4k, e40 float64
	for i := range x {
		e4k += float64((y[i] - x[i]) * (y[i] - x[i]))
		e40 += float64((y0[i] - x[i]) * (y0[i] - x[i]))
	}
	if e4k >= e40 {
		t.Fatalf("q4_k squared error %g not below q4_0's %g", e4k, e40)
	}
	t.Logf("squared error q4_k %.4g, q4_0 %.4g", e4k, e40)
}

// TestQ4_KErrors: shapes that are not whole super-blocks, non-finite
// values and an overflowing scale are errors, not panics.
func TestQ4_KErrors(t *testing.T) {
	if _, err := wire.Quantize(wire.Q4_K, make([]float32, 2*96), 2, 96); err == nil {
		t.Fatal("cols 96 accepted")
	}
	x := make([]float32, 256)
	x[3] = float32(math.NaN())
	if err := wire.QuantizeQ4_K(make([]byte, 144), x); err == nil {
		t.Fatal("NaN accepted")
	}
	x[3] = 1e9
	if err := wire.QuantizeQ4_K(make([]byte, 144), x); err == nil {
		t.Fatal("overflowing scale accepted")
	}
	if err := wire.QuantizeQ4_K(make([]byte, 143), make([]float32, 256)); err == nil {
		t.Fatal("short dst accepted")
	}
	if err := wire.DequantizeQ4_K(make([]float32, 256), make([]byte, 145)); err == nil {
		t.Fatal("ragged src accepted")
	}
}

func f16(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }
