//go:build amd64 && !purego

package kernels

import (
	"golang.org/x/sys/cpu"

	"gelo/lower/cpu/cpuid"
)

// useAsm selects the AVX2+FMA assembly kernels. It is decided once at init
// from CPU feature detection (tests flip it to compare with the fallback).
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// useAVX512 additionally selects the AVX-512 GEMM micro-kernels (same
// arithmetic as the AVX2 kernels: bit-identical results). They use
// EVEX-encoded 128/256-bit forms on X16-X31/Y16-Y31, hence VL.
var useAVX512 = useAsm && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL

// useF16C selects the F16C widening of f16 KV caches (VCVTPH2PS).
var useF16C = useAsm && cpu.X86.HasF16C

// prefetchL2 selects the kernels that prefetch into L2 (the decode
// attention's gemv2x8*AVX512L2 and wsum2*AVX512L2, the bf16 matvec's
// gemv1x8BF16AVX2L2) over those tuned on AMD (see cpuid.L2Prefetch; tests
// run both). Same bits either way.
var prefetchL2 = cpuid.L2Prefetch

// haveAsm reports whether assembly kernels exist for this build at all.
const haveAsm = true

//go:noescape
func gemm4x3AVX2(x0, x1, x2, x3, w *float32, ldw, k, ntiles int, y0, y1, y2, y3 *float32)

//go:noescape
func gemv1x8AVX2(x, w *float32, ldw, k, ntiles int, y *float32)

//go:noescape
func dotAVX2(x, w *float32, k int) float32

//go:noescape
func sumAVX2(p *float32, n int) float32

func fmaLoopAVX2(iters int)

//go:noescape
func gemm6x8AVX512(x *float32, ldx int, w *float32, ldw, k, ntiles int, y *float32, ldy int)

func fmaLoopAVX512(iters int)

// gemm6x8 computes, for t < ntiles, r < 6, c < 8:
// y[r*ldy+8t+c] = dot(x[r*ldx:][0:k], w[(8t+c)*ldw:][0:k]) (AVX-512 only;
// k >= 1, ntiles >= 1).
func gemm6x8(x []float32, ldx int, w []float32, ldw, k, ntiles int, y []float32, ldy int) {
	_ = x[5*ldx+k-1]
	_ = w[(8*ntiles-1)*ldw+k-1]
	_ = y[5*ldy+8*ntiles-1]
	if !useAVX512 {
		panic("kernels: gemm6x8 without AVX-512")
	}
	gemm6x8AVX512(&x[0], ldx, &w[0], ldw, k, ntiles, &y[0], ldy)
}

//go:noescape
func packF32x8AVX512(dst *float32, w *float32, ldw, k, ntiles int)

//go:noescape
func packBF16x8AVX512(dst *float32, w *uint16, ldw, k, ntiles int)

//go:noescape
func gemm6x8PackedAVX512(x *float32, ldx int, wp *float32, k, ntiles int, y *float32, ldy int)

// packTiles packs rows [0, 8*ntiles) of w (row j at j*ldw; f32 if w32 is
// set, else bf16 wb, widened) into dst as gemm6x8Packed's tiles (AVX-512
// only; k%8 == 0, k >= 8, ntiles >= 1).
func packTiles(dst, w32 []float32, wb []uint16, ldw, k, ntiles int) {
	_ = dst[8*ntiles*k-1]
	if !useAVX512 || k%8 != 0 || k < 8 {
		panic("kernels: packTiles needs AVX-512 and k%8 == 0")
	}
	if w32 != nil {
		_ = w32[(8*ntiles-1)*ldw+k-1]
		packF32x8AVX512(&dst[0], &w32[0], ldw, k, ntiles)
		return
	}
	_ = wb[(8*ntiles-1)*ldw+k-1]
	packBF16x8AVX512(&dst[0], &wb[0], ldw, k, ntiles)
}

