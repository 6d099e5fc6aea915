//go:build !purego

#include "textflag.h"
#include "zero_amd64.h"

// AVX-512 GEMM micro-kernel with the SAME arithmetic as gemm4x3AVX2: a zmm
// accumulator holds the 8 canonical lanes of two dot products (lanes 0-7:
// dot(x_r, w_j), lanes 8-15: dot(x_r, w_j+1)), so every dot is evaluated
// exactly as in the 8-lane kernels, twice as many at a time.

// Index that puts the 16 sums of HSUM16 in order (see there).
DATA hsum16Perm<>+0(SB)/4, $0
DATA hsum16Perm<>+4(SB)/4, $4
DATA hsum16Perm<>+8(SB)/4, $8
DATA hsum16Perm<>+12(SB)/4, $12
DATA hsum16Perm<>+16(SB)/4, $1
DATA hsum16Perm<>+20(SB)/4, $5
DATA hsum16Perm<>+24(SB)/4, $9
DATA hsum16Perm<>+28(SB)/4, $13
DATA hsum16Perm<>+32(SB)/4, $2
DATA hsum16Perm<>+36(SB)/4, $6
DATA hsum16Perm<>+40(SB)/4, $10
DATA hsum16Perm<>+44(SB)/4, $14
DATA hsum16Perm<>+48(SB)/4, $3
DATA hsum16Perm<>+52(SB)/4, $7
DATA hsum16Perm<>+56(SB)/4, $11
DATA hsum16Perm<>+60(SB)/4, $15
GLOBL hsum16Perm<>(SB), RODATA|NOPTR, $64

// HSUM16 reduces the pair accumulators A,B,C,D (row r, columns 0-7) and
// E,F,G,H (row r+1) with the canonical per-dot order
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), leaving the 8 sums of row r in the
// low half of Z31 and those of row r+1 in its high half. Clobbers Z24-Z31.
#define HSUM16(A, B, C, D, E, F, G, H) \
	VSHUFF32X4 $0x88, B, A, Z24; \
	VSHUFF32X4 $0xDD, B, A, Z25; \
	VADDPS     Z25, Z24, Z24;    \
	VSHUFF32X4 $0x88, D, C, Z26; \
	VSHUFF32X4 $0xDD, D, C, Z25; \
	VADDPS     Z25, Z26, Z26;    \
	VSHUFF32X4 $0x88, F, E, Z27; \
	VSHUFF32X4 $0xDD, F, E, Z25; \
	VADDPS     Z25, Z27, Z27;    \
	VSHUFF32X4 $0x88, H, G, Z28; \
	VSHUFF32X4 $0xDD, H, G, Z25; \
	VADDPS     Z25, Z28, Z28;    \
	VSHUFPS    $0x44, Z26, Z24, Z29; \
	VSHUFPS    $0xEE, Z26, Z24, Z25; \
	VADDPS     Z25, Z29, Z29;    \
	VSHUFPS    $0x44, Z28, Z27, Z30; \
	VSHUFPS    $0xEE, Z28, Z27, Z25; \
	VADDPS     Z25, Z30, Z30;    \
	VSHUFPS    $0x88, Z30, Z29, Z31; \
	VSHUFPS    $0xDD, Z30, Z29, Z25; \
	VADDPS     Z25, Z31, Z31;    \
	VMOVDQU32  hsum16Perm<>(SB), Z24; \
	VPERMPS    Z31, Z24, Z31

// The 6x8 kernels' shared pieces. Z0-Z23 are the accumulators: row r's
// four of them (Z4r..Z4r+3) hold the pairs [row 2p | row 2p+1] of the
// tile's weight rows, p = 0..3, that Z24-Z27 bring in for each chunk.

// ROWSTRIDES sets CX, DI, R8 and R9 to 3, 5, 6 and 7 times BX, the byte
// stride of the tile's weight rows: with BX, 2*BX and 4*BX as scaled
// indexes they reach all eight rows.
#define ROWSTRIDES \
	LEAQ (BX)(BX*2), CX; \
	LEAQ (BX)(BX*4), DI; \
	LEAQ (CX)(CX*1), R8; \
	LEAQ (R8)(BX*1), R9


