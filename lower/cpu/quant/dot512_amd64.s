//go:build !purego

#include "textflag.h"

// AVX-512 (F/BW/VL + VNNI) Q8_0 GEMM micro-kernel: a tile of 16 weight rows
// (one zmm lane per output column) times any number of activation rows.
//
// Per block b, the 16 weight blocks are transposed in registers into
// T0..T7, where lane c of Tt holds the t-th group of 4 quants of column c,
// each byte XORed with 0x80 (w + 128, as an unsigned byte). For activation
// row r, eight VPDPBUSD with the int8 activation dwords broadcast then give
// in lane c the EXACT int32 sum over the block of (w + 128) * x (no
// saturation: |sum| <= 32*255*128 < 2^31), and subtracting 128 * sx[r, b]
// (the activation block sum) leaves the exact isum of the canonical order.
// The float part is done per lane in the canonical order with one rounding
// per operation (no FMA): s = fl32(fp16(dw) * dx), acc = fl32(acc +
// fl32(float32(isum) * s)), the accumulators living in the output tile
// (zeroed first), blocks in increasing order.

// Q8T16LOAD(OFF, XA, A, ...): A (XA its low 128 bits) = quants OFF..OFF+15 (4 dwords) of the
// block of columns 0, 4, 8, 12 (one 128-bit lane each), B columns 1, 5, 9,
// 13, C columns 2, 6, 10, 14, D columns 3, 7, 11, 15. Columns 0, 4, 8, 12
// are at AX, R8, R13, R14, column c+1, c+2, c+3 at +BX, +2*BX, +R9.
#define Q8T16LOAD(OFF, XA, A, XB, B, XC, C, XD, D) \
	VMOVDQU      OFF(AX), XA;                    \
	VINSERTI32X4 $1, OFF(R8), A, A;             \
	VINSERTI32X4 $2, OFF(R13), A, A;            \
	VINSERTI32X4 $3, OFF(R14), A, A;            \
	VMOVDQU      OFF(AX)(BX*1), XB;              \
	VINSERTI32X4 $1, OFF(R8)(BX*1), B, B;       \
	VINSERTI32X4 $2, OFF(R13)(BX*1), B, B;      \
	VINSERTI32X4 $3, OFF(R14)(BX*1), B, B;      \
	VMOVDQU      OFF(AX)(BX*2), XC;              \
	VINSERTI32X4 $1, OFF(R8)(BX*2), C, C;       \
	VINSERTI32X4 $2, OFF(R13)(BX*2), C, C;      \
	VINSERTI32X4 $3, OFF(R14)(BX*2), C, C;      \
	VMOVDQU      OFF(AX)(R9*1), XD;              \
	VINSERTI32X4 $1, OFF(R8)(R9*1), D, D;       \
	VINSERTI32X4 $2, OFF(R13)(R9*1), D, D;      \
	VINSERTI32X4 $3, OFF(R14)(R9*1), D, D

// Q8T16TRANS(A, B, C, D, T0, T1, T2, T3): per 128-bit lane, the 4x4 dword
// transpose: lane L of Tt = [A.L[t], B.L[t], C.L[t], D.L[t]], i.e. dword t
// of columns 4L..4L+3; every byte XORed with Z25 (0x80). Clobbers A..D.
#define Q8T16TRANS(A, B, C, D, T0, T1, T2, T3) \
	VPXORD      Z25, A, A;  \
	VPXORD      Z25, B, B;  \
	VPXORD      Z25, C, C;  \
	VPXORD      Z25, D, D;  \
	VPUNPCKLDQ  B, A, Z8;   \
	VPUNPCKHDQ  B, A, Z9;   \
	VPUNPCKLDQ  D, C, Z10;  \
	VPUNPCKHDQ  D, C, Z11;  \
	VPUNPCKLQDQ Z10, Z8, T0; \
	VPUNPCKHQDQ Z10, Z8, T1; \
	VPUNPCKLQDQ Z11, Z9, T2; \
	VPUNPCKHQDQ Z11, Z9, T3

// SC4(P, R): R = the 4 fp16 scales of the current block of the columns at
// P, P+BX, P+2*BX, P+R9 (in this order, 16 bits each). Clobbers R12.
#define SC4(P, R) \
	MOVWQZX (P), R;          \
	MOVWQZX (P)(BX*1), R12;  \
	SHLQ    $16, R12;        \
	ORQ     R12, R;          \
	MOVWQZX (P)(BX*2), R12;  \
	SHLQ    $32, R12;        \
	ORQ     R12, R;          \
	MOVWQZX (P)(R9*1), R12;  \
	SHLQ    $48, R12;        \
	ORQ     R12, R

