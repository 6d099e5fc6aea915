//go:build !purego

#include "textflag.h"

// AVX-512 (F/BW/VL + VNNI) kernels on wire.Interleaved16 groups: per block
// the 16 rows' fp16 scales (32 bytes), then 64-byte vectors each holding a
// 4-byte piece of every row (row r in dword lane r). The vectors are the
// transposed tiles q8mm16AVX512 and q4mm16AVX512 build in registers, read
// as they lie: Q8_0 pieces XORed with 0x80 (w + 128 as unsigned bytes),
// Q4_0 pieces split into their low nibbles (elements 4p..4p+3) and high
// nibbles (16+4p..). VPDPBUSD with the broadcast int8 activation dwords
// then leaves each row's exact block sum in its lane, less 128 (Q8_0) or
// 8 (Q4_0) times the activation block sum sx, and the float part is the
// canonical one per lane: s = fl32(fp16(dw) * dx), acc = fl32(acc +
// fl32(float32(isum) * s)), blocks in increasing order, no FMA.

// IL16Q8LOAD(B): Z16..Z23 = the 8 pieces of the Q8_0 block at B(AX),
// biased (Z25 = 0x80 bytes); Z24 = its 16 scales as float32.
#define IL16Q8LOAD(B) \
	VPXORD    B+32(AX), Z25, Z16;  \
	VPXORD    B+96(AX), Z25, Z17;  \
	VPXORD    B+160(AX), Z25, Z18; \
	VPXORD    B+224(AX), Z25, Z19; \
	VPXORD    B+288(AX), Z25, Z20; \
	VPXORD    B+352(AX), Z25, Z21; \
	VPXORD    B+416(AX), Z25, Z22; \
	VPXORD    B+480(AX), Z25, Z23; \
	VCVTPH2PS B(AX), Z24

// IL16Q4LOAD(B): Z16..Z19 = the low nibbles, Z20..Z23 the high nibbles of
// the 4 pieces of the Q4_0 block at B(AX) (Z25 = 0x0F bytes); Z24 = its 16
// scales as float32.
#define IL16Q4LOAD(B) \
	VMOVDQU32 B+32(AX), Z20;  \
	VMOVDQU32 B+96(AX), Z21;  \
	VMOVDQU32 B+160(AX), Z22; \
	VMOVDQU32 B+224(AX), Z23; \
	VPANDD    Z25, Z20, Z16;  \
	VPANDD    Z25, Z21, Z17;  \
	VPANDD    Z25, Z22, Z18;  \
	VPANDD    Z25, Z23, Z19;  \
	VPSRLW    $4, Z20, Z20;   \
	VPSRLW    $4, Z21, Z21;   \
	VPSRLW    $4, Z22, Z22;   \
	VPSRLW    $4, Z23, Z23;   \
	VPANDD    Z25, Z20, Z20;  \
	VPANDD    Z25, Z21, Z21;  \
	VPANDD    Z25, Z22, Z22;  \
	VPANDD    Z25, Z23, Z23;  \
	VCVTPH2PS B(AX), Z24

// IL16DOT(SH, P): P = fl32(float32(isum) * fl32(dw * dx)) for the 16
// rows: the pieces in Z16..Z23 times the activation block at
// (SI)(R10*8), less its sum at (R11)(R10*1) << SH, dx at (DI)(R10*1).
// Clobbers Z26..Z28.
#define IL16DOT(SH, P) \
	VPXORD        Z26, Z26, Z26;              \
	VPDPBUSD.BCST (SI)(R10*8), Z16, Z26;      \
	VPDPBUSD.BCST 4(SI)(R10*8), Z17, Z26;     \
	VPDPBUSD.BCST 8(SI)(R10*8), Z18, Z26;     \
	VPDPBUSD.BCST 12(SI)(R10*8), Z19, Z26;    \
	VPXORD        Z28, Z28, Z28;              \
	VPDPBUSD.BCST 16(SI)(R10*8), Z20, Z28;    \
	VPDPBUSD.BCST 20(SI)(R10*8), Z21, Z28;    \
	VPDPBUSD.BCST 24(SI)(R10*8), Z22, Z28;    \
	VPDPBUSD.BCST 28(SI)(R10*8), Z23, Z28;    \
	VPADDD        Z28, Z26, Z26;              \
	VPSLLD.BCST   $SH, (R11)(R10*1), Z27;     \
	VPSUBD        Z27, Z26, Z26;              \
	VCVTDQ2PS     Z26, Z26;                   \
	VMULPS.BCST   (DI)(R10*1), Z24, Z27;      \
	VMULPS        Z27, Z26, P

