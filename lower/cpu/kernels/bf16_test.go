package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// bf16Slice returns n random bf16 weights and their f32 widening.
func bf16Slice(rng *rand.Rand, n int) ([]uint16, []float32) {
	h, f := make([]uint16, n), make([]float32, n)
	for i := range h {
		h[i] = uint16(math.Float32bits(rng.Float32()*2-1) >> 16)
		f[i] = math.Float32frombits(uint32(h[i]) << 16)
	}
	return h, f
}

// MatMulTBF16 must give exactly MatMulT's bits on the widened weights, for
// every path (in-register decode matvec, in-register AVX-512 GEMM tiles,
// widened panels, each kernel mode), shape, tail and worker count.
func TestMatMulTBF16MatchesF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	ctxs := map[int]*Ctx{}
	for _, w := range []int{1, 2, 3} {
		ctxs[w] = withCtx(t, w)
	}
	type shape struct{ m, k, n int }
	shapes := []shape{{1, 1, 1}, {1, 8, 8}, {1, 16, 9}, {2, 24, 17}, {3, 7, 30}, {1, 1024, 200},
		{4, 64, 3}, {5, 33, 19}, {6, 128, 8}, {9, 257, 31}, {70, 130, 301}, {1, 1032, 8*40 + 5},
		{2, 2048, 96*2 + 5}, {130, 1031, 96*2 + 5},
		// m >= 6, k%8 == 0, n >= 8: the in-register 6x8 GEMM (AVX-512),
		// with several panels, row blocks, shifted row groups and tail tiles;
		// then blocks too narrow or too short for it.
		{16, 1024, 200}, {16, 3072, 64}, {130, 1032, 96*2 + 5}, {7, 8, 9}, {6, 16, 8},
		{8, 64, 5}, {5, 64, 19},
		// Row blocks that pack their weight panel (packTiles), the last
		// row group shifted back, panels with tail tiles.
		{packMinRows, 1024, 200}, {2*packedRowBlock + 7, 64, 96*2 + 5}}
	for _, mode := range asmModes() {
		setMode(t, mode)
		for _, s := range shapes {
			x := randSlice(rng, s.m*s.k)
			wh, wf := bf16Slice(rng, s.n*s.k)
			bias := randSlice(rng, s.n)
			for _, b := range [][]float32{nil, bias} {
				want := make([]float32, s.m*s.n)
				ctxs[1].MatMulT(want, x, wf, s.m, s.k, s.n, b)
				for nw, c := range ctxs {
					got := make([]float32, s.m*s.n)
					c.MatMulTBF16(got, x, wh, s.m, s.k, s.n, b)
					if i := bitsEqual(got, want); i >= 0 {
						t.Fatalf("%v %+v bias=%v workers=%d: y[%d]=%v, f32 weights give %v", mode, s, b != nil, nw, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func TestWidenBF16(t *testing.T) {
	for _, mode := range asmModes() {
		setMode(t, mode)
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100} {
			src := make([]uint16, n)
			for i := range src {
				src[i] = uint16(i*2654435761>>7) ^ 0x8001 // signs, NaN and Inf patterns included
			}
			dst := make([]float32, n+1)
			dst[n] = 42
			widenBF16(dst[:n], src)
			for i, h := range src {
				if math.Float32bits(dst[i]) != uint32(h)<<16 {
					t.Fatalf("%v n=%d: widen(%#04x) = %#08x", mode, n, h, math.Float32bits(dst[i]))
				}
			}
			if dst[n] != 42 {
				t.Fatalf("%v n=%d: wrote past the end", mode, n)
			}
		}
	}
}

func TestMatMulTBF16NoAllocs(t *testing.T) {
	c := withCtx(t, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range []int{1, 16} {
		k, n := 256, 512
		x := randSlice(rng, m*k)
		wh, _ := bf16Slice(rng, n*k)
		y := make([]float32, m*n)
		c.MatMulTBF16(y, x, wh, m, k, n, nil) // scratch grows once
		if a := testing.AllocsPerRun(5, func() { c.MatMulTBF16(y, x, wh, m, k, n, nil) }); a != 0 {
			t.Errorf("m=%d: %v allocations per call", m, a)
		}
	}
}

func BenchmarkMatVecBF16(b *testing.B) {
	for _, sz := range [][2]int{{1024, 3072}, {3072, 1024}, {1024, 151936}} {
		k, n := sz[0], sz[1]
		for _, format := range []string{"f32", "bf16", "bf16dot"} {
			b.Run(fmt.Sprintf("in%d_out%d/%s", k, n, format), func(b *testing.B) {
				c := NewCtx(0)
				defer c.Close()
				x := randSlice(rand.New(rand.NewPCG(2, 2)), k)
				y := make([]float32, n)
				machine()
				if format == "f32" {
					ws := coldSet(n, k)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						c.MatMulT(y, x, ws[i%len(ws)], 1, k, n, nil)
					}
					b.StopTimer()
					reportBW(b, int64(n*k*4))
					return
				}
				ws := make([][]uint16, max(1, coldBytes/(n*k*2)+1)) // > the LLC, as coldSet
				for i := range ws {
					ws[i], _ = bf16Slice(rand.New(rand.NewPCG(uint64(i), 9)), n*k)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if format == "bf16dot" {
						c.MatMulTBF16Dot(y, x, ws[i%len(ws)], 1, k, n, nil)
					} else {
						c.MatMulTBF16(y, x, ws[i%len(ws)], 1, k, n, nil)
					}
				}
				b.StopTimer()
				reportBW(b, int64(n*k*2))
			})
		}
	}
}

// BenchmarkGEMMBF16: a 16-row product (a protected decode step), a 128-row
// one and a 512-row one at the gate/up shape (prefill) with f32 weights, bf16 weights widened (exact) and
// the bf16 dot product (bf16dot), cold (cycling through more than the LLC).
func BenchmarkGEMMBF16(b *testing.B) {
	for _, sz := range [][3]int{{16, 1024, 3072}, {16, 3072, 1024}, {128, 1024, 3072}, {512, 1024, 6144}} {
		m, k, n := sz[0], sz[1], sz[2]
		for _, format := range []string{"f32", "bf16", "bf16dot"} {
			b.Run(fmt.Sprintf("m%d_k%d_n%d/%s", m, k, n, format), func(b *testing.B) {
				c := NewCtx(0)
				defer c.Close()
				x := randSlice(rand.New(rand.NewPCG(2, 2)), m*k)
				y := make([]float32, m*n)
				_, peak := machine()
				var bytes int64
				if format == "f32" {
					ws := coldSet(n, k)
					bytes = int64(n * k * 4)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						c.MatMulT(y, x, ws[i%len(ws)], m, k, n, nil)
					}
				} else {
					ws := make([][]uint16, max(1, coldBytes/(n*k*2)+1)) // > the LLC, as coldSet
					for i := range ws {
						ws[i], _ = bf16Slice(rand.New(rand.NewPCG(uint64(i), 9)), n*k)
					}
					bytes = int64(n * k * 2)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if format == "bf16dot" {
							c.MatMulTBF16Dot(y, x, ws[i%len(ws)], m, k, n, nil)
						} else {
							c.MatMulTBF16(y, x, ws[i%len(ws)], m, k, n, nil)
						}
					}
				}
				b.StopTimer()
				reportBW(b, bytes)
				g := 2 * float64(m*k*n) * float64(b.N) / b.Elapsed().Seconds() / 1e9
				b.ReportMetric(g, "GFLOP/s")
				b.ReportMetric(100*g/peak, "%peak")
				if format == "bf16dot" && peakD > 0 {
					b.ReportMetric(100*g/peakD, "%dotpeak") // of the bf16 dot product's own peak
				}
			})
		}
	}
}
