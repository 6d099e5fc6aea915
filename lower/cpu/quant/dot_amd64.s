//go:build !purego

#include "textflag.h"

// Every kernel computes, per output lane, the canonical order of the
// package documentation: for each block b in increasing order, the exact
// int32 block sum isum, then acc = acc + float32(isum) * (dw * dx) with one
// float32 rounding per operation (VMULPS/VADDPS, no FMA).
//
// One 8-lane vector holds 8 outputs (a matvec tile: 8 weight rows; a 2x4
// tile: lanes 0..3 activation row 0, lanes 4..7 row 1, times 4 weight
// rows). Per block, each output's partial sums are reduced to its lane by
// a VPHADDD tree (Q4_0: a VPHADDW tree on the int16 products, which cannot
// overflow: |sum of 16 products| <= 16*15*128 < 2^15, then one VPMADDWD)
// and a final add of the 128-bit halves. Integer sums are exact, so the
// tree's order does not matter and the result equals the portable code's.
//
// The loops run two blocks per iteration (one software prefetch of the
// next weight rows per iteration) plus one tail block.

// nibMask: 32 bytes of 0x0F. nibShift: dword shift counts 0 (low half:
// low nibbles = elements 0..15) and 4 (high half: elements 16..31).
DATA nibMask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibMask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibMask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibMask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibMask<>(SB), RODATA|NOPTR, $32

DATA nibShift<>+0(SB)/8, $0
DATA nibShift<>+8(SB)/8, $0
DATA nibShift<>+16(SB)/8, $0x0000000400000004
DATA nibShift<>+24(SB)/8, $0x0000000400000004
GLOBL nibShift<>(SB), RODATA|NOPTR, $32

// HALVES(A, B, T): A = [A.lo + A.hi, B.hi + B.lo] (int32); clobbers B, T.
#define HALVES(A, B, T) \
	VPBLENDD   $0xF0, B, A, T; \
	VPERM2I128 $0x21, B, A, B; \
	VPADDD     B, T, A

// Q8PART(W, X, D, T): D = 8 int32 partial sums of the block_q8_0 quants at
// W (memory) times the 32 int8 activations in X (ggml's sign trick:
// |w| * sign(x, w); exact: |pair| <= 2*128*127 < 2^15). Y15 = int16 ones.
#define Q8PART(W, X, D, T) \
	VMOVDQU    W, T;    \
	VPABSB     T, D;    \
	VPSIGNB    T, X, T; \
	VPMADDUBSW T, D, D; \
	VPMADDWD   Y15, D, D

// Q4UNPACK(W, D): D = the 32 nibbles (0..15, in element order) of the
// block_q4_0 quants at W. Y12 = nibShift, Y13 = nibMask.
#define Q4UNPACK(W, D) \
	VBROADCASTI128 W, D;      \
	VPSRLVD        Y12, D, D; \
	VPAND          Y13, D, D

// Q4PART(W, X, D): D = 16 int16 pair sums of the nibbles at W times the
// int8 activations in X (|pair| <= 2*15*128).
#define Q4PART(W, X, D) \
	Q4UNPACK(W, D); \
	VPMADDUBSW X, D, D

// SCALES8(X): X = the 8 fp16 scales of the current block of the 8 rows at
// AX + r*BX (R8 = row 4, R9 = 3*BX), packed with integer ops (off the
// vector pipes). Clobbers R10, R12.
#define SCALES8(X) \
	MOVWQZX (AX), R10;       \
	MOVWQZX (AX)(BX*1), R12; \
	SHLQ    $16, R12;        \
	ORQ     R12, R10;        \
	MOVWQZX (AX)(BX*2), R12; \
	SHLQ    $32, R12;        \
	ORQ     R12, R10;        \
	MOVWQZX (AX)(R9*1), R12; \
	SHLQ    $48, R12;        \
	ORQ     R12, R10;        \
	VMOVQ   R10, X;          \
	MOVWQZX (R8), R10;       \
	MOVWQZX (R8)(BX*1), R12; \
	SHLQ    $16, R12;        \
	ORQ     R12, R10;        \
	MOVWQZX (R8)(BX*2), R12; \
	SHLQ    $32, R12;        \
	ORQ     R12, R10;        \
	MOVWQZX (R8)(R9*1), R12; \
	SHLQ    $48, R12;        \
	ORQ     R12, R10;        \
	VPINSRQ $1, R10, X, X