// FMA4 adds the weight registers Z24-Z27 times the broadcast activation
// chunk X into one row's accumulators A-D.
#define FMA4(X, A, B, C, D) \
	VFMADD231PS Z24, X, A; \
	VFMADD231PS Z25, X, B; \
	VFMADD231PS Z26, X, C; \
	VFMADD231PS Z27, X, D

// STORE6x8 reduces the accumulators (HSUM16) and stores the 6 rows' 8
// sums at DX, rows R11 bytes apart (R10 and Z24-Z31 clobbered).
#define STORE6x8 \
	LEAQ          (DX)(R11*2), R10; \
	HSUM16(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7); \
	VMOVUPS       Y31, (DX); \
	VEXTRACTF32X8 $1, Z31, (DX)(R11*1); \
	HSUM16(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15); \
	VMOVUPS       Y31, (R10); \
	VEXTRACTF32X8 $1, Z31, (R10)(R11*1); \
	HSUM16(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23); \
	VMOVUPS       Y31, (R10)(R11*2); \
	LEAQ          (R10)(R11*2), R10; \
	VEXTRACTF32X8 $1, Z31, (R10)(R11*1)

// func gemm6x8AVX512(x *float32, ldx int, w *float32, ldw, k, ntiles int, y *float32, ldy int)
//
// For t < ntiles, r < 6, c < 8:
// y[r*ldy + 8t+c] = dot(x[r*ldx:][0:k], w[(8t+c)*ldw:][0:k]), in the
// canonical order (as gemm4x3AVX2). k >= 1.
TEXT ·gemm6x8AVX512(SB), NOSPLIT, $0-64
	MOVQ  k+32(FP), CX
	ANDQ  $7, CX
	MOVQ  $1, R11
	SHLQ  CX, R11
	DECQ  R11
	KMOVW R11, K1              // tail lanes
	MOVQ  x+0(FP), SI
	MOVQ  ldx+8(FP), R12
	SHLQ $2, R12               // ldx bytes
	LEAQ (R12)(R12*2), R13     // 3*ldx
	LEAQ (R12)(R12*4), R14     // 5*ldx
	MOVQ w+16(FP), AX
	MOVQ ldw+24(FP), BX
	SHLQ $2, BX                // ldw bytes
	ROWSTRIDES                 // CX, DI, R8, R9: 3, 5, 6, 7*ldw
	MOVQ y+48(FP), DX
	CMPQ ntiles+40(FP), $0
	JLE  g68ret

