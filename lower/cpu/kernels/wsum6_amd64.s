//go:build !purego

#include "textflag.h"

// Prefill attention's weighted sums of V with AVX-512 for six (row, head)
// pairs sharing one V chunk: three rows of a block by two query heads of
// one KV head, per element a = fma(p[s], v_s[c], a) for s ascending from a
// = out (acc) or +0, the order of wsum2 and wsum, so each pair's bits are
// those of its own wsum. Each V row is loaded (and widened, for a 16-bit
// cache) once for the six instead of once for every two (wsum2), 64
// columns (4 registers a pair, 24 accumulators) at a time.
//
// Registers: DI, SI, R8 the three rows' outputs (head 0; head 1 R9 bytes
// on), R10, R11, R12 their weights p (head 1 R13 bytes on), BX the V row,
// R14 its stride in elements, CX the rows left, AX the column blocks left,
// DX the V chunk's current column block.

// W6LD4, W6ST4: one pair's four accumulators from or to four addresses.
#define W6LD4(A, B, C, D, M0, M1, M2, M3) \
	VMOVUPS M0, A; \
	VMOVUPS M1, B; \
	VMOVUPS M2, C; \
	VMOVUPS M3, D

#define W6ST4(A, B, C, D, M0, M1, M2, M3) \
	VMOVUPS A, M0; \
	VMOVUPS B, M1; \
	VMOVUPS C, M2; \
	VMOVUPS D, M3

// W6FMA4(P, T, A, B, C, D): one pair's weight P broadcast into T, times
// the V row's four registers (Z24..Z27) into its accumulators.
#define W6FMA4(P, T, A, B, C, D) \
	VBROADCASTSS P, T;       \
	VFMADD231PS  Z24, T, A;  \
	VFMADD231PS  Z25, T, B;  \
	VFMADD231PS  Z26, T, C;  \
	VFMADD231PS  Z27, T, D

#define W6ZERO \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15 \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPXORD Z18, Z18, Z18 \
	VPXORD Z19, Z19, Z19 \
	VPXORD Z20, Z20, Z20 \
	VPXORD Z21, Z21, Z21 \
	VPXORD Z22, Z22, Z22 \
	VPXORD Z23, Z23, Z23

#define W6LOAD \
	W6LD4(Z0, Z1, Z2, Z3, 0(DI), 64(DI), 128(DI), 192(DI)) \
	W6LD4(Z4, Z5, Z6, Z7, 0(DI)(R9*1), 64(DI)(R9*1), 128(DI)(R9*1), 192(DI)(R9*1)) \
	W6LD4(Z8, Z9, Z10, Z11, 0(SI), 64(SI), 128(SI), 192(SI)) \
	W6LD4(Z12, Z13, Z14, Z15, 0(SI)(R9*1), 64(SI)(R9*1), 128(SI)(R9*1), 192(SI)(R9*1)) \
	W6LD4(Z16, Z17, Z18, Z19, 0(R8), 64(R8), 128(R8), 192(R8)) \
	W6LD4(Z20, Z21, Z22, Z23, 0(R8)(R9*1), 64(R8)(R9*1), 128(R8)(R9*1), 192(R8)(R9*1))

#define W6STORE \
	W6ST4(Z0, Z1, Z2, Z3, 0(DI), 64(DI), 128(DI), 192(DI)) \
	W6ST4(Z4, Z5, Z6, Z7, 0(DI)(R9*1), 64(DI)(R9*1), 128(DI)(R9*1), 192(DI)(R9*1)) \
	W6ST4(Z8, Z9, Z10, Z11, 0(SI), 64(SI), 128(SI), 192(SI)) \
	W6ST4(Z12, Z13, Z14, Z15, 0(SI)(R9*1), 64(SI)(R9*1), 128(SI)(R9*1), 192(SI)(R9*1)) \
	W6ST4(Z16, Z17, Z18, Z19, 0(R8), 64(R8), 128(R8), 192(R8)) \
	W6ST4(Z20, Z21, Z22, Z23, 0(R8)(R9*1), 64(R8)(R9*1), 128(R8)(R9*1), 192(R8)(R9*1))

#define W6FMA \
	W6FMA4((R10), Z28, Z0, Z1, Z2, Z3) \
	W6FMA4((R10)(R13*1), Z29, Z4, Z5, Z6, Z7) \
	W6FMA4((R11), Z28, Z8, Z9, Z10, Z11) \
	W6FMA4((R11)(R13*1), Z29, Z12, Z13, Z14, Z15) \
	W6FMA4((R12), Z28, Z16, Z17, Z18, Z19) \
	W6FMA4((R12)(R13*1), Z29, Z20, Z21, Z22, Z23)

