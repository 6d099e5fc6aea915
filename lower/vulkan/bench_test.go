//go:build cgo

package vulkan

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkMatMul times one replayed crossing (submit, wait, copies) per
// op at a few shapes.
func BenchmarkMatMul(b *testing.B) {
	d := open(b, Options{noValidation: true})
	r := rand.New(rand.NewPCG(1, 1))
	for _, sh := range []struct{ m, rows, cols int }{{1, 192, 64}, {193, 192, 64}, {1, 3072, 1024}, {16, 3072, 1024}, {256, 1024, 1024}} {
		w := randF32(r, sh.rows*sh.cols)
		name := fmt.Sprintf("w%d", sh.rows*sh.cols)
		if err := d.Upload(name, w, sh.rows, sh.cols); err != nil {
			b.Fatal(err)
		}
		x := randF32(r, sh.m*sh.cols)
		y := make([]float32, sh.m*sh.rows)
		b.Run(fmt.Sprintf("m%d_%dx%d", sh.m, sh.rows, sh.cols), func(b *testing.B) {
			for b.Loop() {
				if err := d.MatMul("b", name, x, sh.m, y); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(sh.m*sh.rows*sh.cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkMatMulU32 times the lwe product (one replayed crossing of
// ciphertext rows by an int8 weight) at a decode row, a batch and the
// hint's shape (lambda = 4096 rows of A's columns); GMAC/s counts the
// multiply-adds mod 2^32.
func BenchmarkMatMulU32(b *testing.B) {
	d := open(b, Options{noValidation: true})
	r := rand.New(rand.NewPCG(2, 2))
	for _, sh := range []struct{ m, out, in int }{{1, 1024, 1024}, {64, 1024, 1024}, {4096, 128, 256}} {
		wm, _ := randInt8(b, r, sh.out, sh.in)
		name := fmt.Sprintf("q%dx%d", sh.out, sh.in)
		if err := d.UploadQ(name, wm); err != nil {
			b.Fatal(err)
		}
		c := randWords(r, sh.m*sh.in)
		y := make([]uint32, sh.m*sh.out)
		b.Run(fmt.Sprintf("m%d_%dx%d", sh.m, sh.out, sh.in), func(b *testing.B) {
			for b.Loop() {
				if err := d.MatMulU32("b", name, c, sh.m, y); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sh.m*sh.out*sh.in)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}