// gemm6x8Packed is gemm6x8 on packed tiles (packTiles), with its bits
// (AVX-512 only; k%8 == 0, k >= 8, ntiles >= 1).
func gemm6x8Packed(x []float32, ldx int, wp []float32, k, ntiles int, y []float32, ldy int) {
	_ = x[5*ldx+k-1]
	_ = wp[8*ntiles*k-1]
	_ = y[5*ldy+8*ntiles-1]
	if !useAVX512 || k%8 != 0 || k < 8 {
		panic("kernels: gemm6x8Packed needs AVX-512 and k%8 == 0")
	}
	gemm6x8PackedAVX512(&x[0], ldx, &wp[0], k, ntiles, &y[0], ldy)
}

// The wrappers below check every bound the assembly relies on (a panic on
// an internal indexing bug, never a stray memory access) and dispatch.

// gemm4x3 computes, for t < ntiles, r < 4, c < 3:
// y_r[3t+c] = dot(x_r[0:k], w[(3t+c)*ldw:][0:k]). k >= 1, ntiles >= 1.
func gemm4x3(x0, x1, x2, x3, w []float32, ldw, k, ntiles int, y0, y1, y2, y3 []float32) {
	_, _, _, _ = x0[k-1], x1[k-1], x2[k-1], x3[k-1]
	_ = w[(3*ntiles-1)*ldw+k-1]
	_, _, _, _ = y0[3*ntiles-1], y1[3*ntiles-1], y2[3*ntiles-1], y3[3*ntiles-1]
	if useAsm {
		gemm4x3AVX2(&x0[0], &x1[0], &x2[0], &x3[0], &w[0], ldw, k, ntiles, &y0[0], &y1[0], &y2[0], &y3[0])
		return
	}
	gemm4x3Go(x0, x1, x2, x3, w, ldw, k, ntiles, y0, y1, y2, y3)
}

// gemv1x8 computes, for t < ntiles, c < 8: y[8t+c] = dot(x[0:k], w[(8t+c)*ldw:][0:k]).
func gemv1x8(x, w []float32, ldw, k, ntiles int, y []float32) {
	_ = x[k-1]
	_ = w[(8*ntiles-1)*ldw+k-1]
	_ = y[8*ntiles-1]
	if useAsm {
		gemv1x8AVX2(&x[0], &w[0], ldw, k, ntiles, &y[0])
		return
	}
	gemv1x8Go(x, w, ldw, k, ntiles, y)
}

// dot returns dot(x[0:k], w[0:k]) in the canonical order (k >= 1).
func dot(x, w []float32, k int) float32 {
	_, _ = x[k-1], w[k-1]
	if useAsm {
		return dotAVX2(&x[0], &w[0], k)
	}
	return dotGo(x, w, k)
}

// sum64 sums p[0:n] (n a multiple of 64) in an unspecified fixed order.
func sum64(p []float32, n int) float32 {
	_ = p[n-1]
	if useAsm {
		return sumAVX2(&p[0], n)
	}
	return sumGo(p, n)
}

//go:noescape
func bf16DotLoopAVX512(iters int)

// bf16DotLoop runs iters iterations of 192 flops of the bf16 dot product
// in registers (useBF16Dot only).
func bf16DotLoop(iters int) {
	if !useBF16Dot {
		panic("kernels: bf16DotLoop without AVX512_BF16")
	}
	bf16DotLoopAVX512(iters / 4)
}

// fmaLoop runs iters iterations of 192 flops in registers (with the
// widest vectors the GEMM uses).
func fmaLoop(iters int) {
	if useAVX512 {
		fmaLoopAVX512(iters / 2)
		return
	}
	if useAsm {
		fmaLoopAVX2(iters)
		return
	}
	fmaLoopGo(iters)
}

//go:noescape
func wsumAVX2(out, p, v *float32, ldv, t, d, acc int)

// wsum sets out[c] = a + sum_{s<t} p[s]*v[s*ldv+c] for c < d, with
// a = out[c] if acc, else 0, in the order documented on Attention (t, d >= 1).
func wsum(out, p, v []float32, ldv, t, d int, acc bool) {
	_, _ = out[d-1], p[t-1]
	_ = v[(t-1)*ldv+d-1]
	if useAsm {
		a := 0
		if acc {
			a = 1
		}
		wsumAVX2(&out[0], &p[0], &v[0], ldv, t, d, a)
		return
	}
	wsumGo(out, p, v, ldv, t, d, acc)
}

