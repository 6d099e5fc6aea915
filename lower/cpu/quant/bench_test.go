package quant

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gelo/device/wire"
)

// f32MatMul returns the float32 baseline y = x · w^T (kernels.Ctx.MatMulT
// on a fresh pool) and its release function; it is set by
// bench_f32_test.go, which the build tag quant_nof32 leaves out (so that
// this package's tests build while the kernels package is being edited).
var f32MatMul func() (mm func(y, x, w []float32, m, k, n int), done func())

// f32MatMulWorkers is f32MatMul with a given number of workers.
var f32MatMulWorkers func(workers int) (mm func(y, x, w []float32, m, k, n int), done func())

// Weight sets for the matvec benchmarks: copies of one matrix totalling at
// least coldBytes (more than the last-level cache of every kind measured:
// the Intel Xeon VM's read probe falls to memory speed between 96 and 128
// MiB, and 96 MiB, the figure before, was partly cached there) so that
// cycling through them measures streaming from memory, as decode does;
// "hot" uses one copy.
// MB/s is weight bytes streamed per second (4 per weight for f32, 34/32
// for q8_0, 18/32 for q4_0, 144/256 for q4_k); x_vs_f32 is the f32 time over the quantized
// time at the same shape (the f32 sub-benchmark runs first).

const coldBytes = 256 << 20

func benchWeights(k, n int) []float32 {
	rng := rand.New(rand.NewPCG(1, 1))
	w := make([]float32, n*k)
	for i := range w {
		w[i] = (rng.Float32() - 0.5) * 0.1
	}
	return w
}

func copiesFor(bytes int, cold bool) int {
	if !cold {
		return 1
	}
	return max(1, coldBytes/bytes+1)
}

var matvecShapes = [][2]int{{1024, 3072}, {3072, 1024}, {1024, 151936}} // in (k), out (n)

func BenchmarkMatVec(b *testing.B) {
	for _, sz := range matvecShapes {
		k, n := sz[0], sz[1]
		w32 := benchWeights(k, n)
		x := benchWeights(k, 1)
		for _, cold := range []bool{true, false} {
			f32ns := 0.0 // ns/op of the f32 baseline at this shape
			if !cold && n*k > 8<<20 {
				continue // does not fit the cache anyway
			}
			temp := "cold"
			if !cold {
				temp = "hot"
			}
			// Data is prepared outside b.Run (which runs its function
			// several times) and the garbage collected before timing.
			ws := make([][]float32, copiesFor(n*k*4, cold))
			ws[0] = w32
			for i := 1; i < len(ws); i++ {
				ws[i] = append([]float32(nil), w32...)
			}
			runtime.GC()
			if f32MatMul != nil {
				b.Run(fmt.Sprintf("f32/in%d_out%d/%s", k, n, temp), func(b *testing.B) {
					mm, done := f32MatMul()
					defer done()
					y := make([]float32, n)
					b.SetBytes(int64(n * k * 4))
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						mm(y, x, ws[i%len(ws)], 1, k, n)
					}
					f32ns = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				})
			}
			ws = nil
			for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0, wire.Q4_K} {
				w, err := wire.Quantize(f, w32, n, k)
				if err != nil {
					b.Fatal(err)
				}
				var a wire.Activations
				if err := a.Quantize(x, 1, k); err != nil {
					b.Fatal(err)
				}
				for _, lay := range []wire.Layout{wire.RowMajor, wire.Interleaved8, wire.Interleaved16} {
					qs := make([]*wire.Matrix, copiesFor(len(w.Data), cold))
					for i := range qs {
						cp := *w
						cp.Data = append([]byte(nil), w.Data...)
						if err := cp.InterleaveTo(lay); err != nil {
							b.Fatal(err)
						}
						qs[i] = &cp
					}
					runtime.GC()
					// Q4_K on Interleaved16 also runs its GEMM kernel at one
					// row (-mm1), the decode kernel before q4kmv16ILAVX512.
					kernels := []bool{true}
					if f == wire.Q4_K && lay == wire.Interleaved16 && useAVX512 {
						kernels = append(kernels, false)
					}
					for _, mv := range kernels {
						name := f.String() + layoutSuffix(lay)
						if !mv {
							name += "-mm1"
						}
						b.Run(fmt.Sprintf("%s/in%d_out%d/%s", name, k, n, temp), func(b *testing.B) {
							defer func(v bool) { q4kmv16 = v }(q4kmv16)
							q4kmv16 = mv
							c := NewCtx(0)
							defer c.Close()
							y := make([]float32, n)
							b.SetBytes(int64(len(w.Data)))
							b.ResetTimer()
							for i := 0; i < b.N; i++ {
								if err := c.MatMulQ(y, &a, qs[i%len(qs)], nil); err != nil {
									b.Fatal(err)
								}
							}
							if f32ns > 0 {
								b.ReportMetric(f32ns/(float64(b.Elapsed().Nanoseconds())/float64(b.N)), "x_vs_f32")
							}
						})
					}
				}
			}
		}
	}
}

