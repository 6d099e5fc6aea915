//go:build amd64 && !purego

package quant

import (
	"golang.org/x/sys/cpu"

	"gelo/device/wire"
	"gelo/lower/cpu/cpuid"
)

// useAsm selects the AVX2 assembly kernels (VCVTPH2PS needs F16C). It is
// decided once at init from CPU feature detection (tests flip it to compare
// with the portable kernels).
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasF16C

// useAVX512 selects the AVX-512 VNNI GEMM kernels (q8mm16AVX512 and
// q4mm16AVX512, 16 weight rows by any number of activation rows per call)
// for m >= 2; it
// needs useAsm too (the other kernels stay AVX2). Decided once at init
// (tests flip it).
var useAVX512 = useAsm && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW &&
	cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI

// useAMX selects the AMX GEMM kernels (q8mm16ILAMX, q4mm16ILAMX: 16
// activation rows by a 16-row Interleaved16 group, one tile multiply a
// block) for whole 16-row chunks of m >= 16 where the process may run AMX
// (cpuid.AMX); it needs useAVX512 too (the float part is AVX-512, and the
// other shapes keep the VNNI kernels). Same bits as those (the block sums
// are exact integers either way). Decided once at init (tests flip it).
var useAMX = useAVX512 && cpuid.AMX

// prefetchL2 selects the one-row q4_0 and q4_k kernels that prefetch into
// L2 (q4mv16ILAVX512L2, q4kmv16ILAVX512L2) over those tuned on AMD (see
// cpuid.L2Prefetch; tests run both). Same bits either way.
var prefetchL2 = cpuid.L2Prefetch

// haveAsm reports whether assembly kernels exist for this build at all.
const haveAsm = true

//go:noescape
func q8mv8AVX2(x *int8, dx *float32, w *byte, ldw, nb int, y *float32)

//go:noescape
func q4mv8AVX2(x *int8, dx *float32, sx *int32, w *byte, ldw, nb int, y *float32)

//go:noescape
func q8mm24AVX2(x *int8, dx *float32, w *byte, ldw, nb int, y *float32, ldy int)

//go:noescape
func q4mm24AVX2(x *int8, dx *float32, sx *int32, w *byte, ldw, nb int, y *float32, ldy int)

//go:noescape
func q8mm16AVX512(x *int8, dx *float32, sx *int32, w *byte, ldw, nb, rows int, y *float32, ldy int)

//go:noescape
func q4mm16AVX512(x *int8, dx *float32, sx *int32, w *byte, ldw, nb, rows int, y *float32, ldy int)

//go:noescape
func q4kmv8AVX2(x *int8, dx *float32, sx *int32, w *byte, ldw, ns, step, pf int, y *float32)

//go:noescape
func q4kmm8ILAVX2(x *int8, dx *float32, sx *int32, w *byte, ns, rows int, y *float32, ldy int)

//go:noescape
func q4kmm28AVX2(x *int8, dx *float32, sx *int32, w *byte, ldw, ns, step, pf int, y *float32, ldy int)

// mm28 sets y[r*ldy+c] = dot(x[r*k:], w[c*ldw:]) for r < 2, c < 8 with
// block_q4_K weights (k = 32*nb; activation row r uses dx[r*nb:] and
// sx[r*nb:]).
func mm28(x []int8, dx []float32, sx []int32, w []byte, ldw, nb int, y []float32, ldy int) {
	_, _, _ = x[2*nb*wire.QK-1], dx[2*nb-1], sx[2*nb-1]
	_ = w[7*ldw+nb/8*wire.BlockBytesQ4_K-1]
	_ = y[ldy+7]
	if !useAsm {
		mm28Go(x, dx, sx, w, ldw, nb, y, ldy)
		return
	}
	q4kmm28AVX2(&x[0], &dx[0], &sx[0], &w[0], ldw, nb/8, wire.BlockBytesQ4_K, 8*ldw, &y[0], ldy)
}

// The wrappers check every bound the assembly relies on (a panic on an
// internal indexing bug, never a stray memory access) and dispatch.

// mv8 sets y[r] = dot(x, w[r*ldw:]) for r < 8 (nb >= 1 blocks).
func mv8(f wire.Format, x []int8, dx []float32, sx []int32, w []byte, ldw, nb int, y []float32) {
	_, _, _ = x[nb*wire.QK-1], dx[nb-1], sx[nb-1]
	_ = w[7*ldw+nb*wire.QK/f.BlockValues()*f.BlockBytes()-1]
	_ = y[7]
	if !useAsm {
		mv8Go(f, x, dx, sx, w, ldw, nb, y)
		return
	}
	switch f {
	case wire.Q8_0:
		q8mv8AVX2(&x[0], &dx[0], &w[0], ldw, nb, &y[0])
	case wire.Q4_K:
		q4kmv8AVX2(&x[0], &dx[0], &sx[0], &w[0], ldw, nb/8, wire.BlockBytesQ4_K, 8*ldw, &y[0])
	default:
		q4mv8AVX2(&x[0], &dx[0], &sx[0], &w[0], ldw, nb, &y[0])
	}
}

