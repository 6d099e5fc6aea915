package kernels

import (
	"fmt"
	"testing"
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
	layers := (96<<20)/bytes + 1
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
			j := &c.meas
			j.flops, j.sums = false, make([]float32, tasks)
			b.SetBytes(int64(bytes))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l := i % layers
				for m := range sizes {
					buf := bufs[l*len(sizes)+m]
					j.buf, j.per, j.tasks = buf, len(buf)/tasks/64*64, tasks
					c.run(j, tasks)
				}
			}
			b.StopTimer()
			b.ReportMetric(probeBound(), "probe-GB/s")
		})
	}
}