//go:noescape
func expSumAVX2(s *float32, n int, m float32, sums *[4]float64)

//go:noescape
func expSumAVX512(s *float32, n int, m float32, sums *[4]float64)

//go:noescape
func scaleMaxAVX2(s *float32, n int, scale float32) float32

//go:noescape
func scaleAVX2(s *float32, n int, f float32)

//go:noescape
func siluAVX2(y, x, u *float32, n int)

// vecPrefix returns how many leading elements of a length-n slice the
// vector helpers below process (the rest is left to the caller's Go loop).
func vecPrefix(n int) int {
	if !useAsm {
		return 0
	}
	return n &^ 7
}

// scaleMaxVec: s[i] *= scale for i < n (n from vecPrefix, > 0); returns max.
func scaleMaxVec(s []float32, n int, scale float32) float32 {
	_ = s[n-1]
	return scaleMaxAVX2(&s[0], n, scale)
}

// expSumVec: s[i] = expf(s[i]-m), sums[i%4] += s[i] (float64), i < n
// (16 lanes a step with AVX-512, the same bits).
func expSumVec(s []float32, n int, m float32, sums *[4]float64) {
	_ = s[n-1]
	if useAVX512 {
		expSumAVX512(&s[0], n, m, sums)
		return
	}
	expSumAVX2(&s[0], n, m, sums)
}

// scaleVec: s[i] *= f for i < n.
func scaleVec(s []float32, n int, f float32) {
	_ = s[n-1]
	scaleAVX2(&s[0], n, f)
}

// siluVec: y[i] = silu(x[i]) (* u[i] if u != nil) for i < n.
func siluVec(y, x, u []float32, n int) {
	_, _ = y[n-1], x[n-1]
	var up *float32
	if u != nil {
		_ = u[n-1]
		up = &u[0]
	}
	siluAVX2(&y[0], &x[0], up, n)
}

//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func gemv1x8BF16AVX2(x *float32, w *uint16, ldw, k, ntiles int, y *float32)

//go:noescape
func gemv1x8BF16AVX2L2(x *float32, w *uint16, ldw, k, ntiles int, y *float32)

// gemv1x8BF16 is gemv1x8 on bf16 weights (assembly only; k%8 == 0).
func gemv1x8BF16(x []float32, w []uint16, ldw, k, ntiles int, y []float32) {
	_ = x[k-1]
	_ = w[(8*ntiles-1)*ldw+k-1]
	_ = y[8*ntiles-1]
	if !useAsm || k%8 != 0 {
		panic("kernels: gemv1x8BF16 needs AVX2 and k%8 == 0")
	}
	if prefetchL2 {
		gemv1x8BF16AVX2L2(&x[0], &w[0], ldw, k, ntiles, &y[0])
	} else {
		gemv1x8BF16AVX2(&x[0], &w[0], ldw, k, ntiles, &y[0])
	}
}

//go:noescape
func gemm6x8BF16AVX512(x *float32, ldx int, w *uint16, ldw, k, ntiles int, y *float32, ldy int)

// gemm6x8BF16 is gemm6x8 on bf16 weights widened in registers (AVX-512
// only; k%8 == 0, k >= 8, ntiles >= 1).
func gemm6x8BF16(x []float32, ldx int, w []uint16, ldw, k, ntiles int, y []float32, ldy int) {
	_ = x[5*ldx+k-1]
	_ = w[(8*ntiles-1)*ldw+k-1]
	_ = y[5*ldy+8*ntiles-1]
	if !useAVX512 || k%8 != 0 {
		panic("kernels: gemm6x8BF16 needs AVX-512 and k%8 == 0")
	}
	gemm6x8BF16AVX512(&x[0], ldx, &w[0], ldw, k, ntiles, &y[0], ldy)
}