#define W6LOADF32 \
	VMOVUPS (BX), Z24;    \
	VMOVUPS 64(BX), Z25;  \
	VMOVUPS 128(BX), Z26; \
	VMOVUPS 192(BX), Z27

#define W6LOADF16 \
	VCVTPH2PS (BX), Z24;   \
	VCVTPH2PS 32(BX), Z25; \
	VCVTPH2PS 64(BX), Z26; \
	VCVTPH2PS 96(BX), Z27

#define W6LOADBF16 \
	VPMOVZXWD (BX), Z24;    \
	VPMOVZXWD 32(BX), Z25;  \
	VPMOVZXWD 64(BX), Z26;  \
	VPMOVZXWD 96(BX), Z27;  \
	VPSLLD    $16, Z24, Z24; \
	VPSLLD    $16, Z25, Z25; \
	VPSLLD    $16, Z26, Z26; \
	VPSLLD    $16, Z27, Z27

// W6BODY(BLK, LD, GO, LOOP, LOADV, VB): the kernel for V elements of VB
// bytes.
#define W6BODY(BLK, LD, GO, LOOP, LOADV, VB) \
	MOVQ out+0(FP), DI;    \
	MOVQ ldo+8(FP), SI;    \
	SHLQ $2, SI;           \
	LEAQ (DI)(SI*2), R8;   \
	ADDQ DI, SI;           \
	MOVQ oh+16(FP), R9;    \
	SHLQ $2, R9;           \
	MOVQ ldv+56(FP), R14;  \
	MOVQ ph+40(FP), R13;   \
	SHLQ $2, R13;          \
	MOVQ d+72(FP), AX;     \
	SHRQ $6, AX;           \
	MOVQ v+48(FP), DX;     \
BLK:;                      \
	CMPQ acc+80(FP), $0;   \
	JNE  LD;               \
	W6ZERO;                \
	JMP  GO;               \
LD:;                       \
	W6LOAD;                \
GO:;                       \
	MOVQ p+24(FP), R10;    \
	MOVQ ldp+32(FP), R12;  \
	SHLQ $2, R12;          \
	LEAQ (R10)(R12*1), R11; \
	LEAQ (R11)(R12*1), R12; \
	MOVQ DX, BX;           \
	MOVQ t+64(FP), CX;     \
LOOP:;                     \
	LOADV;                 \
	W6FMA;                 \
	ADDQ $4, R10;          \
	ADDQ $4, R11;          \
	ADDQ $4, R12;          \
	LEAQ (BX)(R14*VB), BX; \
	DECQ CX;               \
	JNZ  LOOP;             \
	W6STORE;               \
	ADDQ $256, DI;         \
	ADDQ $256, SI;         \
	ADDQ $256, R8;         \
	ADDQ $(64*VB), DX;     \
	DECQ AX;               \
	JNZ  BLK;              \
	VZEROUPPER;            \
	RET

// func wsum6F32AVX512(out *float32, ldo, oh int, p *float32, ldp, ph int, v *float32, ldv, t, d, acc int)
//
// For the rows r < 3 and heads h < 2 of a pair block: out[r*ldo + h*oh + c]
// (c < d, d a multiple of 64) = the weighted sum of t >= 1 V rows (ldv
// apart) with the weights p[r*ldp + h*ph + s], continued from out if acc.
TEXT ·wsum6F32AVX512(SB), NOSPLIT, $0-88
	W6BODY(w6f32blk, w6f32ld, w6f32go, w6f32loop, W6LOADF32, 4)

// func wsum6F16AVX512(out *float32, ldo, oh int, p *float32, ldp, ph int, v *uint16, ldv, t, d, acc int)
TEXT ·wsum6F16AVX512(SB), NOSPLIT, $0-88
	W6BODY(w6f16blk, w6f16ld, w6f16go, w6f16loop, W6LOADF16, 2)

// func wsum6BF16AVX512(out *float32, ldo, oh int, p *float32, ldp, ph int, v *uint16, ldv, t, d, acc int)
TEXT ·wsum6BF16AVX512(SB), NOSPLIT, $0-88
	W6BODY(w6bfblk, w6bfld, w6bfgo, w6bfloop, W6LOADBF16, 2)