g68tile:
	MOVQ k+32(FP), R10
	ANDQ $-8, R10
	SHLQ $2, R10               // main part in bytes
	MOVQ k+32(FP), R11
	ANDQ $7, R11
	JZ   g68zero
	ADDQ R10, SI
	ADDQ R10, AX
	VMOVUPS.Z     (AX), K1, Y24
	VMOVUPS.Z     (AX)(BX*1), K1, Y29
	VINSERTF32X8  $1, Y29, Z24, Z24
	VMOVUPS.Z     (AX)(BX*2), K1, Y25
	VMOVUPS.Z     (AX)(CX*1), K1, Y29
	VINSERTF32X8  $1, Y29, Z25, Z25
	VMOVUPS.Z     (AX)(BX*4), K1, Y26
	VMOVUPS.Z     (AX)(DI*1), K1, Y29
	VINSERTF32X8  $1, Y29, Z26, Z26
	VMOVUPS.Z     (AX)(R8*1), K1, Y27
	VMOVUPS.Z     (AX)(R9*1), K1, Y29
	VINSERTF32X8  $1, Y29, Z27, Z27
	VMOVUPS.Z     (SI), K1, Y28
	VSHUFF32X4    $0x44, Z28, Z28, Z28
	VMULPS        Z24, Z28, Z0
	VMULPS        Z25, Z28, Z1
	VMULPS        Z26, Z28, Z2
	VMULPS        Z27, Z28, Z3
	VMOVUPS.Z     (SI)(R12*1), K1, Y28
	VSHUFF32X4    $0x44, Z28, Z28, Z28
	VMULPS        Z24, Z28, Z4
	VMULPS        Z25, Z28, Z5
	VMULPS        Z26, Z28, Z6
	VMULPS        Z27, Z28, Z7
	VMOVUPS.Z     (SI)(R12*2), K1, Y28
	VSHUFF32X4    $0x44, Z28, Z28, Z28
	VMULPS        Z24, Z28, Z8
	VMULPS        Z25, Z28, Z9
	VMULPS        Z26, Z28, Z10
	VMULPS        Z27, Z28, Z11
	VMOVUPS.Z     (SI)(R13*1), K1, Y28
	VSHUFF32X4    $0x44, Z28, Z28, Z28
	VMULPS        Z24, Z28, Z12
	VMULPS        Z25, Z28, Z13
	VMULPS        Z26, Z28, Z14
	VMULPS        Z27, Z28, Z15
	VMOVUPS.Z     (SI)(R12*4), K1, Y28
	VSHUFF32X4    $0x44, Z28, Z28, Z28
	VMULPS        Z24, Z28, Z16
	VMULPS        Z25, Z28, Z17
	VMULPS        Z26, Z28, Z18
	VMULPS        Z27, Z28, Z19
	VMOVUPS.Z     (SI)(R14*1), K1, Y28
	VSHUFF32X4    $0x44, Z28, Z28, Z28
	VMULPS        Z24, Z28, Z20
	VMULPS        Z25, Z28, Z21
	VMULPS        Z26, Z28, Z22
	VMULPS        Z27, Z28, Z23
	SUBQ R10, SI
	SUBQ R10, AX
	JMP  g68main

g68zero:
	ZERO24

g68main:
	MOVQ R10, R11
	SHRQ $5, R11               // chunks
	JZ   g68done

g68loop:
	VMOVUPS         (AX), Y24
	VINSERTF32X8    $1, (AX)(BX*1), Z24, Z24
	VMOVUPS         (AX)(BX*2), Y25
	VINSERTF32X8    $1, (AX)(CX*1), Z25, Z25
	VMOVUPS         (AX)(BX*4), Y26
	VINSERTF32X8    $1, (AX)(DI*1), Z26, Z26
	VMOVUPS         (AX)(R8*1), Y27
	VINSERTF32X8    $1, (AX)(R9*1), Z27, Z27
	VBROADCASTF32X8 (SI), Z28
	FMA4(Z28, Z0, Z1, Z2, Z3)
	VBROADCASTF32X8 (SI)(R12*1), Z28
	FMA4(Z28, Z4, Z5, Z6, Z7)
	VBROADCASTF32X8 (SI)(R12*2), Z28
	FMA4(Z28, Z8, Z9, Z10, Z11)
	VBROADCASTF32X8 (SI)(R13*1), Z28
	FMA4(Z28, Z12, Z13, Z14, Z15)
	VBROADCASTF32X8 (SI)(R12*4), Z28
	FMA4(Z28, Z16, Z17, Z18, Z19)
	VBROADCASTF32X8 (SI)(R14*1), Z28
	FMA4(Z28, Z20, Z21, Z22, Z23)
	ADDQ            $32, SI
	ADDQ            $32, AX
	DECQ            R11
	JNZ             g68loop
	SUBQ            R10, SI
	SUBQ            R10, AX

g68done:
	MOVQ ldy+56(FP), R11
	SHLQ $2, R11               // ldy bytes
	STORE6x8

	ADDQ $32, DX
	LEAQ (AX)(BX*8), AX
	DECQ ntiles+40(FP)
	JNZ  g68tile

g68ret:
	VZEROUPPER
	RET

