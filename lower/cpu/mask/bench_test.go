package mask

import (
	"fmt"
	"testing"
	"time"
)

// Shapes from the protocol: decode (n = 8 rows padded to s = 16 by the
// shield, d = 1024) and prefill (n = 2040 + 8 shield rows = 2048).
var benchShapes = []struct {
	name   string
	family string
	s, d   int
}{
	{"decode/haar/s=16/d=1024", FamilyHaar, 16, 1024},
	{"decode/hd3/s=16/d=1024", FamilyHD3, 16, 1024},
	{"prefill/haar/s=2048/d=1024", FamilyHaar, 2048, 1024},
	{"prefill/hd3/s=2048/d=1024", FamilyHD3, 2048, 1024},
}

// BenchmarkApplyUnapply times one Apply plus one Unapply of an s x d
// float32 stack. MB/s (and GB/s) count the s*d*4 bytes of the stack once
// per direction; haar additionally reports GFLOP/s of the dense products.
func BenchmarkApplyUnapply(b *testing.B) {
	for _, bs := range benchShapes {
		b.Run(bs.name, func(b *testing.B) {
			m := sample(b, NewWorkspace(0), bs.family, bs.s, 1)
			x := randMatrix(1, bs.s, bs.d)
			_ = m.Apply(x, bs.d)
			_ = m.Unapply(x, bs.d)
			bytes := int64(2 * bs.s * bs.d * 4)
			b.SetBytes(bytes)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := m.Apply(x, bs.d); err != nil {
					b.Fatal(err)
				}
				if err := m.Unapply(x, bs.d); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(bytes)/sec/1e9, "GB/s")
			if bs.family == FamilyHaar {
				b.ReportMetric(4*float64(bs.s)*float64(bs.s)*float64(bs.d)/sec/1e9, "GFLOP/s")
			}
		})
	}
}

// BenchmarkSample times drawing a fresh mask in a warm workspace (the
// per-forward-pass cost): Haar = Gaussian fill + blocked QR + packing,
// HD3 = 3s random signs.
func BenchmarkSample(b *testing.B) {
	for _, fam := range []string{FamilyHaar, FamilyHD3} {
		for _, s := range []int{16, 2048} {
			b.Run(fmt.Sprintf("%s/s=%d", fam, s), func(b *testing.B) {
				ws := NewWorkspace(0)
				rng := newRNG(b, 1)
				if _, err := ws.Sample(fam, s, rng); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := ws.Sample(fam, s, rng); err != nil {
						b.Fatal(err)
					}
				}
				if fam == FamilyHaar {
					sec := b.Elapsed().Seconds() / float64(b.N)
					fs := float64(s)
					b.ReportMetric(8.0/3*fs*fs*fs/sec/1e9, "GFLOP/s")
				}
			})
		}
	}
}

