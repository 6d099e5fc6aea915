package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gelo/models/safetensors"
)

// round16 rounds f32 values to format f, returning the bits and the exactly
// widened values.
func round16(src []float32, f KVFormat) ([]uint16, []float32) {
	h, w := make([]uint16, len(src)), make([]float32, len(src))
	for i, v := range src {
		if f == KVF16 {
			h[i] = safetensors.F32ToF16(v)
			w[i] = safetensors.F16ToF32(h[i])
		} else {
			h[i] = safetensors.F32ToBF16(v)
			w[i] = safetensors.BF16ToF32(h[i])
		}
	}
	return h, w
}

// TestAttention16: attention on an f16 or bf16 cache is bit-identical to
// attention on an f32 cache holding the widened values (the 16-bit path
// only changes what is read), for every worker count, alone or batched,
// with the assembly and with the Go fallback.
func TestAttention16(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 21))
	for _, useA := range asmModes() {
		setMode(t, useA)
		for _, f := range []KVFormat{KVF16, KVBF16} {
			for _, cf := range [][3]int{{4, 4, 8}, {6, 2, 20}, {16, 8, 128}} {
				heads, kvHeads, hd := cf[0], cf[1], cf[2]
				const S, maxT = 3, 140
				n := S * maxT * kvHeads * hd
				k16, kw := round16(randSlice(rng, n), f)
				v16, vw := round16(randSlice(rng, n), f)
				seq := []int32{0, 2, 1, 2, 0, 1, 2}
				pos := []int32{0, 139, 2, 7, 64, 71, 128}
				rows := len(seq)
				q := randSlice(rng, rows*heads*hd)
				for _, nw := range []int{1, 2, 3} {
					c := withCtx(t, nw)
					want, got := make([]float32, len(q)), make([]float32, len(q))
					if err := c.Attention(want, q, KVOf(kw), KVOf(vw), rows, heads, kvHeads, hd, maxT, seq, pos, 0.1); err != nil {
						t.Fatal(err)
					}
					if err := c.Attention(got, q, KV16(k16, f), KV16(v16, f), rows, heads, kvHeads, hd, maxT, seq, pos, 0.1); err != nil {
						t.Fatal(err)
					}
					if i := bitsEqual(got, want); i >= 0 {
						t.Fatalf("asm=%v %v %v workers=%d: out[%d] = %v, the f32 cache gives %v", useA, f, cf, nw, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestKVAppend16: appends store every value rounded to nearest even, the
// fused appends the same bits as their unfused composition.
func TestKVAppend16(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 22))
	for _, f := range []KVFormat{KVF16, KVBF16} {
		for _, sh := range normRopeShapes {
			t.Run(fmt.Sprintf("%v/%dx%dx%d", f, sh[0], sh[1], sh[2]), func(t *testing.T) {
				c := withCtx(t, 2)
				rows, heads, hd := sh[0], sh[1], sh[2]
				seqs, maxT := 2, max(8, rows)
				width := heads * hd
				seq, pos := cacheSlots(rng, rows, seqs, maxT)
				x := randSlice(rng, rows*width)
				// Values that exercise the rounding: ties, overflow, tiny.
				x[0] = float32(math.Inf(1))
				if len(x) > 3 {
					x[1], x[2], x[3] = 65519, 1e-8, float32(1+1.0/2048) // f16 tie to even
				}
				got := KV16(make([]uint16, seqs*maxT*width), f)
				if err := c.KVAppend(got, x, rows, heads, hd, maxT, seq, pos); err != nil {
					t.Fatal(err)
				}
				want, _ := round16(x, f)
				for r := 0; r < rows; r++ {
					for g := 0; g < heads; g++ {
						o := KVOffset(int(seq[r]), g, int(pos[r]), heads, hd, maxT)
						for i := 0; i < hd; i++ {
							if a, b := got.H16[o+i], want[r*width+g*hd+i]; a != b {
								t.Fatalf("row %d head %d [%d]: stored %#04x, want %#04x", r, g, i, a, b)
							}
						}
					}
				}
				nc := newNormRopeCase(rng, rows, heads, hd, maxT)
				nc.pos = pos
				v := randSlice(rng, rows*width)
				fk, fv := KV16(make([]uint16, seqs*maxT*width), f), KV16(make([]uint16, seqs*maxT*width), f)
				if err := c.NormRopeAppendKV(fk, fv, nc.x, v, nc.w, nc.r, rows, heads, hd, maxT, seq, pos, 1e-6); err != nil {
					t.Fatal(err)
				}
				uk, uv := KV16(make([]uint16, seqs*maxT*width), f), KV16(make([]uint16, seqs*maxT*width), f)
				if err := c.KVAppend(uk, nc.unfused(t, c), rows, heads, hd, maxT, seq, pos); err != nil {
					t.Fatal(err)
				}
				if err := c.KVAppend(uv, v, rows, heads, hd, maxT, seq, pos); err != nil {
					t.Fatal(err)
				}
				for i := range uk.H16 {
					if fk.H16[i] != uk.H16[i] || fv.H16[i] != uv.H16[i] {
						t.Fatalf("fused append differs at %d", i)
					}
				}
			})
		}
	}
}

// TestWidenF16: the F16C widening equals the Go conversion on all 2^16
// inputs (NaNs compared as bits).
func TestWidenF16(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	got := make([]float32, len(src))
	widenF16(got, src)
	for i, h := range src {
		if a, b := math.Float32bits(got[i]), math.Float32bits(safetensors.F16ToF32(h)); a != b {
			t.Fatalf("%#04x: widened to %#08x, want %#08x", h, a, b)
		}
	}
}

// TestAttentionPrefillBlocks: with 16 rows or more the tasks are blocks of
// rows per KV head; every row is still bit-identical to that row alone,
// and a 16-bit cache to the f32 cache of its widened values, whatever the
// worker count.
func TestAttentionPrefillBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 23))
	for _, useA := range asmModes() {
		setMode(t, useA)
		// Rows of mixed sequences at random positions, then a prompt of
		// one sequence from position 0 and one from 100 (a block of one
		// sequence takes its scores as a GEMM where AVX-512 runs; from 100
		// the last chunk's whole tiles would pass maxT, so it does not).
		for _, cs := range [][4]int{{8, 2, 16, -1}, {6, 2, 20, -1}, {16, 8, 128, -1}, {16, 8, 128, 0}, {6, 2, 20, 0}, {16, 8, 128, 100}} {
			heads, kvHeads, hd, from := cs[0], cs[1], cs[2], cs[3]
			cf := cs[:3]
			const S, maxT, rows = 2, 140, 37
			n := S * maxT * kvHeads * hd
			seq, pos := make([]int32, rows), make([]int32, rows)
			for r := range seq {
				seq[r], pos[r] = int32(r%3%S), int32(rng.IntN(maxT))
				if from >= 0 {
					seq[r], pos[r] = 1, int32(from+r)
				}
			}
			if from < 0 {
				pos[3], pos[4] = 0, 139
			}
			q := randSlice(rng, rows*heads*hd)
			for _, f := range []KVFormat{KVF32, KVF16, KVBF16} {
				var kc, vc, kw, vw KV
				if f == KVF32 {
					kc, vc = KVOf(randSlice(rng, n)), KVOf(randSlice(rng, n))
					kw, vw = kc, vc
				} else {
					k16, k32 := round16(randSlice(rng, n), f)
					v16, v32 := round16(randSlice(rng, n), f)
					kc, vc, kw, vw = KV16(k16, f), KV16(v16, f), KVOf(k32), KVOf(v32)
				}
				for _, nw := range []int{1, 2, 3} {
					c := withCtx(t, nw)
					got := make([]float32, len(q))
					if err := c.Attention(got, q, kc, vc, rows, heads, kvHeads, hd, maxT, seq, pos, 0.1); err != nil {
						t.Fatal(err)
					}
					one := make([]float32, heads*hd)
					for r := 0; r < rows; r++ {
						if err := c.Attention(one, q[r*heads*hd:], kw, vw, 1, heads, kvHeads, hd, maxT, seq[r:], pos[r:], 0.1); err != nil {
							t.Fatal(err)
						}
						if i := bitsEqual(got[r*heads*hd:(r+1)*heads*hd], one); i >= 0 {
							t.Fatalf("asm=%v %v %v workers=%d: row %d in the block differs from the f32 row alone at %d", useA, f, cf, nw, r, i)
						}
					}
				}
			}
		}
	}
}

// vChunk returns T random V rows of d columns, ldv apart, as a cache of
// format f holds them (h, for a 16-bit cache) and widened (wide).
func vChunk(rng *rand.Rand, f KVFormat, T, d int) (ldv int, h []uint16, wide []float32) {
	ldv = d + 128
	raw := randSlice(rng, T*ldv)
	h, wide = round16(raw, f)
	if f == KVF32 {
		wide = raw
	}
	return ldv, h, wide
}

// TestWsum2: the two-head AVX-512 weighted sums give, for each head, the
// bits of the one-head AVX2 kernel (wsum, or wsumH16 on a 16-bit cache),
// from zero and accumulating, for every cache format.
func TestWsum2(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 23))
	for _, f := range []KVFormat{KVF32, KVF16, KVBF16} {
		for _, d := range []int{128, 256} {
			if !wsum2Asm(f, d) {
				t.Skipf("no AVX-512 here: wsum2 is not used")
			}
			for _, T := range []int{1, 7, 64} {
				for _, acc := range []bool{false, true} {
					ldv, h, wide := vChunk(rng, f, T, d)
					p0, p1 := randSlice(rng, T), randSlice(rng, T)
					init0, init1 := randSlice(rng, d), randSlice(rng, d)
					out0, out1 := append([]float32(nil), init0...), append([]float32(nil), init1...)
					wsum2(f, out0, out1, p0, p1, wide, h, ldv, T, d, acc)
					want0, want1 := append([]float32(nil), init0...), append([]float32(nil), init1...)
					if f == KVF32 {
						wsum(want0, p0, wide, ldv, T, d, acc)
						wsum(want1, p1, wide, ldv, T, d, acc)
					} else {
						wsumH16(f, want0, p0, h, ldv, T, d, acc)
						wsumH16(f, want1, p1, h, ldv, T, d, acc)
					}
					if i := bitsEqual(out0, want0); i >= 0 {
						t.Fatalf("%v d=%d T=%d acc=%v head 0 [%d] = %v, want %v", f, d, T, acc, i, out0[i], want0[i])
					}
					if i := bitsEqual(out1, want1); i >= 0 {
						t.Fatalf("%v d=%d T=%d acc=%v head 1 [%d] = %v, want %v", f, d, T, acc, i, out1[i], want1[i])
					}
				}
			}
		}
	}
}