// func gemm6x8BF16AVX512(x *float32, ldx int, w *uint16, ldw, k, ntiles int, y *float32, ldy int)
//
// gemm6x8AVX512 with bf16 weights widened in registers, k a multiple of 8
// (no tail: the accumulators start at +0, exactly as gemm6x8AVX512 when
// k%8 == 0): for t < ntiles, r < 6, c < 8:
// y[r*ldy + 8t+c] = dot(x[r*ldx:][0:k], widen(w[(8t+c)*ldw:][0:k])), in the
// canonical order, with the same fused multiply-adds and HSUM16. Two weight
// rows of a chunk (2x16 bytes) are loaded into one ymm and zero-extended to
// dwords, then shifted into the upper halves: exact widening.
TEXT ·gemm6x8BF16AVX512(SB), NOSPLIT, $0-64
	MOVQ x+0(FP), SI
	MOVQ ldx+8(FP), R12
	SHLQ $2, R12               // ldx bytes
	LEAQ (R12)(R12*2), R13     // 3*ldx
	LEAQ (R12)(R12*4), R14     // 5*ldx
	MOVQ w+16(FP), AX
	MOVQ ldw+24(FP), BX
	SHLQ $1, BX                // ldw bytes
	ROWSTRIDES                 // CX, DI, R8, R9: 3, 5, 6, 7*ldw
	MOVQ y+48(FP), DX
	CMPQ ntiles+40(FP), $0
	JLE  g68bret

g68btile:
	ZERO24

	MOVQ k+32(FP), R11
	SHRQ $3, R11               // chunks
	JZ   g68bdone

g68bloop:
	VMOVDQU32       (AX), X24
	VINSERTI32X4    $1, (AX)(BX*1), Y24, Y24
	VPMOVZXWD       Y24, Z24
	VPSLLD          $16, Z24, Z24
	VMOVDQU32       (AX)(BX*2), X25
	VINSERTI32X4    $1, (AX)(CX*1), Y25, Y25
	VPMOVZXWD       Y25, Z25
	VPSLLD          $16, Z25, Z25
	VMOVDQU32       (AX)(BX*4), X26
	VINSERTI32X4    $1, (AX)(DI*1), Y26, Y26
	VPMOVZXWD       Y26, Z26
	VPSLLD          $16, Z26, Z26
	VMOVDQU32       (AX)(R8*1), X27
	VINSERTI32X4    $1, (AX)(R9*1), Y27, Y27
	VPMOVZXWD       Y27, Z27
	VPSLLD          $16, Z27, Z27
	VBROADCASTF32X8 (SI), Z28
	FMA4(Z28, Z0, Z1, Z2, Z3)
	VBROADCASTF32X8 (SI)(R12*1), Z28
	FMA4(Z28, Z4, Z5, Z6, Z7)
	VBROADCASTF32X8 (SI)(R12*2), Z28
	FMA4(Z28, Z8, Z9, Z10, Z11)
	VBROADCASTF32X8 (SI)(R13*1), Z28
	FMA4(Z28, Z12, Z13, Z14, Z15)
	VBROADCASTF32X8 (SI)(R12*4), Z28
	FMA4(Z28, Z16, Z17, Z18, Z19)
	VBROADCASTF32X8 (SI)(R14*1), Z28
	FMA4(Z28, Z20, Z21, Z22, Z23)
	ADDQ            $32, SI
	ADDQ            $16, AX
	DECQ            R11
	JNZ             g68bloop
	MOVQ            k+32(FP), R10
	SHLQ            $1, R10    // weight bytes per row
	SUBQ            R10, AX
	SHLQ            $1, R10    // x bytes per row
	SUBQ            R10, SI

g68bdone:
	MOVQ ldy+56(FP), R11
	SHLQ $2, R11               // ldy bytes
	STORE6x8

	ADDQ $32, DX
	LEAQ (AX)(BX*8), AX
	DECQ ntiles+40(FP)
	JNZ  g68btile

g68bret:
	VZEROUPPER
	RET

// func fmaLoopAVX512(iters int)
//
// 12 independent 16-wide FMA chains per iteration (384 flops).
TEXT ·fmaLoopAVX512(SB), NOSPLIT, $0-8
	MOVQ   iters+0(FP), CX
	ZERO12
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	TESTQ  CX, CX
	JLE    f512ret