// func q8mm16AVX512(x *int8, dx *float32, sx *int32, w *byte, ldw, nb, rows int, y *float32, ldy int)
//
// For r < rows, c < 16: y[r*ldy + c] = dot(activation row r, weight row c),
// activation row r at x + r*32*nb (scales dx + r*nb, sums sx + r*nb),
// weight row c the block_q8_0 row at w + c*ldw, nb >= 1, rows >= 1.
//
// Frame: 0(SP) = 4*nb (activation row stride of dx and sx; 8 times it for
// x), 8(SP) = 4*ldy, 16(SP) = rows*4*nb.
TEXT ·q8mm16AVX512(SB), NOSPLIT, $24-72
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ sx+16(FP), R11
	MOVQ w+24(FP), AX
	MOVQ ldw+32(FP), BX
	MOVQ nb+40(FP), CX
	MOVQ y+56(FP), DX
	LEAQ (CX*4), R10
	MOVQ R10, 0(SP)
	IMULQ rows+48(FP), R10
	MOVQ R10, 16(SP)
	MOVQ ldy+64(FP), R10
	SHLQ $2, R10
	MOVQ R10, 8(SP)
	LEAQ (BX)(BX*2), R9  // 3*ldw
	LEAQ (AX)(BX*4), R8  // column 4
	LEAQ (AX)(BX*8), R13 // column 8
	LEAQ (R8)(BX*8), R14 // column 12
	MOVL $0x80, R10
	VPBROADCASTB R10, Z25

	// Zero the output tile (the accumulators start at +0).
	VPXORD Z26, Z26, Z26
	MOVQ   DX, R12
	MOVQ   rows+48(FP), R10

q8mm16zero:
	VMOVUPS Z26, (R12)
	ADDQ    8(SP), R12
	DECQ    R10
	JNZ     q8mm16zero

q8mm16block:
	Q8T16LOAD(2, X0, Z0, X1, Z1, X2, Z2, X3, Z3)
	Q8T16LOAD(18, X4, Z4, X5, Z5, X6, Z6, X7, Z7)
	Q8T16TRANS(Z0, Z1, Z2, Z3, Z16, Z17, Z18, Z19)
	Q8T16TRANS(Z4, Z5, Z6, Z7, Z20, Z21, Z22, Z23)

	// Z24 = the 16 weight scales as float32.
	SC4(AX, R10)
	VMOVQ   R10, X12
	SC4(R8, R10)
	VPINSRQ $1, R10, X12, X12
	SC4(R13, R10)
	VMOVQ   R10, X13
	SC4(R14, R10)
	VPINSRQ $1, R10, X13, X13
	VINSERTI128 $1, X13, Y12, Y12
	VCVTPH2PS   Y12, Z24

	// Prefetch the current block of the next 16-column tile (columns
	// 16..31), one tile ahead of its use.
	LEAQ       (R13)(BX*8), R10 // column 16
	LEAQ       (R14)(BX*8), R12 // column 20
	PREFETCHT0 (R10)
	PREFETCHT0 (R10)(BX*1)
	PREFETCHT0 (R10)(BX*2)
	PREFETCHT0 (R10)(R9*1)
	PREFETCHT0 (R12)
	PREFETCHT0 (R12)(BX*1)
	PREFETCHT0 (R12)(BX*2)
	PREFETCHT0 (R12)(R9*1)
	LEAQ       (R10)(BX*8), R10 // column 24
	LEAQ       (R12)(BX*8), R12 // column 28
	PREFETCHT0 (R10)
	PREFETCHT0 (R10)(BX*1)
	PREFETCHT0 (R10)(BX*2)
	PREFETCHT0 (R10)(R9*1)
	PREFETCHT0 (R12)
	PREFETCHT0 (R12)(BX*1)
	PREFETCHT0 (R12)(BX*2)
	PREFETCHT0 (R12)(R9*1)

	ADDQ $34, AX
	ADDQ $34, R8
	ADDQ $34, R13
	ADDQ $34, R14

	// Rows: R10 = r*4*nb, R12 = output row r.
	XORQ R10, R10
	MOVQ DX, R12

