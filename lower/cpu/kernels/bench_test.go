package kernels

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"gelo/models/safetensors"
)

// Reference machine figures for the ratios the benchmarks report, measured
// once per run with a GOMAXPROCS-worker Ctx (as the benchmarks use).
var (
	machineOnce             sync.Once
	machineBW, peakF, peakD float64
)

func machine() (bw, peak float64) {
	machineOnce.Do(func() {
		c := NewCtx(0)
		defer c.Close()
		machineBW = MeasureReadBandwidth(c, 256<<20)
		peakF = MeasurePeakGFLOPS(c)
		peakD = MeasurePeakBF16DotGFLOPS(c)
	})
	return machineBW, peakF
}

// reportBW reports the achieved GB/s as a percentage of the read bandwidth.
func reportBW(b *testing.B, bytes int64) {
	bw, _ := machine()
	gbs := float64(bytes) * float64(b.N) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(100*gbs/bw, "%readBW")
}

// coldBytes is the least a benchmark cycles through to read from memory,
// not cache: more than the last-level cache of every kind measured (AMD
// EPYC VMs: 32 MiB; the Intel Xeon VM reports 480 MiB, and its read probe
// falls to memory speed between 96 and 128 MiB; 96 MiB, the figure before,
// was partly cached there).
const coldBytes = 256 << 20

// coldSet returns copies of a random [n][k] matrix totalling at least
// coldBytes, so cycling through them measures streaming from memory as
// decode does.
func coldSet(n, k int) [][]float32 {
	rng := rand.New(rand.NewPCG(1, 1))
	copies := max(1, coldBytes/(n*k*4)+1)
	if n*k*4 > 256<<20 {
		copies = 1
	}
	set := make([][]float32, copies)
	for i := range set {
		set[i] = randSlice(rng, n*k)
	}
	return set
}

func BenchmarkMatVec(b *testing.B) {
	for _, sz := range [][2]int{{1024, 3072}, {3072, 1024}, {1024, 151936}} {
		k, n := sz[0], sz[1]
		b.Run(fmt.Sprintf("in%d_out%d", k, n), func(b *testing.B) {
			c := NewCtx(0)
			defer c.Close()
			ws := coldSet(n, k)
			x := randSlice(rand.New(rand.NewPCG(2, 2)), k)
			y := make([]float32, n)
			machine()
			b.SetBytes(int64(n * k * 4))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.MatMulT(y, x, ws[i%len(ws)], 1, k, n, nil)
			}
			b.StopTimer()
			reportBW(b, int64(n*k*4))
		})
	}
}

func BenchmarkGEMM(b *testing.B) {
	for _, m := range []int{16, 128} {
		k, n := 1024, 3072
		b.Run(fmt.Sprintf("m%d_k%d_n%d", m, k, n), func(b *testing.B) {
			c := NewCtx(0)
			defer c.Close()
			rng := rand.New(rand.NewPCG(3, 3))
			x, w := randSlice(rng, m*k), randSlice(rng, n*k)
			y := make([]float32, m*n)
			_, peak := machine()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.MatMulT(y, x, w, m, k, n, nil)
			}
			b.StopTimer()
			g := 2 * float64(m*k*n) * float64(b.N) / b.Elapsed().Seconds() / 1e9
			b.ReportMetric(g, "GFLOP/s")
			b.ReportMetric(100*g/peak, "%peak")
		})
	}
}

// BenchmarkAttentionDecode: one decode row at position T-1 against T
// cached positions (T = 2048 and 8192), Qwen3-0.6B geometry (16 heads, 8
// KV heads, hd 128), per cache format, cycling through the model's 28
// layers' caches (more where 28 would not exceed the LLC). Bytes = K+V
// read; GB/s against the read bandwidth (%readBW) and the bandwidth
// probe's bound (probe-GB/s). Cycling through 4 layers' caches instead,
// as this benchmark once did at T = 8192, ran at 80-93 % of the bare
// read where 28 ran at 62-83 % (six runs, one process each): the figure
// a decode step sees is the 28 layers' one.
//
// The layers' caches are copies of one random pair (the values do not
// change the time; the setup would otherwise dominate the run).
func BenchmarkAttentionDecode(b *testing.B) {
	const heads, kvHeads, hd = 16, 8, 128
	for _, T := range []int{2048, 8192} {
		for _, f := range []KVFormat{KVF32, KVF16, KVBF16} {
			n := T * kvHeads * hd
			bytes := 2 * n * 4
			if f != KVF32 {
				bytes = 2 * n * 2
			}
			rng := rand.New(rand.NewPCG(4, 4))
			layers := max(28, coldBytes/bytes+1)
			kcs, vcs := make([]KV, layers), make([]KV, layers)
			kcs[0], vcs[0] = benchKV(rng, n, f), benchKV(rng, n, f)
			for i := 1; i < layers; i++ {
				kcs[i], vcs[i] = copyKV(kcs[0]), copyKV(vcs[0])
			}
			q, out := randSlice(rng, heads*hd), make([]float32, heads*hd)
			seq, pos := []int32{0}, []int32{int32(T - 1)}
			b.Run(fmt.Sprintf("T=%d/%v", T, f), func(b *testing.B) {
				c := NewCtx(0)
				defer c.Close()
				machine()
				b.SetBytes(int64(bytes))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					l := i % layers
					if err := c.Attention(out, q, kcs[l], vcs[l], 1, heads, kvHeads, hd, T, seq, pos, 0.088); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				reportBW(b, int64(bytes))
				b.ReportMetric(probeBound(), "probe-GB/s")
			})
			// The same caches summed with the probe's kernel, one task a
			// KV head: the rate a plain read of these bytes gets.
			b.Run(fmt.Sprintf("T=%d/%v-read", T, f), func(b *testing.B) {
				c := NewCtx(0)
				defer c.Close()
				b.SetBytes(int64(bytes))
				for i := 0; i < b.N; i++ {
					l := i % layers
					c.sumParts(kvFloats(kcs[l]), kvHeads)
					c.sumParts(kvFloats(vcs[l]), kvHeads)
				}
			})
		}
	}
}