f512loop:
	VFMADD231PS Z12, Z13, Z0
	VFMADD231PS Z12, Z13, Z1
	VFMADD231PS Z12, Z13, Z2
	VFMADD231PS Z12, Z13, Z3
	VFMADD231PS Z12, Z13, Z4
	VFMADD231PS Z12, Z13, Z5
	VFMADD231PS Z12, Z13, Z6
	VFMADD231PS Z12, Z13, Z7
	VFMADD231PS Z12, Z13, Z8
	VFMADD231PS Z12, Z13, Z9
	VFMADD231PS Z12, Z13, Z10
	VFMADD231PS Z12, Z13, Z11
	DECQ        CX
	JNZ         f512loop

f512ret:
	VZEROUPPER
	RET

// Packed weight tiles for the GEMM: a tile of 8 weight rows, chunk by
// chunk (8 values of k), as the four register pairs gemm6x8AVX512 builds
// from the rows ([row 2p chunk c | row 2p+1 chunk c], p = 0..3: 256 bytes
// a chunk, k/8 chunks a tile, tiles in order). A GEMM task packs its weight
// panel once (widening bf16 exactly) and every row group of the task then
// reads it as plain 64-byte loads, with no insert or widening in the FMA
// loop.

// func packF32x8AVX512(dst *float32, w *float32, ldw, k, ntiles int)
//
// Packs rows [0, 8*ntiles) of w (row j at w + j*ldw), k a multiple of 8.
TEXT ·packF32x8AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ w+8(FP), AX
	MOVQ ldw+16(FP), BX
	SHLQ $2, BX                // ldw bytes
	ROWSTRIDES                 // CX, DI, R8, R9: 3, 5, 6, 7*ldw
	MOVQ k+24(FP), R10
	SHLQ $2, R10               // row bytes
	MOVQ ntiles+32(FP), R12
	CMPQ R12, $0
	JLE  pk32ret

pk32tile:
	MOVQ k+24(FP), R11
	SHRQ $3, R11               // chunks

pk32loop:
	VMOVUPS      (AX), Y24
	VINSERTF32X8 $1, (AX)(BX*1), Z24, Z24
	VMOVUPS      (AX)(BX*2), Y25
	VINSERTF32X8 $1, (AX)(CX*1), Z25, Z25
	VMOVUPS      (AX)(BX*4), Y26
	VINSERTF32X8 $1, (AX)(DI*1), Z26, Z26
	VMOVUPS      (AX)(R8*1), Y27
	VINSERTF32X8 $1, (AX)(R9*1), Z27, Z27
	VMOVUPS      Z24, (DX)
	VMOVUPS      Z25, 64(DX)
	VMOVUPS      Z26, 128(DX)
	VMOVUPS      Z27, 192(DX)
	ADDQ         $32, AX
	ADDQ         $256, DX
	DECQ         R11
	JNZ          pk32loop
	SUBQ         R10, AX
	LEAQ         (AX)(BX*8), AX
	DECQ         R12
	JNZ          pk32tile

pk32ret:
	VZEROUPPER
	RET

// func packBF16x8AVX512(dst *float32, w *uint16, ldw, k, ntiles int)
//
// packF32x8AVX512 on bf16 rows, each value widened exactly (its bits the
// upper half of the float32), k a multiple of 8.
TEXT ·packBF16x8AVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ w+8(FP), AX
	MOVQ ldw+16(FP), BX
	SHLQ $1, BX                // ldw bytes
	ROWSTRIDES                 // CX, DI, R8, R9: 3, 5, 6, 7*ldw
	MOVQ k+24(FP), R10
	SHLQ $1, R10               // row bytes
	MOVQ ntiles+32(FP), R12
	CMPQ R12, $0
	JLE  pkbret

pkbtile:
	MOVQ k+24(FP), R11
	SHRQ $3, R11               // chunks

