package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Each fused kernel against the composition of the unfused kernels it
// replaces, bit for bit: the fusions keep the arithmetic and its order
// (passes.Fusion.BitIdentical), so no tolerance is allowed. Shapes are
// random and odd (1 row, odd widths and head counts) and large enough in
// places for the work to split over several tasks; every test runs on 1
// and 3 workers.

// sameBits reports the first index where got and want differ in their
// bits (so -0 and NaN payloads count), or -1.
func sameBits(got, want []float32) int {
	if len(got) != len(want) {
		return 0
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return i
		}
	}
	return -1
}

func checkBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if i := sameBits(got, want); i >= 0 {
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, unfused %d", what, len(got), len(want))
		}
		t.Fatalf("%s: element %d is %v (%#08x), unfused %v (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
	}
}

func clone(s []float32) []float32 { return append([]float32(nil), s...) }

// TestAddRMSNorm: AddRMSNorm(a, b, w) = (Add(a, b), RMSNorm(Add(a, b), w)).
func TestAddRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	// (rows, d): one row, odd widths, and enough rows of a wide d that
	// normRowsPerTask splits them over tasks.
	for _, sh := range [][2]int{{1, 1}, {1, 64}, {3, 7}, {13, 33}, {5, 129}, {41, 4099}} {
		for _, workers := range []int{1, 3} {
			rows, d := sh[0], sh[1]
			t.Run(fmt.Sprintf("%dx%d/w%d", rows, d, workers), func(t *testing.T) {
				c := withCtx(t, workers)
				a, b, w := randSlice(rng, rows*d), randSlice(rng, rows*d), randSlice(rng, d)
				sum, y := make([]float32, rows*d), make([]float32, rows*d)
				c.AddRMSNorm(sum, y, a, b, w, rows, d, 1e-6)

				wantSum, wantY := make([]float32, rows*d), make([]float32, rows*d)
				c.Add(wantSum, a, b)
				c.RMSNorm(wantY, wantSum, w, rows, d, 1e-6)
				checkBits(t, "residual", sum, wantSum)
				checkBits(t, "norm", y, wantY)
			})
		}
	}
}

// normRopeCase is random QK-norm + RoPE input: rows of heads x hd.
type normRopeCase struct {
	rows, heads, hd int
	x, w            []float32
	pos             []int32
	r               *Rope
}

func newNormRopeCase(rng *rand.Rand, rows, heads, hd, maxPos int) normRopeCase {
	nc := normRopeCase{rows: rows, heads: heads, hd: hd,
		x: randSlice(rng, rows*heads*hd), w: randSlice(rng, hd), pos: make([]int32, rows),
		r: NewRope(hd, 1e6, maxPos)}
	for i := range nc.pos {
		nc.pos[i] = int32(rng.IntN(maxPos))
	}
	return nc
}

// unfused is what the unfused graph computes: qk_norm (copy, HeadRMSNorm)
// then rope (copy, Rope.Apply).
func (nc normRopeCase) unfused(t *testing.T, c *Ctx) []float32 {
	t.Helper()
	y := clone(nc.x)
	c.HeadRMSNorm(y, nc.w, nc.rows, nc.heads, nc.hd, 1e-6)
	if err := nc.r.Apply(y, nc.rows, nc.heads, nc.hd, nc.pos); err != nil {
		t.Fatal(err)
	}
	return y
}

// normRopeShapes: (rows, heads, hd); hd is even (RoPE rotates halves).
var normRopeShapes = [][3]int{{1, 1, 2}, {1, 4, 16}, {3, 3, 6}, {7, 2, 64}, {17, 5, 10}, {300, 8, 128}}

// TestNormRope: NormRope = RoPE(HeadRMSNorm(x)).
func TestNormRope(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 2))
	for _, sh := range normRopeShapes {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%dx%dx%d/w%d", sh[0], sh[1], sh[2], workers), func(t *testing.T) {
				c := withCtx(t, workers)
				nc := newNormRopeCase(rng, sh[0], sh[1], sh[2], 64)
				y := make([]float32, len(nc.x))
				if err := c.NormRope(y, nc.x, nc.w, nc.r, nc.rows, nc.heads, nc.hd, nc.pos, 1e-6); err != nil {
					t.Fatal(err)
				}
				checkBits(t, "norm_rope", y, nc.unfused(t, c))
			})
		}
	}
}

// cacheSlots gives each of rows rows its own (seq, pos) slot of a cache
// [seqs][maxT][width]; the tests fill the cache with noise, so a write to
// the wrong slot, or to a slot no row owns, shows.
func cacheSlots(rng *rand.Rand, rows, seqs, maxT int) (seq, pos []int32) {
	seq, pos = make([]int32, rows), make([]int32, rows)
	for i, s := range rng.Perm(seqs * maxT)[:rows] {
		seq[i], pos[i] = int32(s/maxT), int32(s%maxT)
	}
	return seq, pos
}