// SCALES4(X): X = the 4 fp16 scales of the current block of the 4 rows at
// AX + c*BX (R9 = 3*BX), in its low 64 bits. Clobbers R10, R12.
#define SCALES4(X) \
	MOVWQZX (AX), R10;       \
	MOVWQZX (AX)(BX*1), R12; \
	SHLQ    $16, R12;        \
	ORQ     R12, R10;        \
	MOVWQZX (AX)(BX*2), R12; \
	SHLQ    $32, R12;        \
	ORQ     R12, R10;        \
	MOVWQZX (AX)(R9*1), R12; \
	SHLQ    $48, R12;        \
	ORQ     R12, R10;        \
	VMOVQ   R10, X

// PREFETCH8: the current block of the NEXT 8-row tile (R13 = row 8,
// R14 = row 12), so that a tile's rows are in flight while the previous
// tile is computed.
#define PREFETCH8 \
	PREFETCHT0 (R13);       \
	PREFETCHT0 (R13)(BX*1); \
	PREFETCHT0 (R13)(BX*2); \
	PREFETCHT0 (R13)(R9*1); \
	PREFETCHT0 (R14);       \
	PREFETCHT0 (R14)(BX*1); \
	PREFETCHT0 (R14)(BX*2); \
	PREFETCHT0 (R14)(R9*1)

// PREFETCH4: the current block of the next 4-row group (R13 = row 4).
#define PREFETCH4 \
	PREFETCHT0 (R13);       \
	PREFETCHT0 (R13)(BX*1); \
	PREFETCHT0 (R13)(BX*2); \
	PREFETCHT0 (R13)(R9*1)

// ACCUM8(S, T): Y14 += float(Y0) * (Y5 * broadcast(dx at DI)), where Y0
// holds the 8 block sums and X5 the 8 fp16 weight scales.
#define ACCUM8 \
	VCVTPH2PS    X5, Y5;     \
	VBROADCASTSS (DI), Y6;   \
	VMULPS       Y6, Y5, Y5; \
	VCVTDQ2PS    Y0, Y0;     \
	VMULPS       Y5, Y0, Y0; \
	VADDPS       Y0, Y14, Y14

// ACCUM24: Y14 += float(Y0) * ([dw0..dw3, dw0..dw3] * [dx0 x4, dx1 x4]),
// X5 = the 4 fp16 weight scales, dx0 at DI, dx1 at DI + R11.
#define ACCUM24 \
	VCVTPH2PS    X5, X5;           \
	VINSERTF128  $1, X5, Y5, Y5;   \
	VBROADCASTSS (DI), Y6;         \
	VBROADCASTSS (DI)(R11*1), Y7;  \
	VBLENDPS     $0xF0, Y7, Y6, Y6; \
	VMULPS       Y6, Y5, Y5;       \
	VCVTDQ2PS    Y0, Y0;           \
	VMULPS       Y5, Y0, Y0;       \
	VADDPS       Y0, Y14, Y14

// Q8MV8BLOCK: one block of a Q8_0 matvec tile.
#define Q8MV8BLOCK \
	VMOVDQU (SI), Y13;                  \
	Q8PART(2(AX), Y13, Y0, Y12);        \
	Q8PART(2(AX)(BX*1), Y13, Y1, Y12);  \
	VPHADDD Y1, Y0, Y0;                 \
	Q8PART(2(AX)(BX*2), Y13, Y2, Y12);  \
	Q8PART(2(AX)(R9*1), Y13, Y3, Y12);  \
	VPHADDD Y3, Y2, Y2;                 \
	VPHADDD Y2, Y0, Y0;                 \
	Q8PART(2(R8), Y13, Y4, Y12);        \
	Q8PART(2(R8)(BX*1), Y13, Y1, Y12);  \
	VPHADDD Y1, Y4, Y4;                 \
	Q8PART(2(R8)(BX*2), Y13, Y2, Y12);  \
	Q8PART(2(R8)(R9*1), Y13, Y3, Y12);  \
	VPHADDD Y3, Y2, Y2;                 \
	VPHADDD Y2, Y4, Y4;                 \
	HALVES(Y0, Y4, Y12);                \
	SCALES8(X5);                        \
	ACCUM8;                             \
	ADDQ $32, SI;                       \
	ADDQ $4, DI;                        \
	ADDQ $34, AX;                       \
	ADDQ $34, R8

