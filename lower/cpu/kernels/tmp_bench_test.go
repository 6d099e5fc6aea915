package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
	"testing"
	"time"
)

func cpuNow() float64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}

// bestOf returns the best wall time, or with CPUT=1 the best thread CPU
// time (meaningful with one worker only).
func bestOf(reps int, f func()) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := os.Getenv("CPUT") != ""
	best := 1e9
	for i := 0; i < reps; i++ {
		t0, c0 := time.Now(), cpuNow()
		f()
		d := time.Since(t0).Seconds()
		if cpu {
			d = cpuNow() - c0
		}
		if d < best {
			best = d
		}
	}
	return best
}

func TestTmpPerf(t *testing.T) {
	for _, nw := range []int{1, 2} {
		c := NewCtx(nw)
		peak := MeasurePeakGFLOPS(c)
		for _, m := range []int{16, 128} {
			k, n := 1024, 3072
			rng := rand.New(rand.NewPCG(3, 3))
			x, w := randSlice(rng, m*k), randSlice(rng, n*k)
			y := make([]float32, m*n)
			d := bestOf(30, func() { c.MatMulT(y, x, w, m, k, n, nil) })
			g := 2 * float64(m*k*n) / d / 1e9
			fmt.Printf("workers=%d m=%d: %.1f GFLOP/s (peak %.1f, %.0f%%)\n", nw, m, g, peak, 100*g/peak)
		}
		c.Close()
	}
}

func TestTmpMatvec(t *testing.T) {
	for _, nw := range []int{1, 2} {
		c := NewCtx(nw)
		bw := MeasureReadBandwidth(c, 256<<20)
		for _, sz := range [][2]int{{1024, 3072}, {3072, 1024}, {1024, 151936}} {
			k, n := sz[0], sz[1]
			ws := coldSet(n, k)
			x := randSlice(rand.New(rand.NewPCG(2, 2)), k)
			y := make([]float32, n)
			i := 0
			reps := 40
			if n > 100000 {
				reps = 5
			}
			d := bestOf(reps, func() { c.MatMulT(y, x, ws[i%len(ws)], 1, k, n, nil); i++ })
			g := float64(n*k*4) / d / 1e9
			fmt.Printf("workers=%d k=%d n=%d: %.1f GB/s (read bw %.1f, %.0f%%)\n", nw, k, n, g, bw, 100*g/bw)
		}
		c.Close()
	}
}

func TestTmpAttn(t *testing.T) {
	const heads, kvHeads, hd, T = 16, 8, 128, 2048
	for _, nw := range []int{1, 2} {
		c := NewCtx(nw)
		bw := MeasureReadBandwidth(c, 256<<20)
		kvW := kvHeads * hd
		rng := rand.New(rand.NewPCG(4, 4))
		layers := (96<<20)/(2*T*kvW*4) + 1
		if os.Getenv("HOT") != "" {
			layers = 1
		}
		kcs, vcs := make([][]float32, layers), make([][]float32, layers)
		for i := range kcs {
			kcs[i], vcs[i] = randSlice(rng, T*kvW), randSlice(rng, T*kvW)
		}
		q, out := randSlice(rng, heads*hd), make([]float32, heads*hd)
		seq, pos := []int32{0}, []int32{T - 1}
		i := 0
		d := bestOf(40, func() {
			l := i % layers
			i++
			c.Attention(out, q, kcs[l], vcs[l], 1, heads, kvHeads, hd, T, seq, pos, 0.088)
		})
		g := float64(2*T*kvW*4) / d / 1e9
		s := make([]float32, T)
		for i := range s {
			s[i] = float32(i%13) * 0.1
		}
		ds := bestOf(40, func() { softmaxScaled(s, 0.5) })
		fmt.Printf("attn workers=%d: %.1f us %.1f GB/s (read bw %.1f, %.0f%%); softmax T=2048 %.1f us\n", nw, d*1e6, g, bw, 100*g/bw, ds*1e6)
		c.Close()
	}
}

func TestTmpAttnParts(t *testing.T) {
	const hd, T, kvW = 128, 2048, 1024
	rng := rand.New(rand.NewPCG(4, 4))
	K, V := randSlice(rng, T*kvW), randSlice(rng, T*kvW)
	q := randSlice(rng, hd)
	s := make([]float32, T)
	o := make([]float32, hd)
	d1 := bestOf(50, func() { gemv1x8(q, K, kvW, hd, T/8, s) })
	d1b := bestOf(50, func() {
		for t0 := 0; t0 < T/8; t0 += 4 {
			if r1 := 8 * (t0 + 4); r1 < T {
				prefetchRows(K[r1*kvW:], kvW, 32, hd)
			}
			gemv1x8(q, K[8*t0*kvW:], kvW, hd, 4, s[8*t0:])
		}
	})
	d2 := bestOf(50, func() { softmaxScaled(s, 0.1) })
	d3 := bestOf(50, func() { wsum(o, s, V, kvW, T, hd, false) })
	d4 := bestOf(50, func() { prefetchRows(K, kvW, T, hd) })
	// contiguous K for comparison
	Kc := randSlice(rng, T*hd)
	d5 := bestOf(50, func() { gemv1x8(q, Kc, hd, hd, T/8, s) })
	fmt.Printf("per head T=2048: scores %.1f us (chunked+pf %.1f), softmax %.1f us, wsum %.1f us, prefetch-all %.1f us, scores contiguous %.1f\n", d1*1e6, d1b*1e6, d2*1e6, d3*1e6, d4*1e6, d5*1e6)
}

func hugeSlice(n int) []float32 {
	s := make([]float32, n+(2<<20)/4)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*4)
	off := (2<<20 - int(uintptr(unsafe.Pointer(&s[0]))%(2<<20))) % (2 << 20)
	if err := unix.Madvise(b[off:off+(len(b)-off)/(2<<20)*(2<<20)], unix.MADV_HUGEPAGE); err != nil {
		panic(err)
	}
	return s[off/4 : off/4+n]
}

func TestTmpHuge(t *testing.T) {
	const hd, T, kvW = 128, 2048, 1024
	rng := rand.New(rand.NewPCG(4, 4))
	for _, huge := range []bool{false, true} {
		var K, V []float32
		if huge {
			K, V = hugeSlice(T*kvW), hugeSlice(T*kvW)
		} else {
			K, V = make([]float32, T*kvW), make([]float32, T*kvW)
		}
		for i := range K {
			K[i] = float32(rng.NormFloat64())
			V[i] = K[i]
		}
		q := randSlice(rng, hd)
		s := make([]float32, T)
		o := make([]float32, hd)
		d1 := bestOf(50, func() { gemv1x8(q, K, kvW, hd, T/8, s) })
		d3 := bestOf(50, func() { wsum(o, s, V, kvW, T, hd, false) })
		fmt.Printf("huge=%v: scores %.1f us wsum %.1f us\n", huge, d1*1e6, d3*1e6)
	}
	b, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "AnonHuge") {
			fmt.Println(l)
		}
	}
}
