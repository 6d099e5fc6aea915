package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"unsafe"
)

// BenchmarkDecodeStream reads buffers the way a decode step reads its
// weights: one Qwen3-0.6B layer's seven matrices (q4_0 sizes: 18 bytes per
// 32 weights) in turn, each split into one part per worker and summed by
// the probe's kernel, a pool run per matrix, over enough layers to exceed
// the last-level cache. It is the streaming rate that the access pattern
// itself allows, with no arithmetic: what a decode kernel can hope for, next
// to ProbeBandwidth's one long pass.
func BenchmarkDecodeStream(b *testing.B) {
	shapes := [][2]int{{1024, 2048}, {1024, 1024}, {1024, 1024}, {2048, 1024}, {1024, 3072}, {1024, 3072}, {3072, 1024}}
	var sizes []int // floats
	bytes := 0
	for _, s := range shapes {
		n := s[0] * s[1] * 18 / 32 / 4 / 64 * 64
		sizes = append(sizes, n)
		bytes += 4 * n
	}
	layers := coldBytes/bytes + 1
	bufs := make([][]float32, layers*len(sizes))
	for i := range bufs {
		bufs[i] = make([]float32, sizes[i%len(sizes)])
		for t := range bufs[i] {
			bufs[i][t] = 1
		}
	}
	for _, split := range []int{0, 8} {
		b.Run(fmt.Sprintf("tasks-per-worker=%d", max(1, split)), func(b *testing.B) {
			c := NewCtx(0)
			defer c.Close()
			w := c.Workers()
			tasks := w * max(1, split)
			b.SetBytes(int64(bytes))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l := i % layers
				for m := range sizes {
					c.sumParts(bufs[l*len(sizes)+m], tasks)
				}
			}
			b.StopTimer()
			b.ReportMetric(probeBound(), "probe-GB/s")
		})
	}
}

// BenchmarkDecodeLayers streams the matmuls of a decode step on f32 and
// bf16 weights the way the engine does (one activation row, each of one
// Qwen3-0.6B layer's seven matrices in turn: q, k, v, o, gate, up, down),
// over enough copies of the layer to exceed the last-level cache
// (GELO_BENCH_LAYERS=28 holds the whole model's layers). MB/s is weight
// bytes per second; the -read runs sum the same buffers with the probe's
// kernel, split as the matvec splits them: the rate the pattern allows.
func BenchmarkDecodeLayers(b *testing.B) {
	shapes := [][2]int{{1024, 2048}, {1024, 1024}, {1024, 1024}, {2048, 1024}, {1024, 3072}, {1024, 3072}, {3072, 1024}} // in (k), out (n)
	rng := rand.New(rand.NewPCG(5, 5))
	x := randSlice(rng, 3072)
	y := make([]float32, 3072)
	for _, format := range []string{"f32", "bf16"} {
		esize := 4
		if format == "bf16" {
			esize = 2
		}
		bytes := 0
		for _, s := range shapes {
			bytes += s[0] * s[1] * esize
		}
		layers := coldBytes/bytes + 1
		if n, err := strconv.Atoi(os.Getenv("GELO_BENCH_LAYERS")); err == nil && n > 0 {
			layers = n
		}
		var w32 [][]float32
		var w16 [][]uint16
		for l := 0; l < layers; l++ {
			for _, s := range shapes {
				if esize == 4 {
					w32 = append(w32, randSlice(rng, s[0]*s[1]))
				} else {
					h, _ := bf16Slice(rng, s[0]*s[1])
					w16 = append(w16, h)
				}
			}
		}
		// buf is matrix i as float32s (a bf16 one reinterpreted, for -read).
		buf := func(i int) []float32 {
			if esize == 4 {
				return w32[i]
			}
			return unsafe.Slice((*float32)(unsafe.Pointer(&w16[i][0])), len(w16[i])/2)
		}
		b.Run(format, func(b *testing.B) {
			c := NewCtx(0)
			defer c.Close()
			b.SetBytes(int64(bytes))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l := i % layers
				for m, s := range shapes {
					if esize == 4 {
						c.MatMulT(y, x, w32[l*len(shapes)+m], 1, s[0], s[1], nil)
					} else {
						c.MatMulTBF16(y, x, w16[l*len(shapes)+m], 1, s[0], s[1], nil)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(probeBound(), "probe-GB/s")
		})
		b.Run(format+"-read", func(b *testing.B) {
			c := NewCtx(0)
			defer c.Close()
			b.SetBytes(int64(bytes))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l := i % layers
				for m := range shapes {
					w := buf(l*len(shapes) + m)
					c.sumParts(w, max(1, len(w)*4/(128<<10))) // the matvec's 128 KiB tasks
				}
			}
		})
	}
}

// sumParts has c's workers sum buf in tasks disjoint parts with the
// probe's kernel (one pool run): a bare read of it.
func (c *Ctx) sumParts(buf []float32, tasks int) {
	j := &c.meas
	if len(j.sums) < tasks {
		j.sums = make([]float32, tasks)
	}
	j.buf, j.per, j.tasks, j.flops = buf, len(buf)/tasks/64*64, tasks, false
	c.run(j, tasks)
}