// Q4MV8BLOCK: one block of a Q4_0 matvec tile (sx at R11).
#define Q4MV8BLOCK \
	VMOVDQU (SI), Y9;             \
	Q4PART(2(AX), Y9, Y0);        \
	Q4PART(2(AX)(BX*1), Y9, Y1);  \
	VPHADDW Y1, Y0, Y0;           \
	Q4PART(2(AX)(BX*2), Y9, Y2);  \
	Q4PART(2(AX)(R9*1), Y9, Y3);  \
	VPHADDW Y3, Y2, Y2;           \
	VPHADDW Y2, Y0, Y0;           \
	VPMADDWD Y15, Y0, Y0;         \
	Q4PART(2(R8), Y9, Y4);        \
	Q4PART(2(R8)(BX*1), Y9, Y1);  \
	VPHADDW Y1, Y4, Y4;           \
	Q4PART(2(R8)(BX*2), Y9, Y2);  \
	Q4PART(2(R8)(R9*1), Y9, Y3);  \
	VPHADDW Y3, Y2, Y2;           \
	VPHADDW Y2, Y4, Y4;           \
	VPMADDWD Y15, Y4, Y4;         \
	HALVES(Y0, Y4, Y8);           \
	VPBROADCASTD (R11), Y1;       \
	VPSLLD $3, Y1, Y1;            \
	VPSUBD Y1, Y0, Y0;            \
	SCALES8(X5);                  \
	ACCUM8;                       \
	ADDQ $32, SI;                 \
	ADDQ $4, DI;                  \
	ADDQ $4, R11;                 \
	ADDQ $18, AX;                 \
	ADDQ $18, R8

// Q8MM24BLOCK: one block of a Q8_0 2x4 tile (activation row 1 at
// SI + 8*R11, its scale at DI + R11).
#define Q8MM24BLOCK \
	VMOVDQU    2(AX), Y8;         \
	VMOVDQU    2(AX)(BX*1), Y9;   \
	VMOVDQU    2(AX)(BX*2), Y10;  \
	VMOVDQU    2(AX)(R9*1), Y11;  \
	VMOVDQU    (SI), Y12;         \
	VPSIGNB    Y8, Y12, Y0;       \
	VPSIGNB    Y9, Y12, Y1;       \
	VPSIGNB    Y10, Y12, Y2;      \
	VPSIGNB    Y11, Y12, Y3;      \
	VMOVDQU    (SI)(R11*8), Y12;  \
	VPSIGNB    Y8, Y12, Y4;       \
	VPSIGNB    Y9, Y12, Y5;       \
	VPSIGNB    Y10, Y12, Y6;      \
	VPSIGNB    Y11, Y12, Y7;      \
	VPABSB     Y8, Y8;            \
	VPABSB     Y9, Y9;            \
	VPABSB     Y10, Y10;          \
	VPABSB     Y11, Y11;          \
	VPMADDUBSW Y0, Y8, Y0;        \
	VPMADDUBSW Y1, Y9, Y1;        \
	VPMADDUBSW Y2, Y10, Y2;       \
	VPMADDUBSW Y3, Y11, Y3;       \
	VPMADDUBSW Y4, Y8, Y4;        \
	VPMADDUBSW Y5, Y9, Y5;        \
	VPMADDUBSW Y6, Y10, Y6;       \
	VPMADDUBSW Y7, Y11, Y7;       \
	VPMADDWD   Y15, Y0, Y0;       \
	VPMADDWD   Y15, Y1, Y1;       \
	VPMADDWD   Y15, Y2, Y2;       \
	VPMADDWD   Y15, Y3, Y3;       \
	VPMADDWD   Y15, Y4, Y4;       \
	VPMADDWD   Y15, Y5, Y5;       \
	VPMADDWD   Y15, Y6, Y6;       \
	VPMADDWD   Y15, Y7, Y7;       \
	VPHADDD    Y1, Y0, Y0;        \
	VPHADDD    Y3, Y2, Y2;        \
	VPHADDD    Y2, Y0, Y0;        \
	VPHADDD    Y5, Y4, Y4;        \
	VPHADDD    Y7, Y6, Y6;        \
	VPHADDD    Y6, Y4, Y4;        \
	HALVES(Y0, Y4, Y1);           \
	SCALES4(X5);                  \
	ACCUM24;                      \
	ADDQ $32, SI;                 \
	ADDQ $4, DI;                  \
	ADDQ $34, AX

