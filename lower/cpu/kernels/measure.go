package kernels

import (
	"math"
	"slices"
	"time"
	"unsafe"
)

type measureJob struct {
	buf   []float32
	per   int // floats per task
	tasks int // tasks that read (the others idle): the worker count probed
	iters int
	flops bool
	bf16  bool      // with flops: the bf16 dot product's loop, not the FMAs'
	sums  []float32 // one per task, keeps the reads alive
}

func (j *measureJob) do(_ *Ctx, task, _ int) {
	if j.flops {
		if j.bf16 {
			bf16DotLoop(j.iters)
		} else {
			fmaLoop(j.iters)
		}
		return
	}
	if task < j.tasks {
		j.sums[task] = sum64(j.buf[task*j.per:], j.per)
	}
}

// BandwidthSample is one point of ProbeBandwidth: a buffer of Bytes read
// by Workers workers, Passes timed passes, the best and the median pass in
// GB/s (1e9 bytes/s).
type BandwidthSample struct {
	Bytes, Workers, Passes int
	Best, Median           float64
}

// ProbeBandwidth measures what c's machine can stream, so that a decode
// bound is one no engine exceeds: for each buffer size (keep them well past
// the last-level cache) and each worker count from 1 to c.Workers(), the
// buffer is split into one disjoint part per reading worker, summed with
// the vector kernel passes times after one warm-up, and the best and median
// pass are kept. Each size is a fresh buffer (a VM may place buffers in
// slower or faster memory: the samples show it). Bound is the largest Best
// over the samples. It allocates; it is meant for benchmarks.
func ProbeBandwidth(c *Ctx, sizes []int, passes int) []BandwidthSample {
	var out []BandwidthSample
	w := c.Workers()
	passes = max(passes, 1)
	for _, size := range sizes {
		n := max(size, 1<<20) / 4 / w / 64 * 64 * w
		buf := make([]float32, n)
		for i := range buf {
			buf[i] = 1
		}
		for readers := 1; readers <= w; readers++ {
			bytes, times := c.readPasses(buf, readers, passes)
			out = append(out, BandwidthSample{Bytes: bytes, Workers: readers, Passes: passes,
				Best: float64(bytes) / times[0] / 1e9, Median: float64(bytes) / times[len(times)/2] / 1e9})
		}
		buf = nil
	}
	return out
}

// BandwidthBound is the largest Best of the samples: the figure a decode
// bound divides by (0 without samples).
func BandwidthBound(s []BandwidthSample) float64 {
	best := 0.0
	for _, x := range s {
		best = max(best, x.Best)
	}
	return best
}

// MeasureReadBandwidth returns the read bandwidth in GB/s (1e9 bytes/s) of
// the machine as seen by c's workers: a buffer of bytes bytes (make it
// larger than the last-level cache; at least 64 MiB is used) is split into
// one disjoint part per worker, every worker sums its part with the vector
// kernel, and the median of 8 timed passes (after one warm-up) is reported:
// on a shared machine the best pass is an outlier that no decode step sees.
// It allocates the buffer; it is meant for benchmarks.
func MeasureReadBandwidth(c *Ctx, bytes int) float64 {
	n := max(bytes, 64<<20) / 4
	w := c.Workers()
	per := n / w / 64 * 64
	buf := make([]float32, per*w)
	for i := range buf {
		buf[i] = 1
	}
	bytes, times := c.readPasses(buf, w, 8)
	return float64(bytes) / times[len(times)/2] / 1e9
}

// readPasses has readers of c's workers sum disjoint parts of buf, passes
// timed passes after one warm-up, and returns the bytes one pass reads and
// the pass times in seconds, sorted.
func (c *Ctx) readPasses(buf []float32, readers, passes int) (int, []float64) {
	j := &c.meas
	j.buf, j.per, j.tasks, j.flops, j.sums = buf, len(buf)/readers/64*64, readers, false, make([]float32, c.Workers())
	times := make([]float64, 0, passes)
	for pass := 0; pass <= passes; pass++ {
		t0 := time.Now()
		c.run(j, c.Workers())
		if pass > 0 {
			times = append(times, time.Since(t0).Seconds())
		}
	}
	bytes := j.per * readers * 4
	j.buf, j.sums = nil, nil
	slices.Sort(times)
	return bytes, times
}

// MeasurePeakGFLOPS returns the float32 FMA peak of c's workers in GFLOP/s:
// every worker runs a register-only loop of 12 independent 8-wide FMA
// chains (the assembly kernel; the Go fallback where there is none), best of
// 8 timed passes after a warm-up.
func MeasurePeakGFLOPS(c *Ctx) float64 { return measurePeak(c, false) }

// MeasurePeakBF16DotGFLOPS is MeasurePeakGFLOPS for the bf16 dot product
// (AVX512_BF16 VDPBF16PS, 12 independent chains: each instruction 32 pair
// products and their sums, counted as 2 flops a product, as the FMAs'),
// or 0 where it does not run (HasBF16Dot). Its ratio to the FMA peak says
// whether the bf16dot mode can be faster than the exact bf16 path here: on
// the Intel Xeon kind it was half.
func MeasurePeakBF16DotGFLOPS(c *Ctx) float64 {
	if !useBF16Dot {
		return 0
	}
	return measurePeak(c, true)
}

func measurePeak(c *Ctx, bf16 bool) float64 {
	const iters = 1 << 20 // 192 flops each
	w := c.Workers()
	j := &c.meas
	j.iters, j.flops, j.bf16 = iters, true, bf16
	best := math.Inf(1)
	for pass := 0; pass < 9; pass++ {
		t0 := time.Now()
		c.run(j, w)
		dt := time.Since(t0).Seconds()
		if pass > 0 && dt < best {
			best = dt
		}
	}
	j.flops, j.bf16 = false, false
	return float64(w) * iters * 192 / best / 1e9
}

// ReadBuffers sums the buffers of bufs with the probe's vector kernel in
// one pool run: each worker reads its part of every buffer (one disjoint
// part per worker, whole 256-byte runs; a remainder shorter than that is
// left unread), the buffers in order, with no wait between them, and it
// returns the bytes read. It is a decode step's weight traffic with neither
// its arithmetic nor its waits at every matmul: what no engine that reads
// those bytes beats, timed by a benchmark alongside the steps (the
// bandwidth of a shared machine moves between phases, and a bound measured
// at another moment says little about the step next to it). The bytes are
// summed as float32 values whatever they hold; the sum is discarded.
func (c *Ctx) ReadBuffers(bufs [][]byte) int {
	w := c.Workers()
	j := &c.readBufs
	j.bufs, j.workers, j.sums = j.bufs[:0], w, make([]float32, w)
	total := 0
	for _, b := range bufs {
		n := len(b) / 4 / w / 64 * 64 * w
		if n == 0 {
			continue
		}
		j.bufs = append(j.bufs, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n))
		total += 4 * n
	}
	if total > 0 {
		c.run(j, w)
	}
	clear(j.bufs)
	return total
}

// readBufsJob: task t sums part t of every buffer, in order.
type readBufsJob struct {
	bufs    [][]float32
	workers int
	sums    []float32 // one per task, keeps the reads alive
}

func (j *readBufsJob) do(_ *Ctx, task, _ int) {
	var s float32
	for _, b := range j.bufs {
		per := len(b) / j.workers
		s += sum64(b[task*per:], per)
	}
	j.sums[task] = s
}