// IL16ROWS(LOOP, SH): the row loop of the GEMM kernels: for activation
// rows r < rows (R10 = r*4*nb, R12 = output row r), the current block's
// product added to the output tile. Frame as in q8mm16ILAVX512.
#define IL16ROWS(LOOP, SH) \
	XORQ R10, R10;                                             \
	MOVQ DX, R12;                                              \
LOOP:;                                                         \
	IL16DOT(SH, Z0);   \
	VADDPS  (R12), Z0, Z0;                                     \
	VMOVUPS Z0, (R12);                                         \
	ADDQ    8(SP), R12;                                        \
	ADDQ    0(SP), R10;                                        \
	CMPQ    R10, 16(SP);                                       \
	JLT     LOOP

// IL16PROLOGUE: arguments into registers and the frame (0(SP) = 4*nb,
// 8(SP) = 4*ldy, 16(SP) = rows*4*nb), the output tile zeroed.
#define IL16PROLOGUE(ZERO) \
	MOVQ  x+0(FP), SI;       \
	MOVQ  dx+8(FP), DI;      \
	MOVQ  sx+16(FP), R11;    \
	MOVQ  w+24(FP), AX;      \
	MOVQ  nb+32(FP), CX;     \
	MOVQ  y+48(FP), DX;      \
	LEAQ  (CX*4), R10;       \
	MOVQ  R10, 0(SP);        \
	IMULQ rows+40(FP), R10;  \
	MOVQ  R10, 16(SP);       \
	MOVQ  ldy+56(FP), R10;   \
	SHLQ  $2, R10;           \
	MOVQ  R10, 8(SP);        \
	VPXORD Z26, Z26, Z26;    \
	MOVQ  DX, R12;           \
	MOVQ  rows+40(FP), R10;  \
ZERO:;                       \
	VMOVUPS Z26, (R12);      \
	ADDQ    8(SP), R12;      \
	DECQ    R10;             \
	JNZ     ZERO

// Q4MV16BODY(LOOP, PF): q4mv16ILAVX512 (LOOP its label) with the
// prefetch instruction PF.
#define Q4MV16BODY(LOOP, PF) \
	MOVQ x+0(FP), SI;        \
	MOVQ dx+8(FP), DI;       \
	MOVQ sx+16(FP), R11;     \
	MOVQ w+24(FP), AX;       \
	MOVQ nb+32(FP), CX;      \
	MOVL $0x0f, R10;         \
	VPBROADCASTB R10, Z25;   \
	VPXORD Z14, Z14, Z14;    \
	XORQ   R10, R10;         \
LOOP:;                       \
	PF 4608(AX);             \
	PF 4672(AX);             \
	PF 4736(AX);             \
	PF 4800(AX);             \
	PF 4864(AX);             \
	IL16Q4LOAD(0);           \
	IL16DOT(3, Z0);          \
	VADDPS Z0, Z14, Z14;     \
	ADDQ   $32, SI;          \
	ADDQ   $4, DI;           \
	ADDQ   $4, R11;          \
	ADDQ   $288, AX;         \
	DECQ   CX;               \
	JNZ    LOOP;             \
	MOVQ    y+40(FP), DX;    \
	VMOVUPS Z14, (DX);       \
	VZEROUPPER;              \
	RET

// func q8mv16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, nb int, y *float32)
//
// y[r] = dot(x, row r) for the 16 rows of the Q8_0 Interleaved16 group at
// w (nb >= 1 blocks of 544 bytes).
TEXT ·q8mv16ILAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ sx+16(FP), R11
	MOVQ w+24(FP), AX
	MOVQ nb+32(FP), CX
	MOVL $0x80, R10
	VPBROADCASTB R10, Z25
	VPXORD Z14, Z14, Z14 // acc
	XORQ   R10, R10      // IL16DOT's row offset: row 0 only