// Q4MM24BLOCK: one block of a Q4_0 2x4 tile (sx at R14).
#define Q4MM24BLOCK \
	Q4UNPACK(2(AX), Y8);          \
	Q4UNPACK(2(AX)(BX*1), Y9);    \
	Q4UNPACK(2(AX)(BX*2), Y10);   \
	Q4UNPACK(2(AX)(R9*1), Y11);   \
	VMOVDQU    (SI), Y4;          \
	VPMADDUBSW Y4, Y8, Y0;        \
	VPMADDUBSW Y4, Y9, Y1;        \
	VPHADDW    Y1, Y0, Y0;        \
	VPMADDUBSW Y4, Y10, Y1;       \
	VPMADDUBSW Y4, Y11, Y2;       \
	VPHADDW    Y2, Y1, Y1;        \
	VPHADDW    Y1, Y0, Y0;        \
	VPMADDWD   Y15, Y0, Y0;       \
	VMOVDQU    (SI)(R11*8), Y4;   \
	VPMADDUBSW Y4, Y8, Y1;        \
	VPMADDUBSW Y4, Y9, Y2;        \
	VPHADDW    Y2, Y1, Y1;        \
	VPMADDUBSW Y4, Y10, Y2;       \
	VPMADDUBSW Y4, Y11, Y3;       \
	VPHADDW    Y3, Y2, Y2;        \
	VPHADDW    Y2, Y1, Y1;        \
	VPMADDWD   Y15, Y1, Y1;       \
	HALVES(Y0, Y1, Y2);           \
	VPBROADCASTD (R14), Y1;       \
	VPBROADCASTD (R14)(R11*1), Y2; \
	VPBLENDD     $0xF0, Y2, Y1, Y1; \
	VPSLLD       $3, Y1, Y1;      \
	VPSUBD       Y1, Y0, Y0;      \
	SCALES4(X5);                  \
	ACCUM24;                      \
	ADDQ $32, SI;                 \
	ADDQ $4, DI;                  \
	ADDQ $4, R14;                 \
	ADDQ $18, AX

// func q8mv8AVX2(x *int8, dx *float32, w *byte, ldw, nb int, y *float32)
//
// y[r] = dot(x, row r) for the 8 block_q8_0 rows at w + r*ldw, nb >= 1.
TEXT ·q8mv8AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ w+16(FP), AX
	MOVQ ldw+24(FP), BX
	MOVQ nb+32(FP), CX
	LEAQ (BX)(BX*2), R9  // 3*ldw
	LEAQ (AX)(BX*4), R8  // row 4
	LEAQ (AX)(BX*8), R13 // row 8 (prefetch)
	LEAQ (R8)(BX*8), R14 // row 12 (prefetch)
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // int16 ones
	VXORPS   Y14, Y14, Y14 // acc
	MOVQ     CX, DX
	SHRQ     $1, DX
	JZ       q8mv8tail

q8mv8loop:
	// One prefetch per block (34 bytes): one per two blocks (68 bytes)
	// missed a 64-byte line of every row in 17.
	PREFETCH8
	ADDQ $34, R13
	ADDQ $34, R14
	Q8MV8BLOCK
	PREFETCH8
	ADDQ $34, R13
	ADDQ $34, R14
	Q8MV8BLOCK
	DECQ DX
	JNZ  q8mv8loop

q8mv8tail:
	TESTQ $1, CX
	JZ    q8mv8done
	Q8MV8BLOCK

q8mv8done:
	MOVQ    y+40(FP), DX
	VMOVUPS Y14, (DX)
	VZEROUPPER
	RET