// TestWsum6: the six-pair weighted sums (three rows by two heads, with
// strides as a prefill block lays them out) give, for each pair, the bits
// of the one-head kernel, from zero and accumulating, for every cache
// format, writing nothing between or past the pairs' outputs.
func TestWsum6(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 31))
	for _, f := range []KVFormat{KVF32, KVF16, KVBF16} {
		for _, d := range []int{128, 256} {
			if !wsum6Asm(f, d) {
				t.Skipf("no AVX-512 here: wsum6 is not used")
			}
			for _, T := range []int{1, 7, 64} {
				for _, acc := range []bool{false, true} {
					ldv, h, wide := vChunk(rng, f, T, d)
					oh, ldo := d+16, 3*(d+16) // heads, then rows, with gaps
					ph, ldp := T+5, 2*(T+5)+3
					p := randSlice(rng, 2*ldp+ph+T)
					init := randSlice(rng, 2*ldo+oh+d+16)
					out := append([]float32(nil), init...)
					wsum6(f, out, ldo, oh, p, ldp, ph, wide, h, ldv, T, d, acc)
					want := append([]float32(nil), init...)
					for r := 0; r < 3; r++ {
						for hh := 0; hh < 2; hh++ {
							o, pp := want[r*ldo+hh*oh:r*ldo+hh*oh+d], p[r*ldp+hh*ph:]
							if f == KVF32 {
								wsum(o, pp, wide, ldv, T, d, acc)
							} else {
								wsumH16(f, o, pp, h, ldv, T, d, acc)
							}
						}
					}
					if i := bitsEqual(out, want); i >= 0 {
						t.Fatalf("%v d=%d T=%d acc=%v: out[%d] = %v, want %v", f, d, T, acc, i, out[i], want[i])
					}
				}
			}
		}
	}
}