// mm24 sets y[r*ldy+c] = dot(x[r*k:], w[c*ldw:]) for r < 2, c < 4, with
// k = 32*nb (activation rows r use dx[r*nb:] and sx[r*nb:]).
func mm24(f wire.Format, x []int8, dx []float32, sx []int32, w []byte, ldw, nb int, y []float32, ldy int) {
	bb := f.BlockBytes()
	_, _, _ = x[2*nb*wire.QK-1], dx[2*nb-1], sx[2*nb-1]
	_ = w[3*ldw+nb*bb-1]
	_ = y[ldy+3]
	if !useAsm {
		mm24Go(f, x, dx, sx, w, ldw, nb, y, ldy)
		return
	}
	if f == wire.Q8_0 {
		q8mm24AVX2(&x[0], &dx[0], &w[0], ldw, nb, &y[0], ldy)
	} else {
		q4mm24AVX2(&x[0], &dx[0], &sx[0], &w[0], ldw, nb, &y[0], ldy)
	}
}

// mm16 sets y[r*ldy+c] = dot(x[r*k:], w[c*ldw:]) for r < rows, c < 16,
// with k = 32*nb, for block_q8_0 or block_q4_0 weights (rows >= 1).
func mm16(f wire.Format, x []int8, dx []float32, sx []int32, w []byte, ldw, nb, rows int, y []float32, ldy int) {
	bb := f.BlockBytes()
	_, _, _ = x[rows*nb*wire.QK-1], dx[rows*nb-1], sx[rows*nb-1]
	_ = w[15*ldw+nb*bb-1]
	_ = y[(rows-1)*ldy+15]
	if !useAVX512 || !useAsm {
		mm16Go(f, x, dx, sx, w, ldw, nb, rows, y, ldy)
		return
	}
	if f == wire.Q8_0 {
		q8mm16AVX512(&x[0], &dx[0], &sx[0], &w[0], ldw, nb, rows, &y[0], ldy)
	} else {
		q4mm16AVX512(&x[0], &dx[0], &sx[0], &w[0], ldw, nb, rows, &y[0], ldy)
	}
}

//go:noescape
func q8mv8ILAVX2(x *int8, dx *float32, w *byte, nb int, y *float32)

//go:noescape
func q4mv8ILAVX2(x *int8, dx *float32, sx *int32, w *byte, nb int, y *float32)

//go:noescape
func q8mm48ILAVX2(x *int8, dx *float32, w *byte, nb int, y *float32, ldy int)

//go:noescape
func q4mm48ILAVX2(x *int8, dx *float32, sx *int32, w *byte, nb int, y *float32, ldy int)

//go:noescape
func q8mv16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, nb int, y *float32)

//go:noescape
func q4mv16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, nb int, y *float32)

//go:noescape
func q4mv16ILAVX512L2(x *int8, dx *float32, sx *int32, w *byte, nb int, y *float32)

//go:noescape
func q8mm16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, nb, rows int, y *float32, ldy int)

//go:noescape
func q4mm16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, nb, rows int, y *float32, ldy int)

//go:noescape
func q4kmm16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, ns, rows int, y *float32, ldy int)

//go:noescape
func q4kmv16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, ns int, y *float32)

//go:noescape
func q4kmv16ILAVX512L2(x *int8, dx *float32, sx *int32, w *byte, ns int, y *float32)

//go:noescape
func q8mm16ILAMX(x *int8, dx *float32, w *byte, nb, groups int, y *float32, ldy int, scr *int32, cfg *byte)

//go:noescape
func q4kmm16ILAMX(x *int8, tab *float32, w *byte, ns, groups int, y *float32, ldy int, scr *int32, cfg *byte)

//go:noescape
func q4mm16ILAMX(x *int8, dx *float32, w *byte, nb, groups int, y *float32, ldy int, scr *int32, cfg *byte)

//go:noescape
func quantizeActAVX2(q *int8, d *float32, s *int32, x *float32, nblocks int) int

// quantizeActAsm quantizes whole blocks of x into q, d and s from the
// start, as wire.QuantizeActBlock does, and returns how many it did: all
// of them unless it stopped before a block the Go code must take (a NaN
// or an infinity in it, or a scale whose inverse overflows), or 0 without
// AVX2.
func quantizeActAsm(q []int8, d []float32, s []int32, x []float32) int {
	n := len(d)
	if !useAsm || n == 0 {
		return 0
	}
	_, _, _ = q[n*wire.QK-1], s[n-1], x[n*wire.QK-1]
	return quantizeActAVX2(&q[0], &d[0], &s[0], &x[0], n)
}