func BenchmarkGEMM(b *testing.B) {
	const k, n = 1024, 3072
	w32 := benchWeights(k, n)
	for _, m := range []int{8, 128} {
		x := benchWeights(k, m)
		flops := 2 * float64(m*k*n)
		if f32MatMul != nil {
			b.Run(fmt.Sprintf("f32/m%d_k%d_n%d", m, k, n), func(b *testing.B) {
				mm, done := f32MatMul()
				defer done()
				y := make([]float32, m*n)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					mm(y, x, w32, m, k, n)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0, wire.Q4_K} {
			w, err := wire.Quantize(f, w32, n, k)
			if err != nil {
				b.Fatal(err)
			}
			for _, v := range []string{"MatMulQ", "MatMul", "MatMulQ-il", "MatMulQ-il16", "MatMulQ-il16-amx"} {
				withQuant := v == "MatMul"
				mode := modeAVX512 // the VNNI kernels on Interleaved16, where the machine has them
				switch {
				case v == "MatMulQ-il":
					w = interleaved(b, w)
				case v == "MatMulQ-il16":
					w = interleavedAs(b, rowMajor(b, w), wire.Interleaved16)
				case v == "MatMulQ-il16-amx":
					mode = modeAMX
				}
				if strings.HasPrefix(v, "MatMulQ-il16") && !slices.Contains(asmModes(), mode) {
					continue
				}
				b.Run(fmt.Sprintf("%v/%s/m%d_k%d_n%d", f, v, m, k, n), func(b *testing.B) {
					c := NewCtx(0)
					defer c.Close()
					var a wire.Activations
					if err := a.Quantize(x, m, k); err != nil {
						b.Fatal(err)
					}
					y := make([]float32, m*n)
					run := func() {
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							var err error
							if withQuant {
								err = c.MatMul(y, x, m, w, nil)
							} else {
								err = c.MatMulQ(y, &a, w, nil)
							}
							if err != nil {
								b.Fatal(err)
							}
						}
					}
					if strings.HasPrefix(v, "MatMulQ-il16") {
						withAsm(mode, run)
					} else {
						run()
					}
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

func BenchmarkQuantizeActivations(b *testing.B) {
	for _, m := range []int{1, 128} {
		const k = 1024
		b.Run(fmt.Sprintf("m%d_k%d", m, k), func(b *testing.B) {
			c := NewCtx(0)
			defer c.Close()
			x := benchWeights(k, m)
			var a wire.Activations
			b.SetBytes(int64(m * k * 4))
			for i := 0; i < b.N; i++ {
				_ = c.QuantizeActivations(&a, x, m, k)
			}
		})
	}
}

// TestMatVecReport (run with GELO_QUANT_REPORT=1, -v) measures decode
// matvecs on a noisy shared machine more robustly than the benchmarks: it
// alternates f32, q8_0 and q4_0 calls on cold weight copies for many rounds
// and prints the best and the median time of each, the weight-stream rate
// and the speedups over f32, for 1 worker and for GOMAXPROCS workers.
func TestMatVecReport(t *testing.T) {
	if os.Getenv("GELO_QUANT_REPORT") == "" {
		t.Skip("set GELO_QUANT_REPORT=1 to run")
	}
	if f32MatMul == nil {
		t.Skip("no f32 baseline (built with quant_nof32)")
	}
	rounds := 25
	for _, sz := range matvecShapes {
		k, n := sz[0], sz[1]
		w32 := benchWeights(k, n)
		x := benchWeights(k, 1)
		ws := make([][]float32, copiesFor(n*k*4, true))
		ws[0] = w32
		for i := 1; i < len(ws); i++ {
			ws[i] = append([]float32(nil), w32...)
		}
		qs := map[wire.Format][]*wire.Matrix{}
		for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0, wire.Q4_K} {
			w, err := wire.Quantize(f, w32, n, k)
			if err != nil {
				t.Fatal(err)
			}
			set := make([]*wire.Matrix, copiesFor(len(w.Data), true))
			set[0] = w
			for i := 1; i < len(set); i++ {
				cp := *w
				cp.Data = append([]byte(nil), w.Data...)
				set[i] = &cp
			}
			qs[f] = set
		}
		var a wire.Activations
		if err := a.Quantize(x, 1, k); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, n)
		for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
			runtime.GC()
			mm, done := f32MatMulWorkers(workers)
			c := NewCtx(workers)
			times := map[string][]float64{}
			for r := 0; r < rounds; r++ {
				t0 := time.Now()
				mm(y, x, ws[r%len(ws)], 1, k, n)
				times["f32"] = append(times["f32"], time.Since(t0).Seconds())
				for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
					set := qs[f]
					t0 := time.Now()
					if err := c.MatMulQ(y, &a, set[r%len(set)], nil); err != nil {
						t.Fatal(err)
					}
					times[f.String()] = append(times[f.String()], time.Since(t0).Seconds())
				}
			}
			done()
			c.Close()
			best := func(s string) (float64, float64) {
				v := append([]float64(nil), times[s]...)
				sort.Float64s(v)
				return v[0], v[len(v)/2]
			}
			fb, fm := best("f32")
			line := fmt.Sprintf("in%d_out%d workers=%d: f32 best %.0fus (%.1f GB/s) median %.0fus", k, n, workers, fb*1e6, float64(n*k*4)/fb/1e9, fm*1e6)
			for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
				b, m := best(f.String())
				bytes := float64(len(qs[f][0].Data))
				line += fmt.Sprintf(" | %v best %.0fus (%.1f GB/s, %.2fx) median %.0fus (%.2fx)", f, b*1e6, bytes/b/1e9, fb/b, m*1e6, fm/m)
			}
			t.Log(line)
		}
	}
}

// BenchmarkGEMM16 is the protected decode step (m = 16 rows: one data row
// plus shield rows) on cold weights (copies cycled as in BenchmarkMatVec):
// the f32 GEMM, then q8_0 and q4_0, each with the AVX2 2x4 kernels ("avx2")
// and with the AVX-512 VNNI 16-column kernels ("avx512", when the machine
// has them); x_vs_f32 as in BenchmarkMatVec.
func BenchmarkGEMM16(b *testing.B) {
	const m = 16
	for _, sz := range [][2]int{{1024, 3072}, {3072, 1024}} {
		k, n := sz[0], sz[1]
		w32 := benchWeights(k, n)
		x := benchWeights(k, m)
		f32ns := 0.0
		if f32MatMul != nil {
			ws := make([][]float32, copiesFor(n*k*4, true))
			ws[0] = w32
			for i := 1; i < len(ws); i++ {
				ws[i] = append([]float32(nil), w32...)
			}
			runtime.GC()
			b.Run(fmt.Sprintf("f32/m%d_k%d_n%d", m, k, n), func(b *testing.B) {
				mm, done := f32MatMul()
				defer done()
				y := make([]float32, m*n)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					mm(y, x, ws[i%len(ws)], m, k, n)
				}
				f32ns = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			})
			ws = nil
		}
		for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0} {
			fname := map[wire.Format]string{wire.Q8_0: "q8_0", wire.Q4_0: "q4_0"}[f]
			w, err := wire.Quantize(f, w32, n, k)
			if err != nil {
				b.Fatal(err)
			}
			qs := make([]*wire.Matrix, copiesFor(len(w.Data), true))
			qs[0] = w
			for i := 1; i < len(qs); i++ {
				cp := *w
				cp.Data = append([]byte(nil), w.Data...)
				qs[i] = &cp
			}
			var a wire.Activations
			if err := a.Quantize(x, m, k); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			for _, mode := range asmModes() {
				if mode == modeGo {
					continue // far slower, and tested elsewhere
				}
				name := []string{"go", "avx2", "avx512"}[mode]
				b.Run(fmt.Sprintf("%s/%s/m%d_k%d_n%d", fname, name, m, k, n), func(b *testing.B) {
					c := NewCtx(0)
					defer c.Close()
					y := make([]float32, m*n)
					withAsm(mode, func() {
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							if err := c.MatMulQ(y, &a, qs[i%len(qs)], nil); err != nil {
								b.Fatal(err)
							}
						}
					})
					if f32ns > 0 {
						b.ReportMetric(f32ns/(float64(b.Elapsed().Nanoseconds())/float64(b.N)), "x_vs_f32")
					}
				})
			}
		}
	}
}