// TestGemv2: the two-head scores (AVX-512, else AVX2) give, for each head,
// the bits of the one-head kernel (gemv1x8H16 on a 16-bit cache, gemv1x8
// on an f32 one).
func TestGemv2(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 24))
	for _, f := range []KVFormat{KVF32, KVF16, KVBF16} {
		for _, k := range []int{8, 128, 136} {
			if !gemv2Asm(f, k) {
				t.Skipf("no AVX2 here: the two-head scores are not used")
			}
			for _, nt := range []int{1, 3, 9} {
				ldw := k + 16
				x0, x1 := randSlice(rng, k), randSlice(rng, k)
				y0, y1 := make([]float32, 8*nt), make([]float32, 8*nt)
				w0, w1 := make([]float32, 8*nt), make([]float32, 8*nt)
				if f == KVF32 {
					w := randSlice(rng, 8*nt*ldw)
					gemv2x8F32(x0, x1, w, ldw, k, nt, y0, y1)
					gemv1x8(x0, w, ldw, k, nt, w0)
					gemv1x8(x1, w, ldw, k, nt, w1)
				} else {
					h, _ := round16(randSlice(rng, 8*nt*ldw), f)
					gemv2x8H16(f, x0, x1, h, ldw, k, nt, y0, y1)
					gemv1x8H16(f, x0, h, ldw, k, nt, w0)
					gemv1x8H16(f, x1, h, ldw, k, nt, w1)
				}
				if i := bitsEqual(y0, w0); i >= 0 {
					t.Fatalf("%v k=%d nt=%d head 0 [%d] = %v, want %v", f, k, nt, i, y0[i], w0[i])
				}
				if i := bitsEqual(y1, w1); i >= 0 {
					t.Fatalf("%v k=%d nt=%d head 1 [%d] = %v, want %v", f, k, nt, i, y1[i], w1[i])
				}
			}
		}
	}
}