pkbloop:
	VMOVDQU32    (AX), X24
	VINSERTI32X4 $1, (AX)(BX*1), Y24, Y24
	VPMOVZXWD    Y24, Z24
	VPSLLD       $16, Z24, Z24
	VMOVDQU32    (AX)(BX*2), X25
	VINSERTI32X4 $1, (AX)(CX*1), Y25, Y25
	VPMOVZXWD    Y25, Z25
	VPSLLD       $16, Z25, Z25
	VMOVDQU32    (AX)(BX*4), X26
	VINSERTI32X4 $1, (AX)(DI*1), Y26, Y26
	VPMOVZXWD    Y26, Z26
	VPSLLD       $16, Z26, Z26
	VMOVDQU32    (AX)(R8*1), X27
	VINSERTI32X4 $1, (AX)(R9*1), Y27, Y27
	VPMOVZXWD    Y27, Z27
	VPSLLD       $16, Z27, Z27
	VMOVUPS      Z24, (DX)
	VMOVUPS      Z25, 64(DX)
	VMOVUPS      Z26, 128(DX)
	VMOVUPS      Z27, 192(DX)
	ADDQ         $16, AX
	ADDQ         $256, DX
	DECQ         R11
	JNZ          pkbloop
	SUBQ         R10, AX
	LEAQ         (AX)(BX*8), AX
	DECQ         R12
	JNZ          pkbtile

pkbret:
	VZEROUPPER
	RET

// func gemm6x8PackedAVX512(x *float32, ldx int, wp *float32, k, ntiles int, y *float32, ldy int)
//
// gemm6x8AVX512 for k a multiple of 8 on packed tiles (packF32x8AVX512,
// packBF16x8AVX512): for t < ntiles, r < 6, c < 8: y[r*ldy + 8t+c] =
// dot(x[r*ldx:][0:k], row 8t+c of the packed tiles), the same fused
// multiply-adds per accumulator from +0 in chunk order and the same HSUM16:
// the bits of gemm6x8AVX512 and gemm6x8BF16AVX512 on the unpacked rows.
TEXT ·gemm6x8PackedAVX512(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ ldx+8(FP), R12
	SHLQ $2, R12               // ldx bytes
	LEAQ (R12)(R12*2), R13     // 3*ldx
	LEAQ (R12)(R12*4), R14     // 5*ldx
	MOVQ wp+16(FP), AX
	MOVQ y+40(FP), DX
	CMPQ ntiles+32(FP), $0
	JLE  g68pret

g68ptile:
	ZERO24
	MOVQ k+24(FP), R11
	SHRQ $3, R11               // chunks
	XORQ R10, R10              // x offset of the chunk

g68ploop:
	VMOVUPS         (AX), Z24
	VMOVUPS         64(AX), Z25
	VMOVUPS         128(AX), Z26
	VMOVUPS         192(AX), Z27
	VBROADCASTF32X8 (SI)(R10*1), Z28
	FMA4(Z28, Z0, Z1, Z2, Z3)
	LEAQ            (SI)(R12*1), BX
	VBROADCASTF32X8 (BX)(R10*1), Z29
	FMA4(Z29, Z4, Z5, Z6, Z7)
	LEAQ            (SI)(R12*2), BX
	VBROADCASTF32X8 (BX)(R10*1), Z30
	FMA4(Z30, Z8, Z9, Z10, Z11)
	LEAQ            (SI)(R13*1), BX
	VBROADCASTF32X8 (BX)(R10*1), Z31
	FMA4(Z31, Z12, Z13, Z14, Z15)
	LEAQ            (SI)(R12*4), BX
	VBROADCASTF32X8 (BX)(R10*1), Z28
	FMA4(Z28, Z16, Z17, Z18, Z19)
	LEAQ            (SI)(R14*1), BX
	VBROADCASTF32X8 (BX)(R10*1), Z29
	FMA4(Z29, Z20, Z21, Z22, Z23)
	ADDQ            $32, R10
	ADDQ            $256, AX
	DECQ            R11
	JNZ             g68ploop

	MOVQ ldy+48(FP), R11
	SHLQ $2, R11               // ldy bytes
	STORE6x8
	ADDQ $32, DX
	DECQ ntiles+32(FP)
	JNZ  g68ptile

g68pret:
	VZEROUPPER
	RET
