package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"gelo/models/safetensors"
)

// TestMatMulTBF16Dot: the AVX512_BF16 kernels (where present) give the
// portable code's bits, for every shape class (matvec tiles and tails, 4x6
// GEMM tiles shifted back, k not a multiple of 32, which runs the portable
// code), worker count and bias; row i of a batch equals row i alone.
func TestMatMulTBF16Dot(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	ctxs := []*Ctx{withCtx(t, 1), withCtx(t, 2), withCtx(t, 3)}
	shapes := [][3]int{ // m, k, n
		{1, 32, 8}, {1, 64, 13}, {1, 1024, 200}, {2, 96, 9}, {3, 32, 5}, {1, 40, 9},
		{4, 32, 6}, {4, 64, 7}, {5, 128, 13}, {7, 96, 30}, {16, 1024, 64}, {64, 256, 100},
		{65, 96, 31}, {130, 64, 50}, {6, 40, 12}, {4, 32, 5},
	}
	for _, sh := range shapes {
		m, k, n := sh[0], sh[1], sh[2]
		w, _ := bf16Slice(rng, n*k)
		x := randSlice(rng, m*k)
		bias := randSlice(rng, n)
		for _, bs := range [][]float32{nil, bias} {
			want := make([]float32, m*n)
			xb := make([]uint16, m*k)
			RoundBF16(xb, x)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					want[i*n+j] = DotBF16Pairs(xb[i*k:(i+1)*k], w[j*k:(j+1)*k])
					if bs != nil {
						want[i*n+j] += bs[j]
					}
				}
			}
			for ci, c := range ctxs {
				for _, asm := range []bool{false, useBF16Dot} {
					old := useBF16Dot
					useBF16Dot = asm
					y := make([]float32, m*n+1)
					y[m*n] = 42
					c.MatMulTBF16Dot(y, x, w, m, k, n, bs)
					useBF16Dot = old
					for i := range want {
						if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
							t.Fatalf("m=%d k=%d n=%d bias=%v ctx=%d asm=%v: y[%d] = %g, want %g", m, k, n, bs != nil, ci, asm, i, y[i], want[i])
						}
					}
					if y[m*n] != 42 {
						t.Fatal("wrote past m*n")
					}
				}
			}
			// Each row alone.
			row := make([]float32, n)
			for i := 0; i < m; i++ {
				ctxs[1].MatMulTBF16Dot(row, x[i*k:(i+1)*k], w, 1, k, n, bs)
				for j := range row {
					if math.Float32bits(row[j]) != math.Float32bits(want[i*n+j]) {
						t.Fatalf("m=%d k=%d n=%d: row %d alone differs at %d", m, k, n, i, j)
					}
				}
			}
		}
	}
}

// TestMatMulTBF16DotAccuracy: against the exact bf16 product (MatMulTBF16,
// the f32 inputs), the dot product differs by the inputs' rounding to bf16
// and the lane order: per output at most 2^-8 * sum |x||w| (each x moves by
// at most its unit roundoff 2^-9 relative, doubled for the f32 summation
// of k terms in either order), measured here and logged.
func TestMatMulTBF16DotAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	c := withCtx(t, 2)
	m, k, n := 8, 1024, 96
	w, wf := bf16Slice(rng, n*k)
	x := randSlice(rng, m*k)
	exact, dot := make([]float32, m*n), make([]float32, m*n)
	c.MatMulTBF16(exact, x, w, m, k, n, nil)
	c.MatMulTBF16Dot(dot, x, w, m, k, n, nil)
	worst := 0.0
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var mag float64
			for t := 0; t < k; t++ {
				mag += math.Abs(float64(x[i*k+t]) * float64(wf[j*k+t]))
			}
			worst = max(worst, math.Abs(float64(dot[i*n+j])-float64(exact[i*n+j]))/mag)
		}
	}
	t.Logf("bf16 dot vs exact: worst |diff| / sum|x||w| = %.3g (bound 2^-8 = %.3g)", worst, 1.0/256)
	if worst > 1.0/256 {
		t.Fatalf("bf16 dot product off by %.3g of sum|x||w|, more than 2^-8", worst)
	}
}

// TestBF16DotEdges: bf16 subnormal inputs count as zero, a subnormal sum
// flushes to zero, NaN rounds to a NaN, and the rounding to bf16 is to
// nearest even.
func TestBF16DotEdges(t *testing.T) {
	xb := make([]uint16, 4)
	RoundBF16(xb, []float32{1 + 1.0/256, 1 + 3.0/256, float32(math.NaN()), -1.5})
	if xb[0] != 0x3f80 || xb[1] != 0x3f82 || xb[2]&0x7fc0 != 0x7fc0 || xb[3] != 0xbfc0 {
		t.Fatalf("RoundBF16 = %#x", xb)
	}
	x := make([]uint16, 32)
	w := make([]uint16, 32)
	x[1], w[1] = 0x0001, 0x3f80 // a subnormal input times 1: zero (DAZ)
	if got := DotBF16Pairs(x, w); got != 0 {
		t.Fatalf("subnormal input: %g, want 0", got)
	}
	x[1], w[1] = 0x0080, 0x3f00 // 2^-126 * 0.5: a subnormal product, flushed (FTZ)
	if got := DotBF16Pairs(x, w); got != 0 {
		t.Fatalf("subnormal sum: %g, want 0", got)
	}
	if useBF16Dot {
		c := withCtx(t, 1)
		y := make([]float32, 8)
		ws := make([]uint16, 8*32)
		copy(ws, w)
		xf := make([]float32, 32)
		for i, h := range x {
			xf[i] = math.Float32frombits(uint32(h) << 16)
		}
		c.MatMulTBF16Dot(y, xf, ws, 1, 32, 8, nil)
		if y[0] != 0 {
			t.Fatalf("assembly: subnormal sum %g, want 0 (FTZ)", y[0])
		}
	}
}

// TestF32ToBF16AVX2: RoundBF16's vector path gives safetensors.F32ToBF16's
// bits for random bit patterns (every exponent, NaNs and subnormals among
// them) and for the edges: ties both ways, the largest finite values
// rounding to infinity, infinities, signed zeros, quiet and signalling NaNs.
func TestF32ToBF16AVX2(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly kernels")
	}
	rng := rand.New(rand.NewPCG(31, 37))
	edges := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x3f808000,
		0x3f818000, 0x3f807fff, 0x00008000, 0x00018000, 0x7fc00000, 0xffc00001, 0x7f800001, 0xff800001, 0x7fffffff, 0xffffffff}
	src := make([]float32, 1<<16)
	for i := range src {
		b := rng.Uint32()
		if i < len(edges) {
			b = edges[i]
		}
		src[i] = math.Float32frombits(b)
	}
	for _, n := range []int{len(src), 13, 8, 3} { // the tails run the Go code
		got := make([]uint16, n)
		RoundBF16(got, src[:n])
		for i, v := range src[:n] {
			if want := safetensors.F32ToBF16(v); got[i] != want {
				t.Fatalf("n=%d: %#08x -> %#04x, want %#04x", n, math.Float32bits(v), got[i], want)
			}
		}
	}
}