//go:noescape
func widenF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func gemv1x8F16AVX2(x *float32, w *uint16, ldw, k, ntiles int, y *float32)

//go:noescape
func wsumF16AVX2(out, p *float32, v *uint16, ldv, t, d, acc int)

//go:noescape
func wsumBF16AVX2(out, p *float32, v *uint16, ldv, t, d, acc int)

// kv16Asm reports whether the in-register 16-bit attention kernels below
// take head width hd (else Attention widens chunks into scratch).
func kv16Asm(f KVFormat, hd int) bool {
	return useAsm && hd%8 == 0 && (f == KVBF16 || useF16C)
}

// gemv1x8H16 is gemv1x8 on 16-bit rows of format f (kv16Asm(f, k)).
func gemv1x8H16(f KVFormat, x []float32, w []uint16, ldw, k, ntiles int, y []float32) {
	_ = x[k-1]
	_ = w[(8*ntiles-1)*ldw+k-1]
	_ = y[8*ntiles-1]
	if !kv16Asm(f, k) {
		panic("kernels: gemv1x8H16 without its assembly")
	}
	if f == KVF16 {
		gemv1x8F16AVX2(&x[0], &w[0], ldw, k, ntiles, &y[0])
	} else {
		gemv1x8BF16(x, w, ldw, k, ntiles, y)
	}
}

// wsumH16 is wsum on 16-bit rows of format f (kv16Asm(f, d)).
func wsumH16(f KVFormat, out, p []float32, v []uint16, ldv, t, d int, acc bool) {
	_, _ = out[d-1], p[t-1]
	_ = v[(t-1)*ldv+d-1]
	if !kv16Asm(f, d) {
		panic("kernels: wsumH16 without its assembly")
	}
	a := 0
	if acc {
		a = 1
	}
	if f == KVF16 {
		wsumF16AVX2(&out[0], &p[0], &v[0], ldv, t, d, a)
	} else {
		wsumBF16AVX2(&out[0], &p[0], &v[0], ldv, t, d, a)
	}
}

// useBF16Dot selects the AVX512_BF16 kernels of MatMulTBF16Dot (the
// portable code computes the same bits where they are absent).
var useBF16Dot = useAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512BF16

//go:noescape
func bf16Dot1x8AVX512(x *uint16, w *uint16, ldw, k, ntiles int, y *float32)

//go:noescape
func bf16Dot4x6AVX512(x *uint16, ldx int, w *uint16, ldw, k, ntiles int, y *float32, ldy int)

// bf16Dot1x8 checks the bounds bf16Dot1x8AVX512 relies on and calls it.
func bf16Dot1x8(x []uint16, w []uint16, ldw, k, ntiles int, y []float32) {
	_ = x[k-1]
	_ = w[(8*ntiles-1)*ldw+k-1]
	_ = y[8*ntiles-1]
	bf16Dot1x8AVX512(&x[0], &w[0], ldw, k, ntiles, &y[0])
}

// bf16Dot4x6 checks the bounds bf16Dot4x6AVX512 relies on and calls it.
func bf16Dot4x6(x []uint16, ldx int, w []uint16, ldw, k, ntiles int, y []float32, ldy int) {
	_ = x[3*ldx+k-1]
	_ = w[(6*ntiles-1)*ldw+k-1]
	_ = y[3*ldy+6*ntiles-1]
	bf16Dot4x6AVX512(&x[0], ldx, &w[0], ldw, k, ntiles, &y[0], ldy)
}

//go:noescape
func wsum2F32AVX512(out0, out1, p0, p1 *float32, v *float32, ldv, t, d, acc int)

//go:noescape
func wsum2F16AVX512(out0, out1, p0, p1 *float32, v *uint16, ldv, t, d, acc int)

//go:noescape
func wsum2BF16AVX512(out0, out1, p0, p1 *float32, v *uint16, ldv, t, d, acc int)

//go:noescape
func wsum2F32AVX512L2(out0, out1, p0, p1 *float32, v *float32, ldv, t, d, acc int)