q8mm16row:
	VPXORD        Z26, Z26, Z26
	VPDPBUSD.BCST (SI)(R10*8), Z16, Z26
	VPDPBUSD.BCST 4(SI)(R10*8), Z17, Z26
	VPDPBUSD.BCST 8(SI)(R10*8), Z18, Z26
	VPDPBUSD.BCST 12(SI)(R10*8), Z19, Z26
	VPXORD        Z28, Z28, Z28
	VPDPBUSD.BCST 16(SI)(R10*8), Z20, Z28
	VPDPBUSD.BCST 20(SI)(R10*8), Z21, Z28
	VPDPBUSD.BCST 24(SI)(R10*8), Z22, Z28
	VPDPBUSD.BCST 28(SI)(R10*8), Z23, Z28
	VPADDD        Z28, Z26, Z26
	VPSLLD.BCST   $7, (R11)(R10*1), Z27
	VPSUBD        Z27, Z26, Z26         // exact isum
	VCVTDQ2PS     Z26, Z26
	VMULPS.BCST   (DI)(R10*1), Z24, Z27 // s = fl32(dw * dx)
	VMULPS        Z27, Z26, Z26         // fl32(float32(isum) * s)
	VADDPS        (R12), Z26, Z26       // fl32(acc + p)
	VMOVUPS       Z26, (R12)
	ADDQ          8(SP), R12
	ADDQ          0(SP), R10
	CMPQ          R10, 16(SP)
	JLT           q8mm16row

	ADDQ $32, SI
	ADDQ $4, DI
	ADDQ $4, R11
	DECQ CX
	JNZ  q8mm16block

	VZEROUPPER
	RET

// Q4T16TRANS(A, B, C, D, T0, T1, T2, T3): the same per-128-bit-lane 4x4
// dword transpose as Q8T16TRANS, without the 0x80 bias (lane L of Tt =
// dword t of columns 4L..4L+3). Clobbers Z8..Z11.
#define Q4T16TRANS(A, B, C, D, T0, T1, T2, T3) \
	VPUNPCKLDQ  B, A, Z8;    \
	VPUNPCKHDQ  B, A, Z9;    \
	VPUNPCKLDQ  D, C, Z10;   \
	VPUNPCKHDQ  D, C, Z11;   \
	VPUNPCKLQDQ Z10, Z8, T0; \
	VPUNPCKHQDQ Z10, Z8, T1; \
	VPUNPCKLQDQ Z11, Z9, T2; \
	VPUNPCKHQDQ Z11, Z9, T3

// Q4SPLIT(T, LO, HI): LO = the low nibbles of the bytes of T (elements
// 4t..4t+3 of the block for T the t-th dword group), HI = the high nibbles
// (elements 16+4t..16+4t+3), as unsigned bytes 0..15 (Z25 = 0x0F bytes).
#define Q4SPLIT(T, LO, HI) \
	VPSRLW $4, T, HI;     \
	VPANDD Z25, T, LO;    \
	VPANDD Z25, HI, HI

// func q4mm16AVX512(x *int8, dx *float32, sx *int32, w *byte, ldw, nb, rows int, y *float32, ldy int)
//
// As q8mm16AVX512 for block_q4_0 weights (18-byte blocks): per block the
// 16 bytes of quants of the 16 columns are transposed into 4 registers of
// dword groups (lane c = column c) and split into the unsigned low nibbles
// (elements 0..15, activation dwords 0..3) and high nibbles (elements
// 16..31, activation dwords 4..7). Eight VPDPBUSD give in lane c the exact
// sum of nibble * x (|sum| <= 32*15*128), and subtracting 8 * sx[r, b]
// leaves the exact isum of (nibble - 8) * x. The float part is the same.
TEXT ·q4mm16AVX512(SB), NOSPLIT, $24-72
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ sx+16(FP), R11
	MOVQ w+24(FP), AX
	MOVQ ldw+32(FP), BX
	MOVQ nb+40(FP), CX
	MOVQ y+56(FP), DX
	LEAQ (CX*4), R10
	MOVQ R10, 0(SP)
	IMULQ rows+48(FP), R10
	MOVQ R10, 16(SP)
	MOVQ ldy+64(FP), R10
	SHLQ $2, R10
	MOVQ R10, 8(SP)
	LEAQ (BX)(BX*2), R9  // 3*ldw
	LEAQ (AX)(BX*4), R8  // column 4
	LEAQ (AX)(BX*8), R13 // column 8
	LEAQ (R8)(BX*8), R14 // column 12
	MOVL $0x0f, R10
	VPBROADCASTB R10, Z25

	// Zero the output tile (the accumulators start at +0).
	VPXORD Z26, Z26, Z26
	MOVQ   DX, R12
	MOVQ   rows+48(FP), R10

