//go:build !purego

#include "textflag.h"
#include "hsum8_amd64.h"

// Decode attention's scores for two query heads sharing a 16-bit KV head,
// with AVX-512: the keys of each row are loaded and widened once for both.
// A register holds [x0 chunk | x1 chunk] (8 lanes a head) and each key
// chunk broadcast to both halves, so one FMA advances both heads' 8 lane
// accumulators: per head exactly gemv1x8F16AVX2's (or BF16's) order, and
// the same HSUM8 tree per head. Each pass prefetches two lines of the tile
// four ahead (a tile of 8 rows of a 128-wide head is 2 KiB, so 8 KiB
// ahead: one tile ahead left the scores at 70 % of a plain read of the
// cache, four reach it).

// G2F16ROW(P, R): Zr = the key chunk at (P)(DX*1), 8 f16 values widened,
// in both halves.
#define G2F16ROW(P, R, Z) \
	VBROADCASTI32X4 (P)(DX*1), R; \
	VCVTPH2PS       R, Z

// G2BF16ROW: the chunk in all four 128-bit lanes, then one VPSHUFB
// (control in Z26, bf16Pair) puts keys 0-3 (lanes 0 and 2) and 4-7 (lanes
// 1 and 3) in the high halves of zeroed dwords: the widened values, as
// VPMOVZXWD and a shift left by 16 give them, in one operation, not two.
#define G2BF16ROW(P, R, Z) \
	VBROADCASTI32X4 (P)(DX*1), Z; \
	VPSHUFB         Z26, Z, Z

// bf16Pair: per dword i of a lane, bytes {zero, zero, 2i, 2i+1} of keys
// 0-3 (lanes 0, 2) or 4-7 (lanes 1, 3) of the chunk.
DATA bf16Pair<>+0(SB)/4, $0x01008080
DATA bf16Pair<>+4(SB)/4, $0x03028080
DATA bf16Pair<>+8(SB)/4, $0x05048080
DATA bf16Pair<>+12(SB)/4, $0x07068080
DATA bf16Pair<>+16(SB)/4, $0x09088080
DATA bf16Pair<>+20(SB)/4, $0x0b0a8080
DATA bf16Pair<>+24(SB)/4, $0x0d0c8080
DATA bf16Pair<>+28(SB)/4, $0x0f0e8080
DATA bf16Pair<>+32(SB)/4, $0x01008080
DATA bf16Pair<>+36(SB)/4, $0x03028080
DATA bf16Pair<>+40(SB)/4, $0x05048080
DATA bf16Pair<>+44(SB)/4, $0x07068080
DATA bf16Pair<>+48(SB)/4, $0x09088080
DATA bf16Pair<>+52(SB)/4, $0x0b0a8080
DATA bf16Pair<>+56(SB)/4, $0x0d0c8080
DATA bf16Pair<>+60(SB)/4, $0x0f0e8080
GLOBL bf16Pair<>(SB), RODATA|NOPTR, $64

#define G2LOADF16 \
	G2F16ROW(AX, Y16, Z16);  \
	G2F16ROW(BX, Y17, Z17);  \
	G2F16ROW(CX, Y18, Z18);  \
	G2F16ROW(DI, Y19, Z19);  \
	G2F16ROW(R8, Y20, Z20);  \
	G2F16ROW(R9, Y21, Z21);  \
	G2F16ROW(R10, Y22, Z22); \
	G2F16ROW(R11, Y23, Z23)

#define G2LOADBF16 \
	G2BF16ROW(AX, Y16, Z16);  \
	G2BF16ROW(BX, Y17, Z17);  \
	G2BF16ROW(CX, Y18, Z18);  \
	G2BF16ROW(DI, Y19, Z19);  \
	G2BF16ROW(R8, Y20, Z20);  \
	G2BF16ROW(R9, Y21, Z21);  \
	G2BF16ROW(R10, Y22, Z22); \
	G2BF16ROW(R11, Y23, Z23)

// G2BODY(TILE, LOOP, DONE, LOAD): the kernel, its labels and row loads.
#define G2BODY(TILE, LOOP, DONE, LOAD) \
	MOVQ x0+0(FP), SI;            \
	MOVQ x1+8(FP), R14;           \
	MOVQ w+16(FP), AX;            \
	MOVQ ldw+24(FP), R13;         \
	SHLQ $1, R13;                 \
	LEAQ (AX)(R13*1), BX;         \
	LEAQ (BX)(R13*1), CX;         \
	LEAQ (CX)(R13*1), DI;         \
	LEAQ (DI)(R13*1), R8;         \
	LEAQ (R8)(R13*1), R9;         \
	LEAQ (R9)(R13*1), R10;        \
	LEAQ (R10)(R13*1), R11;       \
	SHLQ $3, R13;                 \
	MOVQ k+32(FP), R12;           \
	SHLQ $1, R12;                 \
	CMPQ ntiles+40(FP), $0;       \
	JLE  DONE;                    \