// TestNarrowF16 holds the F16C narrowing to safetensors.F32ToF16 bit for
// bit: random bit patterns (every exponent, NaN payloads quiet and
// signalling), the rounding edges (ties, the largest finite f16 and the
// first value that overflows, the subnormal range) and lengths with a tail.
func TestNarrowF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var src []float32
	for _, b := range []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0x7fbfffff, 0xffc00001,
		0x477fe000, 0x477fefff, 0x477ff000, 0x33000000, 0x33000001, 0x38800000, 0x387fc000, 0x00000001, 0x3f801000, 0x3f803000} {
		src = append(src, math.Float32frombits(b))
	}
	for range 1 << 16 {
		src = append(src, math.Float32frombits(rng.Uint32()))
	}
	for range 1 << 14 {
		// Near f16's range, where rounding decides.
		src = append(src, math.Float32frombits(0x33000000+rng.Uint32N(0x477ff000-0x33000000+0x2000)|rng.Uint32N(2)<<31))
	}
	for _, n := range []int{len(src), 7, 8, 13, 1} {
		got := make([]uint16, n)
		narrowF16(got, src[:n])
		for i, v := range src[:n] {
			if want := safetensors.F32ToF16(v); got[i] != want {
				t.Fatalf("n=%d: narrowF16(%#08x) = %#04x, want %#04x", n, math.Float32bits(v), got[i], want)
			}
		}
	}
}

// TestAttentionPrefetchVariants: the decode attention kernels that
// prefetch into L2 (prefetchL2, picked on Intel) and those tuned on AMD
// give the same bits, and each keeps a 16-bit cache bit-identical to an
// f32 cache of the widened values, whichever this machine runs by default.
func TestAttentionPrefetchVariants(t *testing.T) {
	if !defaultAVX512 {
		t.Skip("the two prefetch variants exist for the AVX-512 kernels only")
	}
	defaultL2 := prefetchL2
	t.Cleanup(func() { prefetchL2 = defaultL2 })
	rng := rand.New(rand.NewPCG(19, 23))
	const heads, kvHeads, hd, S, maxT = 16, 8, 128, 2, 300
	n := S * maxT * kvHeads * hd
	seq := []int32{0, 1, 1, 0}
	pos := []int32{299, 7, 150, 64}
	rows := len(seq)
	q := randSlice(rng, rows*heads*hd)
	c := withCtx(t, 2)
	for _, f := range []KVFormat{KVF16, KVBF16} {
		k16, kw := round16(randSlice(rng, n), f)
		v16, vw := round16(randSlice(rng, n), f)
		var outs [][]float32
		for _, l2 := range []bool{false, true} {
			prefetchL2 = l2
			for _, kv := range [][2]KV{{KVOf(kw), KVOf(vw)}, {KV16(k16, f), KV16(v16, f)}} {
				out := make([]float32, len(q))
				if err := c.Attention(out, q, kv[0], kv[1], rows, heads, kvHeads, hd, maxT, seq, pos, 0.1); err != nil {
					t.Fatal(err)
				}
				outs = append(outs, out)
			}
		}
		for i, o := range outs[1:] {
			if j := bitsEqual(o, outs[0]); j >= 0 {
				t.Fatalf("%v: run %d (prefetchL2 %v, 16-bit cache %v): out[%d] = %v, want %v", f, i+1, (i+1) >= 2, (i+1)%2 == 1, j, o[j], outs[0][j])
			}
		}
	}
}