q4mm16zero:
	VMOVUPS Z26, (R12)
	ADDQ    8(SP), R12
	DECQ    R10
	JNZ     q4mm16zero

q4mm16block:
	Q8T16LOAD(2, X0, Z0, X1, Z1, X2, Z2, X3, Z3)
	Q4T16TRANS(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	Q4SPLIT(Z4, Z16, Z20)
	Q4SPLIT(Z5, Z17, Z21)
	Q4SPLIT(Z6, Z18, Z22)
	Q4SPLIT(Z7, Z19, Z23)

	// Z24 = the 16 weight scales as float32.
	SC4(AX, R10)
	VMOVQ   R10, X12
	SC4(R8, R10)
	VPINSRQ $1, R10, X12, X12
	SC4(R13, R10)
	VMOVQ   R10, X13
	SC4(R14, R10)
	VPINSRQ $1, R10, X13, X13
	VINSERTI128 $1, X13, Y12, Y12
	VCVTPH2PS   Y12, Z24

	// Prefetch the current block of the next 16-column tile (columns
	// 16..31), one tile ahead of its use.
	LEAQ       (R13)(BX*8), R10 // column 16
	LEAQ       (R14)(BX*8), R12 // column 20
	PREFETCHT0 (R10)
	PREFETCHT0 (R10)(BX*1)
	PREFETCHT0 (R10)(BX*2)
	PREFETCHT0 (R10)(R9*1)
	PREFETCHT0 (R12)
	PREFETCHT0 (R12)(BX*1)
	PREFETCHT0 (R12)(BX*2)
	PREFETCHT0 (R12)(R9*1)
	LEAQ       (R10)(BX*8), R10 // column 24
	LEAQ       (R12)(BX*8), R12 // column 28
	PREFETCHT0 (R10)
	PREFETCHT0 (R10)(BX*1)
	PREFETCHT0 (R10)(BX*2)
	PREFETCHT0 (R10)(R9*1)
	PREFETCHT0 (R12)
	PREFETCHT0 (R12)(BX*1)
	PREFETCHT0 (R12)(BX*2)
	PREFETCHT0 (R12)(R9*1)

	ADDQ $18, AX
	ADDQ $18, R8
	ADDQ $18, R13
	ADDQ $18, R14

	// Rows: R10 = r*4*nb, R12 = output row r.
	XORQ R10, R10
	MOVQ DX, R12

q4mm16row:
	VPXORD        Z26, Z26, Z26
	VPDPBUSD.BCST (SI)(R10*8), Z16, Z26
	VPDPBUSD.BCST 4(SI)(R10*8), Z17, Z26
	VPDPBUSD.BCST 8(SI)(R10*8), Z18, Z26
	VPDPBUSD.BCST 12(SI)(R10*8), Z19, Z26
	VPXORD        Z28, Z28, Z28
	VPDPBUSD.BCST 16(SI)(R10*8), Z20, Z28
	VPDPBUSD.BCST 20(SI)(R10*8), Z21, Z28
	VPDPBUSD.BCST 24(SI)(R10*8), Z22, Z28
	VPDPBUSD.BCST 28(SI)(R10*8), Z23, Z28
	VPADDD        Z28, Z26, Z26
	VPSLLD.BCST   $3, (R11)(R10*1), Z27
	VPSUBD        Z27, Z26, Z26         // exact isum
	VCVTDQ2PS     Z26, Z26
	VMULPS.BCST   (DI)(R10*1), Z24, Z27 // s = fl32(dw * dx)
	VMULPS        Z27, Z26, Z26         // fl32(float32(isum) * s)
	VADDPS        (R12), Z26, Z26       // fl32(acc + p)
	VMOVUPS       Z26, (R12)
	ADDQ          8(SP), R12
	ADDQ          0(SP), R10
	CMPQ          R10, 16(SP)
	JLT           q4mm16row

	ADDQ $32, SI
	ADDQ $4, DI
	ADDQ $4, R11
	DECQ CX
	JNZ  q4mm16block

	VZEROUPPER
	RET