TILE:;                            \
	VPXORD Z0, Z0, Z0;            \
	VPXORD Z1, Z1, Z1;            \
	VPXORD Z2, Z2, Z2;            \
	VPXORD Z3, Z3, Z3;            \
	VPXORD Z4, Z4, Z4;            \
	VPXORD Z5, Z5, Z5;            \
	VPXORD Z6, Z6, Z6;            \
	VPXORD Z7, Z7, Z7;            \
	XORQ   DX, DX;                \
	LEAQ   (AX)(R13*4), R15;      \
LOOP:;                            \
	PREFETCHNTA   (R15)(DX*8);    \
	PREFETCHNTA   64(R15)(DX*8);  \
	VMOVUPS       (SI)(DX*2), Y24; \
	VINSERTF32X8  $1, (R14)(DX*2), Z24, Z24; \
	LOAD;                         \
	VFMADD231PS   Z16, Z24, Z0;   \
	VFMADD231PS   Z17, Z24, Z1;   \
	VFMADD231PS   Z18, Z24, Z2;   \
	VFMADD231PS   Z19, Z24, Z3;   \
	VFMADD231PS   Z20, Z24, Z4;   \
	VFMADD231PS   Z21, Z24, Z5;   \
	VFMADD231PS   Z22, Z24, Z6;   \
	VFMADD231PS   Z23, Z24, Z7;   \
	ADDQ          $16, DX;        \
	CMPQ          DX, R12;        \
	JB            LOOP;           \
	VEXTRACTF32X8 $1, Z0, Y16;    \
	VEXTRACTF32X8 $1, Z1, Y17;    \
	VEXTRACTF32X8 $1, Z2, Y18;    \
	VEXTRACTF32X8 $1, Z3, Y19;    \
	VEXTRACTF32X8 $1, Z4, Y20;    \
	VEXTRACTF32X8 $1, Z5, Y21;    \
	VEXTRACTF32X8 $1, Z6, Y22;    \
	VEXTRACTF32X8 $1, Z7, Y23;    \
	MOVQ y0+48(FP), R15;          \
	HSUM8((R15));                 \
	VMOVAPS Y16, Y0;              \
	VMOVAPS Y17, Y1;              \
	VMOVAPS Y18, Y2;              \
	VMOVAPS Y19, Y3;              \
	VMOVAPS Y20, Y4;              \
	VMOVAPS Y21, Y5;              \
	VMOVAPS Y22, Y6;              \
	VMOVAPS Y23, Y7;              \
	MOVQ y1+56(FP), R15;          \
	HSUM8((R15));                 \
	ADDQ $32, y0+48(FP);          \
	ADDQ $32, y1+56(FP);          \
	ADDQ R13, AX;                 \
	ADDQ R13, BX;                 \
	ADDQ R13, CX;                 \
	ADDQ R13, DI;                 \
	ADDQ R13, R8;                 \
	ADDQ R13, R9;                 \
	ADDQ R13, R10;                \
	ADDQ R13, R11;                \
	DECQ ntiles+40(FP);           \
	JNZ  TILE;                    \
DONE:;                            \
	VZEROUPPER;                   \
	RET

// func gemv2x8F16AVX512(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)
//
// For t < ntiles, r < 8: y_h[8t+r] = dot(x_h[0:k], w[(8t+r)*ldw:][0:k]) for
// h = 0, 1, f16 keys, k a multiple of 8: each head's bits those of
// gemv1x8F16AVX2 on x_h.
TEXT ·gemv2x8F16AVX512(SB), NOSPLIT, $0-64
	G2BODY(g2htile, g2hloop, g2hret, G2LOADF16)

// func gemv2x8BF16AVX512(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)
//
// gemv2x8F16AVX512 on bf16 keys (gemv1x8BF16AVX2's bits per head).
TEXT ·gemv2x8BF16AVX512(SB), NOSPLIT, $0-64
	VMOVDQU32 bf16Pair<>(SB), Z26
	G2BODY(g2btile, g2bloop, g2bret, G2LOADBF16)
