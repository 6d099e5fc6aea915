package lwe

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchWidths are the input widths of Qwen3-0.6B/4B (1024, 2560) and 8B
// (4096); d_out = d_in, lambda = 4096, h = 80 (Default).
var benchWidths = []int{1024, 2560, 4096}

// benchSetup builds A (d_in x 4096, held) and a hint of random words: the
// pad's cost does not depend on H's values, and the true hint would take
// d_in^2 lambda multiply-adds to make.
func benchSetup(b *testing.B, in int) (*Weights, *Public, *Hint) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, uint64(in)))
	fw := floatWeights(wGauss, in, in, rng)
	w, err := Quantize(fw, in, in)
	if err != nil {
		b.Fatal(err)
	}
	a, err := NewPublic(testSeed(1), in, Default.Lambda)
	if err != nil {
		b.Fatal(err)
	}
	ht := make([]uint32, in*Default.Lambda)
	for i := range ht {
		ht[i] = rng.Uint32()
	}
	h, _ := NewHint(in, Default.Lambda, ht)
	return w, a, h
}

// BenchmarkPad: one pad (m = A s + e, u = H s) per op, keying included.
func BenchmarkPad(b *testing.B) {
	for _, in := range benchWidths {
		b.Run(fmt.Sprintf("d_in=%d", in), func(b *testing.B) {
			_, a, h := benchSetup(b, in)
			g, err := NewPadGen(Default, a, []*Hint{h}, testKey, "bench")
			if err != nil {
				b.Fatal(err)
			}
			pad := g.New()
			b.ResetTimer()
			for n := 0; b.Loop(); n++ {
				_ = g.Fill(uint64(n), pad)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/row")
		})
	}
}

// BenchmarkEncode: x_q and c = m + Delta x_q for one row per op.
func BenchmarkEncode(b *testing.B) {
	for _, in := range benchWidths {
		b.Run(fmt.Sprintf("d_in=%d", in), func(b *testing.B) {
			w := quantized(b, wGauss, 8, in, 1)
			enc, err := NewEncoder(Default, w)
			if err != nil {
				b.Fatal(err)
			}
			x := activation(xGauss, w, rand.New(rand.NewPCG(2, 2)))
			pad := &Pad{M: make([]uint32, in)}
			c := make([]uint32, in)
			b.ResetTimer()
			for b.Loop() {
				pad.mFresh = true
				if _, err := enc.Encode(x, pad, c); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/row")
		})
	}
}

// BenchmarkDecode: centre, range check and rescale of d_out = d_in outputs
// per op.
func BenchmarkDecode(b *testing.B) {
	for _, in := range benchWidths {
		b.Run(fmt.Sprintf("d_in=%d", in), func(b *testing.B) {
			w := quantized(b, wGauss, in, in, 1)
			enc, _ := NewEncoder(Default, w)
			x := activation(xGauss, w, rand.New(rand.NewPCG(2, 2)))
			pad := &Pad{M: make([]uint32, in), U: [][]uint32{make([]uint32, in)}, uFresh: []bool{true}}
			c := make([]uint32, in)
			row, _ := enc.Encode(x, pad, c)
			y, v, out := make([]uint32, in), make([]int32, in), make([]float32, in)
			_ = MulRef(w, c, y)
			b.ResetTimer()
			for b.Loop() {
				pad.uFresh[0] = true
				if err := Decode(w, row, y, pad, 0, v, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/row")
		})
	}
}

// BenchmarkMulRef: the portable device product (and the TEE's hint
// kernel), 16 rows of d_in = d_out = 1024 per op; reports multiply-adds a
// nanosecond, from which ComputeHint's time is d_out d_in lambda / rate.
func BenchmarkMulRef(b *testing.B) {
	const in, rows = 1024, 16
	w := quantized(b, wGauss, in, in, 1)
	c := make([]uint32, rows*in)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range c {
		c[i] = rng.Uint32()
	}
	y := make([]uint32, rows*in)
	for b.Loop() {
		mulRef(w, c, y)
	}
	b.ReportMetric(float64(rows*in*in)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "MAC/ns")
}

// BenchmarkPadBatch: the per-row cost of Fill (one pad at a time) and
// FillBatch (one worker, so the two compare on one core) at the Qwen3-8B
// widths: d_in 4096, one hint of the fused qkv (d_out 6144) or gate|up
// (24576) product, lambda 4096, h 80, for 1, 64, 308 and 2048 rows.
// Reports ns/row and the public words each row reads from memory
// (pubMB/row): h (d_in + d_out) words for Fill and for batches too small
// to touch, lambda (d_in + d_out) / rows for a touched one. Setup expands A and a
// random hint (the cost does not depend on H's values); run with
// -benchtime=1x: one op of 2048 gate|up rows is about a second of Fill.
func BenchmarkPadBatch(b *testing.B) {
	const in = 4096
	p := Default
	a, err := NewPublic(testSeed(1), in, p.Lambda)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for _, hint := range []struct {
		name string
		out  int
	}{{"qkv", 6144}, {"gateup", 24576}} {
		ht := make([]uint32, hint.out*p.Lambda)
		for i := range ht {
			ht[i] = rng.Uint32()
		}
		h, _ := NewHint(hint.out, p.Lambda, ht)
		g, err := NewPadGen(p, a, []*Hint{h}, testKey, "bench")
		if err != nil {
			b.Fatal(err)
		}
		for _, rows := range []int{1, 64, 308, 2048} {
			pads := make([]*Pad, rows)
			for r := range pads {
				pads[r] = g.New()
				fillWords(pads[r], 1) // fault its pages in before either mode is timed
			}
			for _, mode := range []string{"fill", "batch"} {
				b.Run(fmt.Sprintf("%s/rows=%d/%s", hint.name, rows, mode), func(b *testing.B) {
					var n uint64
					for b.Loop() {
						if mode == "fill" {
							for _, pad := range pads {
								if err := g.Fill(n, pad); err != nil {
									b.Fatal(err)
								}
								n++
							}
						} else {
							if err := g.FillBatch(n, pads, 1); err != nil {
								b.Fatal(err)
							}
							n += uint64(rows)
						}
					}
					cols := float64(p.H)
					if mode == "batch" && touched(rows, p.H, p.Lambda) {
						cols = float64(p.Lambda) / float64(rows)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
					b.ReportMetric(4*cols*float64(in+hint.out)/1e6, "pubMB/row")
				})
			}
		}
		g.Forget()
	}
}