// layoutSuffix names a benchmark's weight layout: "" row-major, "-il"
// Interleaved8, "-il16" Interleaved16.
func layoutSuffix(l wire.Layout) string {
	switch l {
	case wire.Interleaved8:
		return "-il"
	case wire.Interleaved16:
		return "-il16"
	}
	return ""
}

// rowMajor returns a row-major copy of w.
func rowMajor(b testing.TB, w *wire.Matrix) *wire.Matrix {
	data, err := w.RowMajorData()
	if err != nil {
		b.Fatal(err)
	}
	rm := *w
	rm.Data, rm.Layout = append([]byte(nil), data...), wire.RowMajor
	return &rm
}

// layerShapes are one Qwen3-0.6B layer's matmuls in decode order, in (k)
// and out (n): q, k, v, o, gate, up, down.
var layerShapes = [][2]int{{1024, 2048}, {1024, 1024}, {1024, 1024}, {2048, 1024}, {1024, 3072}, {1024, 3072}, {3072, 1024}}

// BenchmarkDecodeLayers streams the matmuls of a decode step the way the
// engine does (one activation row, each matrix once, in layer order, in
// the layout this machine's kernels read: LayoutFor), over enough layers
// (copies of one) to exceed the last-level cache. MB/s is weight bytes
// per second; compare it with the bandwidth probe gelo bench prints.
func BenchmarkDecodeLayers(b *testing.B) {
	for _, f := range []wire.Format{wire.Q8_0, wire.Q4_0, wire.Q4_K} {
		var layer []*wire.Matrix
		var acts []*wire.Activations
		bytes := 0
		for _, sz := range layerShapes {
			k, n := sz[0], sz[1]
			w, err := wire.Quantize(f, benchWeights(k, n), n, k)
			if err != nil {
				b.Fatal(err)
			}
			if err := w.InterleaveTo(LayoutFor(f)); err != nil {
				b.Fatal(err)
			}
			var a wire.Activations
			if err := a.Quantize(benchWeights(k, 1), 1, k); err != nil {
				b.Fatal(err)
			}
			layer, acts = append(layer, w), append(acts, &a)
			bytes += len(w.Data)
		}
		layers := make([][]*wire.Matrix, copiesFor(bytes, true))
		for l := range layers {
			for _, w := range layer {
				cp := *w
				cp.Data = append([]byte(nil), w.Data...)
				layers[l] = append(layers[l], &cp)
			}
		}
		runtime.GC()
		b.Run(f.String()+layoutSuffix(LayoutFor(f)), func(b *testing.B) {
			c := NewCtx(0)
			defer c.Close()
			y := make([]float32, 3072)
			b.SetBytes(int64(bytes))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for m, w := range layers[i%len(layers)] {
					if err := c.MatMulQ(y, acts[m], w, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