//go:noescape
func wsum2F16AVX512L2(out0, out1, p0, p1 *float32, v *uint16, ldv, t, d, acc int)

//go:noescape
func wsum2BF16AVX512L2(out0, out1, p0, p1 *float32, v *uint16, ldv, t, d, acc int)

// wsum2Asm reports whether wsum2 takes head width d (the AVX-512 kernels,
// multiples of 128).
func wsum2Asm(f KVFormat, d int) bool {
	return useAVX512 && d%128 == 0 && (f != KVF16 || useF16C)
}

// wsum2 is wsum (or wsumH16) of two query heads sharing one V chunk (v
// for an f32 cache, h for a 16-bit one): out0 from p0 and out1 from p1,
// each bit-identical to its own wsum call, the V rows read once
// (wsum2Asm(f, d)).
func wsum2(f KVFormat, out0, out1, p0, p1 []float32, v []float32, h []uint16, ldv, t, d int, acc bool) {
	_, _, _, _ = out0[d-1], out1[d-1], p0[t-1], p1[t-1]
	if !wsum2Asm(f, d) {
		panic("kernels: wsum2 without its assembly")
	}
	a := 0
	if acc {
		a = 1
	}
	if f == KVF32 {
		_ = v[(t-1)*ldv+d-1]
		if prefetchL2 {
			wsum2F32AVX512L2(&out0[0], &out1[0], &p0[0], &p1[0], &v[0], ldv, t, d, a)
		} else {
			wsum2F32AVX512(&out0[0], &out1[0], &p0[0], &p1[0], &v[0], ldv, t, d, a)
		}
		return
	}
	_ = h[(t-1)*ldv+d-1]
	switch {
	case f == KVF16 && prefetchL2:
		wsum2F16AVX512L2(&out0[0], &out1[0], &p0[0], &p1[0], &h[0], ldv, t, d, a)
	case f == KVF16:
		wsum2F16AVX512(&out0[0], &out1[0], &p0[0], &p1[0], &h[0], ldv, t, d, a)
	case prefetchL2:
		wsum2BF16AVX512L2(&out0[0], &out1[0], &p0[0], &p1[0], &h[0], ldv, t, d, a)
	default:
		wsum2BF16AVX512(&out0[0], &out1[0], &p0[0], &p1[0], &h[0], ldv, t, d, a)
	}
}

//go:noescape
func wsum6F32AVX512(out *float32, ldo, oh int, p *float32, ldp, ph int, v *float32, ldv, t, d, acc int)

//go:noescape
func wsum6F16AVX512(out *float32, ldo, oh int, p *float32, ldp, ph int, v *uint16, ldv, t, d, acc int)

//go:noescape
func wsum6BF16AVX512(out *float32, ldo, oh int, p *float32, ldp, ph int, v *uint16, ldv, t, d, acc int)

// wsum6Asm reports whether wsum6 has its assembly for format f and d
// columns (wsum2's, which also takes its tails).
func wsum6Asm(f KVFormat, d int) bool { return wsum2Asm(f, d) }

// wsum6 is wsum2 of six (row, head) pairs sharing one V chunk: rows r < 3
// ldo floats apart in out and ldp apart in p, heads h < 2 oh and ph apart,
// each pair's bits those of its own wsum call, the V rows read (and
// widened) once for the six (wsum6Asm(f, d)).
func wsum6(f KVFormat, out []float32, ldo, oh int, p []float32, ldp, ph int, v []float32, h []uint16, ldv, t, d int, acc bool) {
	_, _ = out[2*ldo+oh+d-1], p[2*ldp+ph+t-1]
	if !wsum6Asm(f, d) {
		panic("kernels: wsum6 without its assembly")
	}
	a := 0
	if acc {
		a = 1
	}
	switch f {
	case KVF32:
		_ = v[(t-1)*ldv+d-1]
		wsum6F32AVX512(&out[0], ldo, oh, &p[0], ldp, ph, &v[0], ldv, t, d, a)
	case KVF16:
		_ = h[(t-1)*ldv+d-1]
		wsum6F16AVX512(&out[0], ldo, oh, &p[0], ldp, ph, &h[0], ldv, t, d, a)
	default:
		_ = h[(t-1)*ldv+d-1]
		wsum6BF16AVX512(&out[0], ldo, oh, &p[0], ldp, ph, &h[0], ldv, t, d, a)
	}
}