// BenchmarkKernels reports single-core throughput of the inner kernels on
// cache-resident data.
func BenchmarkKernels(b *testing.B) {
	b.Run("sgemm4x16", func(b *testing.B) {
		a := make([]float32, 4*256)
		x := make([]float32, 256*16)
		y := make([]float32, 4*16)
		for i := 0; i < b.N; i++ {
			sgemmTile(a, 1, 4, x, 16, y, 16, 4, 16, 256)
		}
		b.ReportMetric(float64(b.N)*4*16*256*2/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("dot4x2", func(b *testing.B) {
		v := make([]float64, 4*2048)
		a := make([]float64, 2*2048)
		var w [8]float64
		for i := 0; i < b.N; i++ {
			dot4x2(v, 2048, a, 2048, 2048, &w)
		}
		b.ReportMetric(float64(b.N)*8*2048*2/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("axpy4x2", func(b *testing.B) {
		v := make([]float64, 4*2048)
		a := make([]float64, 2*2048)
		var w [8]float64
		for i := 0; i < b.N; i++ {
			axpy4x2(v, 2048, a, 2048, 2048, &w)
		}
		b.ReportMetric(float64(b.N)*8*2048*2/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("fwht4/s=2048/cb=64", func(b *testing.B) {
		p := make([]float32, 2048*64)
		for i := 0; i < b.N; i++ {
			fwhtPass(p, 64, 2048, 4, 64, 4, nil)
		}
		b.ReportMetric(float64(b.N)*2048*64*4*2/b.Elapsed().Seconds()/1e9, "GB/s")
	})
}

// BenchmarkHaarOverHD3 interleaves the two families at the prefill shape
// (s = 2048, d = 1024) so both see the same machine load, and reports the
// per-iteration times and their ratio: haar/hd3 for Apply+Unapply and for
// sampling a fresh mask.
func BenchmarkHaarOverHD3(b *testing.B) {
	const s, d = 2048, 1024
	wsH, wsD := NewWorkspace(0), NewWorkspace(0)
	rng := newRNG(b, 1)
	x := randMatrix(1, s, d)
	var tApplyH, tApplyD, tSampleH, tSampleD float64
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		h, err := wsH.Haar(s, rng)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		_ = h.Apply(x, d)
		_ = h.Unapply(x, d)
		t2 := time.Now()
		m, err := wsD.HD3(s, rng)
		if err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		_ = m.Apply(x, d)
		_ = m.Unapply(x, d)
		t4 := time.Now()
		tSampleH += t1.Sub(t0).Seconds()
		tApplyH += t2.Sub(t1).Seconds()
		tSampleD += t3.Sub(t2).Seconds()
		tApplyD += t4.Sub(t3).Seconds()
	}
	n := float64(b.N)
	b.ReportMetric(tApplyH/n*1e3, "haar-apply-ms")
	b.ReportMetric(tApplyD/n*1e3, "hd3-apply-ms")
	b.ReportMetric(tApplyH/tApplyD, "apply-haar/hd3")
	b.ReportMetric(tSampleH/n*1e3, "haar-sample-ms")
	b.ReportMetric(tSampleD/n*1e3, "hd3-sample-ms")
	b.ReportMetric(tSampleH/tSampleD, "sample-haar/hd3")
}

// BenchmarkFillShield times one shield fill of k = 15 rows of width d
// (the protected decode shape: one data row plus 15 shield rows makes
// s = 16) and reports ns per normal for the previous Marsaglia-polar path
// over the ChaCha20 stream ("polar-ref"), the serial FillShield
// ("serial") and the workspace's parallel FillShield on GOMAXPROCS workers
// ("workspace"). The "ratio" sub-benchmark interleaves the three, so they
// see the same machine load, and reports each cost and the speed-ups.
func BenchmarkFillShield(b *testing.B) {
	const k, n = 15, 1
	for _, d := range []int{1024, 3072} {
		h := randMatrix(2, n, d)
		dst := make([]float32, k*d)
		ws := NewWorkspace(0)
		fills := []struct {
			name string
			fill func(rng *RNG) error
		}{
			{"polar-ref", func(rng *RNG) error { return fillShieldPolarRef(dst, k, d, h, n, DefaultEnergy, rng) }},
			{"serial", func(rng *RNG) error { return FillShield(dst, k, d, h, n, DefaultEnergy, rng) }},
			{"workspace", func(rng *RNG) error { return ws.FillShield(dst, k, d, h, n, DefaultEnergy, rng) }},
		}
		for _, f := range fills {
			b.Run(fmt.Sprintf("%s/k=%d/d=%d", f.name, k, d), func(b *testing.B) {
				rng := newRNG(b, 1)
				if err := f.fill(rng); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := f.fill(rng); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/float64(k*d), "ns/normal")
			})
		}
		b.Run(fmt.Sprintf("ratio/k=%d/d=%d", k, d), func(b *testing.B) {
			rng := newRNG(b, 1)
			var sec [3]float64
			for i := 0; i < b.N; i++ {
				for j, f := range fills {
					t0 := time.Now()
					_ = f.fill(rng)
					sec[j] += time.Since(t0).Seconds()
				}
			}
			per := 1e9 / float64(b.N) / float64(k*d)
			b.ReportMetric(sec[0]*per, "old-ns/normal")
			b.ReportMetric(sec[1]*per, "serial-ns/normal")
			b.ReportMetric(sec[2]*per, "ws-ns/normal")
			b.ReportMetric(sec[0]/sec[1], "old/serial")
			b.ReportMetric(sec[0]/sec[2], "old/ws")
		})
	}
}