// copyKV is a copy of k in fresh storage.
func copyKV(k KV) KV {
	if k.Format == KVF32 {
		return KVOf(append([]float32(nil), k.F32...))
	}
	return KV16(append([]uint16(nil), k.H16...), k.Format)
}

// kvFloats is a cache's storage as float32s (a 16-bit one reinterpreted),
// for a bare read.
func kvFloats(k KV) []float32 {
	if k.Format == KVF32 {
		return k.F32
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&k.H16[0])), len(k.H16)/2)
}

// benchKV is a random cache of n values in format f.
func benchKV(rng *rand.Rand, n int, f KVFormat) KV {
	x := randSlice(rng, n)
	if f == KVF32 {
		return KVOf(x)
	}
	h := make([]uint16, n)
	for i, v := range x {
		if f == KVF16 {
			h[i] = safetensors.F32ToF16(v)
		} else {
			h[i] = safetensors.F32ToBF16(v)
		}
	}
	return KV16(h, f)
}

var (
	probeOnce sync.Once
	probeBW   float64
)

// probeBound is ProbeBandwidth's bound over one 256 MiB buffer (5 passes,
// every worker count), measured once per run.
func probeBound() float64 {
	probeOnce.Do(func() {
		c := NewCtx(0)
		defer c.Close()
		probeBW = BandwidthBound(ProbeBandwidth(c, []int{256 << 20}, 5))
	})
	return probeBW
}

// BenchmarkSoftmaxExp: the softmax's exp and float64 sums (expSumVec) of
// 2048 scores, one core's ns an element, at each vector width the
// machine has (AVX-512's 16 lanes, AVX2's 8).
func BenchmarkSoftmaxExp(b *testing.B) {
	if !useAsm {
		b.Skip("no assembly kernels")
	}
	s := randSlice(rand.New(rand.NewPCG(6, 6)), 2048)
	widths := []bool{false}
	if useAVX512 {
		widths = append(widths, true)
	}
	for _, wide := range widths {
		b.Run(fmt.Sprintf("avx512=%v", wide), func(b *testing.B) {
			old := useAVX512
			useAVX512 = wide
			defer func() { useAVX512 = old }()
			var p [4]float64
			for i := 0; i < b.N; i++ {
				expSumVec(s, len(s), 3, &p) // s - 3 stays in range as the values shrink
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(s)), "ns/elem")
		})
	}
}

// BenchmarkMachine reports the reference figures the ratios above use:
// read bandwidth (GB/s), FMA peak and, where it runs, the bf16 dot
// product's peak (GFLOP/s) of all workers.
func BenchmarkMachine(b *testing.B) {
	bw, peak := machine()
	for i := 0; i < b.N; i++ {
	}
	b.ReportMetric(bw, "GB/s")
	b.ReportMetric(peak, "peakGFLOP/s")
	b.ReportMetric(peakD, "bf16dotPeakGFLOP/s")
}