// TestNormRopeAppend: NormRopeAppend(cache, k) = KVAppend(cache,
// RoPE(HeadRMSNorm(k))), the rest of the cache untouched.
func TestNormRopeAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 3))
	for _, sh := range normRopeShapes {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%dx%dx%d/w%d", sh[0], sh[1], sh[2], workers), func(t *testing.T) {
				c := withCtx(t, workers)
				rows, heads, hd := sh[0], sh[1], sh[2]
				seqs, maxT := 3, max(8, rows)
				nc := newNormRopeCase(rng, rows, heads, hd, maxT)
				seq, pos := cacheSlots(rng, rows, seqs, maxT)
				nc.pos = pos
				width := heads * hd
				cache := randSlice(rng, seqs*maxT*width)
				want := clone(cache)
				if err := c.NormRopeAppend(KVOf(cache), nc.x, nc.w, nc.r, rows, heads, hd, maxT, seq, pos, 1e-6); err != nil {
					t.Fatal(err)
				}
				if err := c.KVAppend(KVOf(want), nc.unfused(t, c), rows, heads, hd, maxT, seq, pos); err != nil {
					t.Fatal(err)
				}
				checkBits(t, "k cache", cache, want)
			})
		}
	}
}

// TestNormRopeAppendKV: NormRopeAppendKV = NormRopeAppend of K (checked
// above against its composition) then KVAppend of V at the same slots.
func TestNormRopeAppendKV(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 4))
	for _, sh := range normRopeShapes {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("%dx%dx%d/w%d", sh[0], sh[1], sh[2], workers), func(t *testing.T) {
				c := withCtx(t, workers)
				rows, heads, hd := sh[0], sh[1], sh[2]
				seqs, maxT := 2, max(8, rows)
				nc := newNormRopeCase(rng, rows, heads, hd, maxT)
				seq, pos := cacheSlots(rng, rows, seqs, maxT)
				nc.pos = pos
				width := heads * hd
				v := randSlice(rng, rows*width)
				kcache, vcache := randSlice(rng, seqs*maxT*width), randSlice(rng, seqs*maxT*width)
				wantK, wantV := clone(kcache), clone(vcache)
				if err := c.NormRopeAppendKV(KVOf(kcache), KVOf(vcache), nc.x, v, nc.w, nc.r, rows, heads, hd, maxT, seq, pos, 1e-6); err != nil {
					t.Fatal(err)
				}
				if err := c.KVAppend(KVOf(wantK), nc.unfused(t, c), rows, heads, hd, maxT, seq, pos); err != nil {
					t.Fatal(err)
				}
				if err := c.KVAppend(KVOf(wantV), v, rows, heads, hd, maxT, seq, pos); err != nil {
					t.Fatal(err)
				}
				checkBits(t, "k cache", kcache, wantK)
				checkBits(t, "v cache", vcache, wantV)
			})
		}
	}
}

// TestSwiGLU: SwiGLU(gate, up) = Mul(SiLU(gate), up). Lengths cover the
// vector kernel's scalar tail and the split into chunks of ewChunk.
// (TestElementwise holds SwiGLU to a float64 reference within 1e-6; this
// holds it to the unfused kernels exactly.)
func TestSwiGLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 5))
	for _, n := range []int{1, 7, 8, 33, 193, ewChunk - 1, 3*ewChunk + 5} {
		for _, workers := range []int{1, 3} {
			t.Run(fmt.Sprintf("n%d/w%d", n, workers), func(t *testing.T) {
				c := withCtx(t, workers)
				gate, up := randSlice(rng, n), randSlice(rng, n)
				for i := range gate {
					gate[i] *= 8 // reach silu's saturated tails too
				}
				y := make([]float32, n)
				c.SwiGLU(y, gate, up)
				want := make([]float32, n)
				c.SiLU(want, gate)
				c.Mul(want, want, up)
				checkBits(t, "swiglu", y, want)
			})
		}
	}
}

// TestConcatProj: one MatMulT over weights stacked by rows (concat_proj's
// Q|K|V or gate|up matmul) gives, column block by column block, the
// separate matmuls' bits, biases included.
func TestConcatProj(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 6))
	cases := []struct {
		m, k  int
		parts []int
	}{
		{1, 1, []int{1, 1}},
		{1, 64, []int{64, 32, 32}},
		{3, 7, []int{5, 3}},
		{7, 67, []int{13, 8, 9}},
		{13, 64, []int{192, 192}},
		{6, 129, []int{17, 40, 1}},
	}
	for _, tc := range cases {
		for _, biased := range []bool{false, true} {
			for _, workers := range []int{1, 3} {
				t.Run(fmt.Sprintf("%dx%d%v/bias=%v/w%d", tc.m, tc.k, tc.parts, biased, workers), func(t *testing.T) {
					c := withCtx(t, workers)
					x := randSlice(rng, tc.m*tc.k)
					var stacked, stackedBias []float32
					var ws, bs [][]float32
					n := 0
					for _, p := range tc.parts {
						w := randSlice(rng, p*tc.k)
						ws, stacked = append(ws, w), append(stacked, w...)
						if biased {
							b := randSlice(rng, p)
							bs, stackedBias = append(bs, b), append(stackedBias, b...)
						}
						n += p
					}
					y := make([]float32, tc.m*n)
					c.MatMulT(y, x, stacked, tc.m, tc.k, n, stackedBias)
					start := 0
					for i, p := range tc.parts {
						part := make([]float32, tc.m*p)
						var b []float32
						if biased {
							b = bs[i]
						}
						c.MatMulT(part, x, ws[i], tc.m, tc.k, p, b)
						got := make([]float32, 0, tc.m*p)
						for r := 0; r < tc.m; r++ {
							got = append(got, y[r*n+start:r*n+start+p]...)
						}
						checkBits(t, fmt.Sprintf("columns [%d, %d)", start, start+p), got, part)
						start += p
					}
				})
			}
		}
	}
}