// func q4mv8AVX2(x *int8, dx *float32, sx *int32, w *byte, ldw, nb int, y *float32)
//
// y[r] = dot(x, row r) for the 8 block_q4_0 rows at w + r*ldw, nb >= 1:
// isum = sum(nibble * x) - 8 * sx[b].
TEXT ·q4mv8AVX2(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ sx+16(FP), R11
	MOVQ w+24(FP), AX
	MOVQ ldw+32(FP), BX
	MOVQ nb+40(FP), CX
	LEAQ (BX)(BX*2), R9  // 3*ldw
	LEAQ (AX)(BX*4), R8  // row 4
	LEAQ (AX)(BX*8), R13 // row 8 (prefetch)
	LEAQ (R8)(BX*8), R14 // row 12 (prefetch)
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // int16 ones
	VXORPS   Y14, Y14, Y14 // acc
	VMOVDQU  nibMask<>(SB), Y13
	VMOVDQU  nibShift<>(SB), Y12
	MOVQ     CX, DX
	SHRQ     $1, DX
	JZ       q4mv8tail

q4mv8loop:
	PREFETCH8
	ADDQ $36, R13
	ADDQ $36, R14
	Q4MV8BLOCK
	Q4MV8BLOCK
	DECQ DX
	JNZ  q4mv8loop

q4mv8tail:
	TESTQ $1, CX
	JZ    q4mv8done
	Q4MV8BLOCK

q4mv8done:
	MOVQ    y+48(FP), DX
	VMOVUPS Y14, (DX)
	VZEROUPPER
	RET

// func q8mm24AVX2(x *int8, dx *float32, w *byte, ldw, nb int, y *float32, ldy int)
//
// For r < 2, c < 4: y[r*ldy + c] = dot(activation row r, weight row c),
// activation row r at x + r*32*nb (scales dx + r*nb), weight row c the
// block_q8_0 row at w + c*ldw, nb >= 1.
TEXT ·q8mm24AVX2(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ w+16(FP), AX
	MOVQ ldw+24(FP), BX
	MOVQ nb+32(FP), CX
	LEAQ (BX)(BX*2), R9  // 3*ldw
	LEAQ (AX)(BX*4), R13 // next 4-row group (prefetch)
	LEAQ (CX*4), R11     // 4*nb: row 1 of dx at (DI)(R11*1), of x at (SI)(R11*8)
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // int16 ones
	VXORPS   Y14, Y14, Y14 // acc
	MOVQ     CX, DX
	SHRQ     $1, DX
	JZ       q8mm24tail

q8mm24loop:
	PREFETCH4
	ADDQ $68, R13
	Q8MM24BLOCK
	Q8MM24BLOCK
	DECQ DX
	JNZ  q8mm24loop

q8mm24tail:
	TESTQ $1, CX
	JZ    q8mm24done
	Q8MM24BLOCK

q8mm24done:
	MOVQ         y+40(FP), DX
	MOVQ         ldy+48(FP), R11
	VMOVUPS      X14, (DX)
	VEXTRACTF128 $1, Y14, X14
	VMOVUPS      X14, (DX)(R11*4)
	VZEROUPPER
	RET

// func q4mm24AVX2(x *int8, dx *float32, sx *int32, w *byte, ldw, nb int, y *float32, ldy int)
//
// q8mm24AVX2 for block_q4_0 weights (isum = sum(nibble * x) - 8 * sx).
TEXT ·q4mm24AVX2(SB), NOSPLIT, $0-64
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ sx+16(FP), R14
	MOVQ w+24(FP), AX
	MOVQ ldw+32(FP), BX
	MOVQ nb+40(FP), CX
	LEAQ (BX)(BX*2), R9  // 3*ldw
	LEAQ (AX)(BX*4), R13 // next 4-row group (prefetch)
	LEAQ (CX*4), R11     // 4*nb
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // int16 ones
	VXORPS   Y14, Y14, Y14 // acc
	VMOVDQU  nibMask<>(SB), Y13
	VMOVDQU  nibShift<>(SB), Y12
	MOVQ     CX, DX
	SHRQ     $1, DX
	JZ       q4mm24tail

q4mm24loop:
	PREFETCH4
	ADDQ $36, R13
	Q4MM24BLOCK
	Q4MM24BLOCK
	DECQ DX
	JNZ  q4mm24loop

q4mm24tail:
	TESTQ $1, CX
	JZ    q4mm24done
	Q4MM24BLOCK

q4mm24done:
	MOVQ         y+48(FP), DX
	MOVQ         ldy+56(FP), R11
	VMOVUPS      X14, (DX)
	VEXTRACTF128 $1, Y14, X14
	VMOVUPS      X14, (DX)(R11*4)
	VZEROUPPER
	RET