// BenchmarkAttentionPrefill: the last 256 rows of a 2048-token prefill
// (positions 1792..2047, all causal) at the 0.6B shapes, per cache format:
// the cache of one sequence (16 MiB in f32) is reread by every row.
func BenchmarkAttentionPrefill(b *testing.B) {
	const heads, kvHeads, hd, maxT = 16, 8, 128, 2048
	// 256 rows deep in a context (positions 1792..2047), and a prompt of
	// 512 from position 0 (the side by side's prefill).
	for _, sh := range [][2]int{{256, maxT - 256}, {512, 0}} {
		rows, from := sh[0], sh[1]
		for _, f := range []KVFormat{KVF32, KVF16, KVBF16} {
			b.Run(fmt.Sprintf("rows%d_from%d/%s", rows, from, f), func(b *testing.B) {
				c := NewCtx(0)
				defer c.Close()
				rng := rand.New(rand.NewPCG(5, 5))
				kc, vc := benchKV(rng, maxT*kvHeads*hd, f), benchKV(rng, maxT*kvHeads*hd, f)
				q, out := randSlice(rng, rows*heads*hd), make([]float32, rows*heads*hd)
				seq, pos := make([]int32, rows), make([]int32, rows)
				flops := 0
				for r := range pos {
					pos[r] = int32(from + r)
					flops += 4 * (from + r + 1) * heads * hd // q.k and p.v
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := c.Attention(out, q, kc, vc, rows, heads, kvHeads, hd, maxT, seq, pos, 0.088); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(flops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkDecodeScores: decode attention's scores over one KV head at T =
// 8192 (hd 128: 2 MiB in 16 bits, 4 MiB in f32), cold, for the two query
// heads that share it: pair is gemv2x8H16 or gemv2x8F32 (each key row read,
// and widened, once for both), single two one-head calls a chunk, read the
// plain sum of the same bytes (the rate a pass over them can reach). Run
// with -cpu 1: one task's rate.
func BenchmarkDecodeScores(b *testing.B) {
	const T, hd = 8192, 128
	for _, f := range []KVFormat{KVF32, KVF16, KVBF16} {
		if !gemv2Asm(f, hd) {
			b.Skip("no AVX2 here")
		}
		rng := rand.New(rand.NewPCG(1, 2))
		n := T * hd
		size := 2 * n
		if f == KVF32 {
			size = 4 * n
		}
		kvs := make([]KV, coldBytes/size+1)
		for i := range kvs {
			kvs[i] = benchKV(rng, n, f)
		}
		x0, x1 := randSlice(rng, hd), randSlice(rng, hd)
		y0, y1 := make([]float32, T), make([]float32, T)
		for _, mode := range []string{"pair", "single", "read"} {
			b.Run(fmt.Sprintf("%v/%s", f, mode), func(b *testing.B) {
				b.SetBytes(int64(size))
				for i := 0; i < b.N; i++ {
					kv := kvs[i%len(kvs)]
					if mode == "read" {
						p := kvFloats(kv)
						y0[0] = sum64(p, len(p))
						continue
					}
					for t0 := 0; t0 < T; t0 += attnChunk {
						switch {
						case mode == "pair" && f == KVF32:
							gemv2x8F32(x0, x1, kv.F32[t0*hd:], hd, hd, attnChunk/8, y0[t0:], y1[t0:])
						case mode == "pair":
							gemv2x8H16(f, x0, x1, kv.H16[t0*hd:], hd, hd, attnChunk/8, y0[t0:], y1[t0:])
						case f == KVF32:
							gemv1x8(x0, kv.F32[t0*hd:], hd, hd, attnChunk/8, y0[t0:])
							gemv1x8(x1, kv.F32[t0*hd:], hd, hd, attnChunk/8, y1[t0:])
						default:
							gemv1x8H16(f, x0, kv.H16[t0*hd:], hd, hd, attnChunk/8, y0[t0:])
							gemv1x8H16(f, x1, kv.H16[t0*hd:], hd, hd, attnChunk/8, y1[t0:])
						}
					}
				}
			})
		}
	}
}

// BenchmarkNorms: a 512-token prefill's RMSNorms as one Qwen3-0.6B layer
// runs them: the residual add and norm (AddRMSNorm, d 1024) and the q
// heads' QK-norm and rotary embedding (NormRope, 16 heads of 128). MB/s is
// the rows' bytes.
func BenchmarkNorms(b *testing.B) {
	const rows, d, heads, hd = 512, 1024, 16, 128
	rng := rand.New(rand.NewPCG(7, 7))
	a, bb, w := randSlice(rng, rows*d), randSlice(rng, rows*d), randSlice(rng, d)
	sum, y := make([]float32, rows*d), make([]float32, rows*d)
	q, qy := randSlice(rng, rows*heads*hd), make([]float32, rows*heads*hd)
	pos := make([]int32, rows)
	for i := range pos {
		pos[i] = int32(i)
	}
	rope := NewRope(hd, 1e6, rows)
	b.Run("AddRMSNorm", func(b *testing.B) {
		c := NewCtx(0)
		defer c.Close()
		b.SetBytes(rows * d * 4)
		for i := 0; i < b.N; i++ {
			c.AddRMSNorm(sum, y, a, bb, w, rows, d, 1e-6)
		}
	})
	b.Run("NormRope", func(b *testing.B) {
		c := NewCtx(0)
		defer c.Close()
		b.SetBytes(rows * heads * hd * 4)
		for i := 0; i < b.N; i++ {
			if err := c.NormRope(qy, q, w[:hd], rope, rows, heads, hd, pos, 1e-6); err != nil {
				b.Fatal(err)
			}
		}
	})
}