q8mv16ILloop:
	PREFETCHT0 1088(AX)
	PREFETCHT0 1152(AX)
	PREFETCHT0 1216(AX)
	PREFETCHT0 1280(AX)
	PREFETCHT0 1344(AX)
	PREFETCHT0 1408(AX)
	PREFETCHT0 1472(AX)
	PREFETCHT0 1536(AX)
	PREFETCHT0 1600(AX)
	IL16Q8LOAD(0)
	IL16DOT(7, Z0)
	VADDPS Z0, Z14, Z14
	ADDQ   $32, SI
	ADDQ   $4, DI
	ADDQ   $4, R11
	ADDQ   $544, AX
	DECQ   CX
	JNZ    q8mv16ILloop

	MOVQ    y+40(FP), DX
	VMOVUPS Z14, (DX)
	VZEROUPPER
	RET

// func q4mv16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, nb int, y *float32)
//
// y[r] = dot(x, row r) for the 16 rows of the Q4_0 Interleaved16 group at
// w (nb >= 1 blocks of 288 bytes). It prefetches 16 blocks (4.5 KiB)
// ahead: at 2 blocks a decode step streamed about a sixth slower
// (BenchmarkDecodeLayers). The accumulator is Z14; IL16DOT's row offset
// R10 is 0 (row 0 only).
TEXT ·q4mv16ILAVX512(SB), NOSPLIT, $0-48
	Q4MV16BODY(q4mv16ILloop, PREFETCHT0)

// func q4mv16ILAVX512L2(x *int8, dx *float32, sx *int32, w *byte, nb int, y *float32)
//
// q4mv16ILAVX512 prefetching into L2 (PREFETCHT1; cpuid.L2Prefetch picks
// it): on the Intel Xeon kind a cold decode step's q4_0 matrices streamed
// at 17.3-17.8 GB/s with T0 and 25.9-26.7 with T1 (BenchmarkDecodeLayers,
// 1.5 GiB of layers, 2 cores).
TEXT ·q4mv16ILAVX512L2(SB), NOSPLIT, $0-48
	Q4MV16BODY(q4mv16ILloop2, PREFETCHT1)

// func q8mm16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, nb, rows int, y *float32, ldy int)
//
// For r < rows, c < 16: y[r*ldy + c] = dot(activation row r, row c of the
// Q8_0 Interleaved16 group at w), activation row r at x + r*32*nb (scales
// dx + r*nb, sums sx + r*nb), nb >= 1, rows >= 1.
TEXT ·q8mm16ILAVX512(SB), NOSPLIT, $24-64
	IL16PROLOGUE(q8mm16ILzero)
	MOVL $0x80, R10
	VPBROADCASTB R10, Z25

q8mm16ILblock:
	IL16Q8LOAD(0)
	PREFETCHT0 1088(AX)
	PREFETCHT0 1152(AX)
	PREFETCHT0 1216(AX)
	PREFETCHT0 1280(AX)
	PREFETCHT0 1344(AX)
	PREFETCHT0 1408(AX)
	PREFETCHT0 1472(AX)
	PREFETCHT0 1536(AX)
	PREFETCHT0 1600(AX)
	IL16ROWS(q8mm16ILrow, 7)
	ADDQ $544, AX
	ADDQ $32, SI
	ADDQ $4, DI
	ADDQ $4, R11
	DECQ CX
	JNZ  q8mm16ILblock

	VZEROUPPER
	RET

// func q4mm16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, nb, rows int, y *float32, ldy int)
//
// As q8mm16ILAVX512 for a Q4_0 Interleaved16 group (blocks of 288 bytes).
TEXT ·q4mm16ILAVX512(SB), NOSPLIT, $24-64
	IL16PROLOGUE(q4mm16ILzero)
	MOVL $0x0f, R10
	VPBROADCASTB R10, Z25

q4mm16ILblock:
	IL16Q4LOAD(0)
	PREFETCHT0 576(AX)
	PREFETCHT0 640(AX)
	PREFETCHT0 704(AX)
	PREFETCHT0 768(AX)
	PREFETCHT0 832(AX)
	IL16ROWS(q4mm16ILrow, 3)
	ADDQ $288, AX
	ADDQ $32, SI
	ADDQ $4, DI
	ADDQ $4, R11
	DECQ CX
	JNZ  q4mm16ILblock

	VZEROUPPER
	RET
