package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"gelo/device/wire"
)

// rawQ4K returns an n x k block_q4_K matrix of random bytes with sane
// fp16 d and dmin: every nibble, every 6-bit scale and min, the extremes
// included, as a file may hold them.
func rawQ4K(rng *rand.Rand, n, k int) *wire.Matrix {
	data := make([]byte, n*k/wire.QKK*wire.BlockBytesQ4_K)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for b := 0; b < len(data); b += wire.BlockBytesQ4_K {
		binary.LittleEndian.PutUint16(data[b:], float16.Fromfloat32(float32(rng.Float64()*1e-3)).Bits())
		binary.LittleEndian.PutUint16(data[b+2:], float16.Fromfloat32(float32(rng.Float64()*1e-3)).Bits())
	}
	m, err := wire.NewMatrix(wire.Q4_K, n, k, data)
	if err != nil {
		panic(err)
	}
	return m
}

// TestQ4KModes: the AVX2 Q4_K kernel is bit-identical to the portable code
// (the canonical order) for matvecs and GEMMs of many shapes (n with every
// remainder of the 8-row tile and below it), on quantized and raw random
// blocks, row-major, Interleaved8 and Interleaved16 (whole groups, a
// partial last group, fewer rows than a group), for every worker count; row i of a batch equals the
// m = 1 product of row i alone.
func TestQ4KModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	ctxs := []*Ctx{NewCtx(1), NewCtx(2), NewCtx(3)}
	defer func() {
		for _, c := range ctxs {
			c.Close()
		}
	}()
	for si, sh := range [][3]int{ // m, k, n
		{1, 256, 1}, {1, 256, 8}, {1, 512, 9}, {1, 1024, 100}, {1, 3072, 37}, {2, 256, 3},
		{3, 768, 17}, {7, 1024, 64}, {40, 512, 33}, {67, 256, 21}, {1, 512, 48}, {20, 256, 35},
	} {
		m, k, n := sh[0], sh[1], sh[2]
		var w *wire.Matrix
		if si%2 == 0 {
			w = rawQ4K(rng, n, k)
		} else {
			var err error
			if w, err = wire.Quantize(wire.Q4_K, randData(rng, n*k, 0.1), n, k); err != nil {
				t.Fatal(err)
			}
		}
		x := randData(rng, m*k, 1)
		x[rng.IntN(m*k)] = 127 // a block at its largest quants
		bias := randData(rng, n, 1)
		for _, bs := range [][]float32{nil, bias} {
			want := make([]float32, m*n)
			withAsm(modeGo, func() {
				if err := ctxs[0].MatMul(want, x, m, w, bs); err != nil {
					t.Fatal(err)
				}
			})
			for _, wm := range []*wire.Matrix{w, interleaved(t, w), interleavedAs(t, w, wire.Interleaved16)} {
				for _, mode := range asmModes() {
					for ci, c := range ctxs {
						y := make([]float32, m*n+1)
						y[m*n] = 42
						withAsm(mode, func() {
							if err := c.MatMul(y, x, m, wm, bs); err != nil {
								t.Fatal(err)
							}
						})
						if i := firstDiff(y[:m*n], want); i >= 0 {
							t.Fatalf("m=%d k=%d n=%d bias=%v layout=%d mode=%d ctx=%d: y[%d] = %g (%#x), go %g (%#x)",
								m, k, n, bs != nil, wm.Layout, mode, ci, i, y[i], math.Float32bits(y[i]), want[i], math.Float32bits(want[i]))
						}
						if y[m*n] != 42 {
							t.Fatal("wrote past m*n")
						}
						row := make([]float32, n)
						i := m / 2
						withAsm(mode, func() {
							if err := c.MatMul(row, x[i*k:(i+1)*k], 1, wm, bs); err != nil {
								t.Fatal(err)
							}
						})
						if j := firstDiff(row, want[i*n:(i+1)*n]); j >= 0 {
							t.Fatalf("m=%d k=%d n=%d layout=%d mode=%d: row %d alone differs at %d", m, k, n, wm.Layout, mode, i, j)
						}
					}
				}
			}
		}
	}
}

// TestQ4KAccuracy: against the float64 product of the dequantized weights
// ŵ with the unquantized input x. The q8_0 activation rounds each x_t by at
// most dx_b/2 (half its block's step), which moves the product by at most
// sum_b dx_b/2 * sum_{t in b} |ŵ_t|: the bound's first term. The rest is
// float32 rounding: the kernel splits each sub-block into the two terms
// isum*d1*dx and sx*m1*dx (magnitudes at most sum_t d1_t q_t |x̂_t| and
// sum_t m1_t |x̂_t|), each rounded a few times and accumulated over nb
// sub-blocks, so (nb+4) * 2^-23 times their sum M bounds it.
func TestQ4KAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	c := NewCtx(2)
	defer c.Close()
	m, k, n := 3, 1024, 48
	x := randData(rng, m*k, 1)
	for _, raw := range []bool{false, true} {
		w := rawQ4K(rng, n, k)
		if !raw {
			var err error
			if w, err = wire.Quantize(wire.Q4_K, randData(rng, n*k, 0.05), n, k); err != nil {
				t.Fatal(err)
			}
		}
		wd := make([]float32, n*k)
		if err := w.Dequantize(wd); err != nil {
			t.Fatal(err)
		}
		var a wire.Activations
		if err := a.Quantize(x, m, k); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, m*n)
		if err := c.MatMulQ(y, &a, w, nil); err != nil {
			t.Fatal(err)
		}
		nb := k / wire.QK
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var ref, act, mag float64
				row := w.Row(j)
				for b := 0; b < nb; b++ {
					xq, dx := a.Block(i, b)
					blk := row[b/8*wire.BlockBytesQ4_K:]
					d := float64(float16.Frombits(binary.LittleEndian.Uint16(blk)).Float32())
					dmin := float64(float16.Frombits(binary.LittleEndian.Uint16(blk[2:])).Float32())
					sc, mn := wire.ScaleMinQ4_K(b%8, blk[4:16])
					var sw float64
					for t := 0; t < wire.QK; t++ {
						v := float64(wd[j*k+b*wire.QK+t])
						ref += v * float64(x[i*k+b*wire.QK+t])
						sw += math.Abs(v)
						mag += (d*float64(sc)*15 + dmin*float64(mn)) * math.Abs(float64(xq[t])*float64(dx))
					}
					act += float64(dx) / 2 * sw
				}
				tol := act + float64(nb+4)*math.Ldexp(mag, -23)
				if e := math.Abs(float64(y[i*n+j]) - ref); e > tol {
					t.Fatalf("raw=%v y[%d,%d] = %g, float64 reference %g: error %g > bound %g", raw, i, j, y[i*n+j], ref, e, tol)
				}
			}
		}
	}
}
