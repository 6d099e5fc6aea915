//go:build !purego

#include "textflag.h"
#include "hsum8_amd64.h"

// Decode attention's scores for two query heads sharing a KV head, with
// AVX2: each key row is loaded (and widened) once for both heads. Per head
// every dot product takes exactly the operations, in the order, of the
// one-head kernels (gemv1x8AVX2, gemv1x8F16AVX2, gemv1x8BF16AVX2), so the
// bits are theirs. The 16-bit ones have AVX-512 twins (gemv2_amd64.s); the
// f32 one runs on both kinds. (The V sums have no AVX2 pair kernel: two
// heads' accumulators leave room for 32 columns a pass, and four strided
// passes over a chunk's rows streamed slower than the one-head kernel's
// two.)

// P2F16(P, R): R = the 8 f16 keys at (P)(DX*1), widened.
#define P2F16(P, R) VCVTPH2PS (P)(DX*1), R

// P2BF16(P, R): R = the 8 bf16 keys at (P)(DX*1), widened.
#define P2BF16(P, R) \
	VPMOVZXWD (P)(DX*1), R; \
	VPSLLD    $16, R, R

// G2BODY(TILE, LOOP, DONE, LOAD, ESH, XS, STEP, PF, PFBASE): gemv2x8 on keys of
// 1<<ESH bytes (LOAD widens 8 of them at (P)(DX*1), DX the key byte
// offset; head h's 8 values at (x_h)(DX*XS); STEP key bytes a pass). A
// tile of 8 rows goes as two halves of 4: Y0..Y3 hold head 0's lane
// accumulators of the half's rows, Y4..Y7 head 1's (each starts at zero
// and takes one FMA per 8 keys, in k order, as the one-head kernels' do),
// then one HSUM8 tree gives both heads' 4 dot products. PF prefetches, a
// step per pass, the half whose start R11 holds (set by PFBASE).
#define G2BODY(TILE, LOOP, DONE, LOAD, ESH, XS, STEP, PF, PFBASE) \
	MOVQ x0+0(FP), SI;           \
	MOVQ x1+8(FP), R14;          \
	MOVQ w+16(FP), AX;           \
	MOVQ ldw+24(FP), R13;        \
	SHLQ $ESH, R13;              \
	LEAQ (AX)(R13*1), BX;        \
	LEAQ (BX)(R13*1), CX;        \
	LEAQ (CX)(R13*1), DI;        \
	SHLQ $2, R13;                \
	MOVQ k+32(FP), R12;          \
	SHLQ $ESH, R12;              \
	MOVQ y0+48(FP), R8;          \
	MOVQ y1+56(FP), R9;          \
	MOVQ ntiles+40(FP), R10;     \
	SHLQ $1, R10;                \
	TESTQ R10, R10;              \
	JLE  DONE;                   \
TILE:;                           \
	VXORPS Y0, Y0, Y0;           \
	VXORPS Y1, Y1, Y1;           \
	VXORPS Y2, Y2, Y2;           \
	VXORPS Y3, Y3, Y3;           \
	VXORPS Y4, Y4, Y4;           \
	VXORPS Y5, Y5, Y5;           \
	VXORPS Y6, Y6, Y6;           \
	VXORPS Y7, Y7, Y7;           \
	XORQ   DX, DX;               \
	PFBASE;                      \
LOOP:;                           \
	PF;                          \
	VMOVUPS     (SI)(DX*XS), Y8;  \
	VMOVUPS     (R14)(DX*XS), Y9; \
	LOAD(AX, Y10);               \
	LOAD(BX, Y11);               \
	VFMADD231PS Y10, Y8, Y0;     \
	VFMADD231PS Y10, Y9, Y4;     \
	VFMADD231PS Y11, Y8, Y1;     \
	VFMADD231PS Y11, Y9, Y5;     \
	LOAD(CX, Y12);               \
	LOAD(DI, Y10);               \
	VFMADD231PS Y12, Y8, Y2;     \
	VFMADD231PS Y12, Y9, Y6;     \
	VFMADD231PS Y10, Y8, Y3;     \
	VFMADD231PS Y10, Y9, Y7;     \
	ADDQ        $STEP, DX;       \
	CMPQ        DX, R12;         \
	JB          LOOP;            \
	HSUM8R;                      \
	VMOVUPS      X4, (R8);       \
	VEXTRACTF128 $1, Y4, (R9);   \
	ADDQ $16, R8;                \
	ADDQ $16, R9;                \
	ADDQ R13, AX;                \
	ADDQ R13, BX;                \
	ADDQ R13, CX;                \
	ADDQ R13, DI;                \
	DECQ R10;                    \
	JNZ  TILE;                   \
DONE:;                           \
	VZEROUPPER;                  \
	RET

// The 16-bit kernels prefetch the next half (4 rows' keys, one line a
// pass); the f32 one prefetches the half PFDIST halves ahead, two lines a
// pass (its keys cross a 4 KiB page every 2 halves of a 128-wide head,
// where the hardware prefetcher stops).
#define PF16BASE LEAQ (AX)(R13*1), R11
#define PF16 PREFETCHNTA (R11)(DX*4)
#define PF32BASE LEAQ (AX)(R13*PFDIST), R11
#define PF32 PREFETCHT0 (R11)(DX*4); PREFETCHT0 64(R11)(DX*4)
#define PFDIST 4

// P2F32(P, R): R = the 8 f32 keys at (P)(DX*1).
#define P2F32(P, R) VMOVUPS (P)(DX*1), R

// func gemv2x8F16AVX2(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)
//
// For t < ntiles, r < 8: y_h[8t+r] = dot(x_h[0:k], w[(8t+r)*ldw:][0:k]) for
// h = 0, 1, f16 keys, k a multiple of 8: each head's bits those of
// gemv1x8F16AVX2 on x_h.
TEXT ·gemv2x8F16AVX2(SB), NOSPLIT, $0-64
	G2BODY(p2htile, p2hloop, p2hret, P2F16, 1, 2, 16, PF16, PF16BASE)

// func gemv2x8BF16AVX2(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)
//
// gemv2x8F16AVX2 on bf16 keys (gemv1x8BF16AVX2's bits per head).
TEXT ·gemv2x8BF16AVX2(SB), NOSPLIT, $0-64
	G2BODY(p2btile, p2bloop, p2bret, P2BF16, 1, 2, 16, PF16, PF16BASE)

// func gemv2x8F32AVX2(x0, x1 *float32, w *float32, ldw, k, ntiles int, y0, y1 *float32)
//
// gemv2x8F16AVX2 on f32 keys: each head's bits those of gemv1x8AVX2 on x_h
// (k a multiple of 8).
TEXT ·gemv2x8F32AVX2(SB), NOSPLIT, $0-64
	G2BODY(p2ftile, p2floop, p2fret, P2F32, 2, 1, 32, PF32, PF32BASE)