//go:noescape
func gemv2x8F16AVX512(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)

//go:noescape
func gemv2x8BF16AVX512(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)

//go:noescape
func gemv2x8F16AVX512L2(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)

//go:noescape
func gemv2x8BF16AVX512L2(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)

//go:noescape
func gemv2x8F16AVX2(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)

//go:noescape
func gemv2x8BF16AVX2(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)

//go:noescape
func gemv2x8F32AVX2(x0, x1 *float32, w *float32, ldw, k, ntiles int, y0, y1 *float32)

// gemv2Asm reports whether the two-head scores take keys of format f and
// width k: gemv2x8H16 (AVX-512 where present, else AVX2) for a 16-bit
// cache, gemv2x8F32 (AVX2) for an f32 one.
func gemv2Asm(f KVFormat, k int) bool {
	return useAsm && k%8 == 0 && (f == KVF32 || f == KVBF16 || (f == KVF16 && useF16C))
}

// gemv2x8F32 is gemv1x8 for two query heads x0 and x1 sharing the f32 keys
// w (into y0 and y1), each head's bits those of its own gemv1x8 call, the
// keys read once and prefetched ahead (gemv2Asm(KVF32, k)).
func gemv2x8F32(x0, x1, w []float32, ldw, k, ntiles int, y0, y1 []float32) {
	_, _ = x0[k-1], x1[k-1]
	_ = w[(8*ntiles-1)*ldw+k-1]
	_, _ = y0[8*ntiles-1], y1[8*ntiles-1]
	if !gemv2Asm(KVF32, k) {
		panic("kernels: gemv2x8F32 without its assembly")
	}
	gemv2x8F32AVX2(&x0[0], &x1[0], &w[0], ldw, k, ntiles, &y0[0], &y1[0])
}

// gemv2x8H16 is gemv1x8H16 for two query heads x0 and x1 sharing the keys
// w (into y0 and y1), each head's bits those of its own gemv1x8H16 call,
// the keys read and widened once (gemv2Asm(f, k)).
func gemv2x8H16(f KVFormat, x0, x1 []float32, w []uint16, ldw, k, ntiles int, y0, y1 []float32) {
	_, _ = x0[k-1], x1[k-1]
	_ = w[(8*ntiles-1)*ldw+k-1]
	_, _ = y0[8*ntiles-1], y1[8*ntiles-1]
	if !gemv2Asm(f, k) {
		panic("kernels: gemv2x8H16 without its assembly")
	}
	switch {
	case f == KVF16 && useAVX512 && prefetchL2:
		gemv2x8F16AVX512L2(&x0[0], &x1[0], &w[0], ldw, k, ntiles, &y0[0], &y1[0])
	case f == KVF16 && useAVX512:
		gemv2x8F16AVX512(&x0[0], &x1[0], &w[0], ldw, k, ntiles, &y0[0], &y1[0])
	case f == KVF16:
		gemv2x8F16AVX2(&x0[0], &x1[0], &w[0], ldw, k, ntiles, &y0[0], &y1[0])
	case useAVX512 && prefetchL2:
		gemv2x8BF16AVX512L2(&x0[0], &x1[0], &w[0], ldw, k, ntiles, &y0[0], &y1[0])
	case useAVX512:
		gemv2x8BF16AVX512(&x0[0], &x1[0], &w[0], ldw, k, ntiles, &y0[0], &y1[0])
	default:
		gemv2x8BF16AVX2(&x0[0], &x1[0], &w[0], ldw, k, ntiles, &y0[0], &y1[0])
	}
}

//go:noescape
func f32ToF16F16C(dst *uint16, src *float32, n int)

//go:noescape
func f32ToBF16AVX2(dst *uint16, src *float32, n int)
