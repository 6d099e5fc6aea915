//go:build !purego

#include "textflag.h"

// The Q4_K matvec kernel: 8 block_q4_K weight rows (lanes 0..7) times one
// row of q8_0 activations, in the canonical order of dotQ4KGo. Per
// super-block the 16-byte headers of the 8 rows (d, dmin, 12 bytes of
// packed scales) are transposed so that each dword lane holds one row's,
// the 6-bit scales and mins are unpacked lane-parallel, and the per-lane
// d1 = fl(d*sc_j) and m1 = fl(dmin*m_j) of the 8 sub-blocks go to the
// stack frame (d1 at 32j, m1 at 256+32j). Each sub-block's exact int32
// sums are reduced to their lanes by the VPHADDW tree of the Q4_0 kernel
// (|sum of 8 products| <= 8*15*127 < 2^15), then
// acc += fl(isum*fl(d1*dx)) - fl(sx*fl(m1*dx)), one rounding per op.

// k4m3f, k4m03: bytes of 0x3F and 0x03. k4dm: per 128-bit lane, the
// fp16 d of four dword lanes then their fp16 dmin. k4b0..k4b3 (k4byte +
// 32i): byte i of every dword, zero-extended.
DATA k4m3f<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k4m3f<>+8(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k4m3f<>+16(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k4m3f<>+24(SB)/8, $0x3f3f3f3f3f3f3f3f
GLOBL k4m3f<>(SB), RODATA|NOPTR, $32

DATA k4m03<>+0(SB)/8, $0x0303030303030303
DATA k4m03<>+8(SB)/8, $0x0303030303030303
DATA k4m03<>+16(SB)/8, $0x0303030303030303
DATA k4m03<>+24(SB)/8, $0x0303030303030303
GLOBL k4m03<>(SB), RODATA|NOPTR, $32

DATA k4m0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA k4m0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA k4m0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA k4m0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL k4m0f<>(SB), RODATA|NOPTR, $32

DATA k4dm<>+0(SB)/8, $0x0d0c090805040100
DATA k4dm<>+8(SB)/8, $0x0f0e0b0a07060302
DATA k4dm<>+16(SB)/8, $0x0d0c090805040100
DATA k4dm<>+24(SB)/8, $0x0f0e0b0a07060302
GLOBL k4dm<>(SB), RODATA|NOPTR, $32

DATA k4byte<>+0(SB)/8, $0x8080800480808000
DATA k4byte<>+8(SB)/8, $0x8080800c80808008
DATA k4byte<>+16(SB)/8, $0x8080800480808000
DATA k4byte<>+24(SB)/8, $0x8080800c80808008
DATA k4byte<>+32(SB)/8, $0x8080800580808001
DATA k4byte<>+40(SB)/8, $0x8080800d80808009
DATA k4byte<>+48(SB)/8, $0x8080800580808001
DATA k4byte<>+56(SB)/8, $0x8080800d80808009
DATA k4byte<>+64(SB)/8, $0x8080800680808002
DATA k4byte<>+72(SB)/8, $0x8080800e8080800a
DATA k4byte<>+80(SB)/8, $0x8080800680808002
DATA k4byte<>+88(SB)/8, $0x8080800e8080800a
DATA k4byte<>+96(SB)/8, $0x8080800780808003
DATA k4byte<>+104(SB)/8, $0x8080800f8080800b
DATA k4byte<>+112(SB)/8, $0x8080800780808003
DATA k4byte<>+120(SB)/8, $0x8080800f8080800b
GLOBL k4byte<>(SB), RODATA|NOPTR, $128

// K4HALVES(A, B, T): A = [A.lo + A.hi, B.hi + B.lo] (int32); clobbers B, T.
#define K4HALVES(A, B, T) \
	VPBLENDD   $0xF0, B, A, T; \
	VPERM2I128 $0x21, B, A, B; \
	VPADDD     B, T, A

// K4SC(SRC, MUL, BOFF, OFF): OFF(SP) = fl(MUL * float(byte BOFF/32 of
// each dword of SRC)). Clobbers Y10.
#define K4SC(SRC, MUL, BOFF, OFF) \
	VPSHUFB   k4byte<>+BOFF(SB), SRC, Y10; \
	VCVTDQ2PS Y10, Y10;                    \
	VMULPS    MUL, Y10, Y10;               \
	VMOVUPS   Y10, OFF(SP)

// K4HEAD: the d1 and m1 of the 8 sub-blocks of the current super-block
// of the 8 rows at AX + r*BX (R8 = row 4, R9 = 3*BX) into the frame.
// Clobbers Y0-Y10.
#define K4HEAD \
	VMOVDQU     (AX), X0;                \
	VINSERTI128 $1, (R8), Y0, Y0;        \
	VMOVDQU     (AX)(BX*1), X1;          \
	VINSERTI128 $1, (R8)(BX*1), Y1, Y1;  \
	VMOVDQU     (AX)(BX*2), X2;          \
	VINSERTI128 $1, (R8)(BX*2), Y2, Y2;  \
	VMOVDQU     (AX)(R9*1), X3;          \
	VINSERTI128 $1, (R8)(R9*1), Y3, Y3;  \
	VPUNPCKLDQ  Y1, Y0, Y4;              \
	VPUNPCKLDQ  Y3, Y2, Y5;              \
	VPUNPCKHDQ  Y1, Y0, Y6;              \
	VPUNPCKHDQ  Y3, Y2, Y7;              \
	VPUNPCKLQDQ Y5, Y4, Y0;              \
	VPUNPCKHQDQ Y5, Y4, Y1;              \
	VPUNPCKLQDQ Y7, Y6, Y2;              \
	VPUNPCKHQDQ Y7, Y6, Y3;              \
	K4UNPACK

// K4UNPACK: the d1 and m1 of the 8 sub-blocks into the frame from the 8
// rows' header dwords, dword k of every row in Yk (k < 4). Clobbers
// Y0-Y10.
#define K4UNPACK \
	VPSHUFB     k4dm<>(SB), Y0, Y0;      \
	VPERMQ      $0xD8, Y0, Y0;           \
	VCVTPH2PS   X0, Y4;                  \
	VEXTRACTI128 $1, Y0, X0;             \
	VCVTPH2PS   X0, Y5;                  \
	VPAND       k4m3f<>(SB), Y1, Y6;     \
	VPAND       k4m3f<>(SB), Y2, Y7;     \
	VPAND       Y13, Y3, Y8;             \
	VPSRLD      $6, Y1, Y9;              \
	VPAND       k4m03<>(SB), Y9, Y9;     \
	VPSLLD      $4, Y9, Y9;              \
	VPOR        Y9, Y8, Y8;              \
	VPSRLD      $4, Y3, Y9;              \
	VPAND       Y13, Y9, Y9;             \
	VPSRLD      $6, Y2, Y10;             \
	VPAND       k4m03<>(SB), Y10, Y10;   \
	VPSLLD      $4, Y10, Y10;            \
	VPOR        Y10, Y9, Y9;             \
	K4SC(Y6, Y4, 0, 0);                  \
	K4SC(Y6, Y4, 32, 32);                \
	K4SC(Y6, Y4, 64, 64);                \
	K4SC(Y6, Y4, 96, 96);                \
	K4SC(Y8, Y4, 0, 128);                \
	K4SC(Y8, Y4, 32, 160);               \
	K4SC(Y8, Y4, 64, 192);               \
	K4SC(Y8, Y4, 96, 224);               \
	K4SC(Y7, Y5, 0, 256);                \
	K4SC(Y7, Y5, 32, 288);               \
	K4SC(Y7, Y5, 64, 320);               \
	K4SC(Y7, Y5, 96, 352);               \
	K4SC(Y9, Y5, 0, 384);                \
	K4SC(Y9, Y5, 32, 416);               \
	K4SC(Y9, Y5, 64, 448);               \
	K4SC(Y9, Y5, 96, 480)

// K4LO(W, D) / K4HI(W, D): D = 16 int16 pair sums of the low / high
// nibbles of the 32 bytes at W times the activations in Y9.
#define K4LO(W, D) \
	VPAND      W, Y13, D; \
	VPMADDUBSW Y9, D, D

#define K4HI(W, D) \
	VMOVDQU    W, D;     \
	VPSRLW     $4, D, D; \
	VPAND      Y13, D, D; \
	VPMADDUBSW Y9, D, D

// K4FLOAT(SOFF, MOFF, DXS, SXS, ACC): ACC += fl(isum*fl(d1*dx)) -
// fl(sx*fl(m1*dx)) with the 8 sums in Y0, d1 at SOFF(SP), m1 at MOFF(SP),
// dx at DXS, sx at SXS. Clobbers Y0-Y3.
#define K4FLOAT(SOFF, MOFF, DXS, SXS, ACC) \
	VBROADCASTSS DXS, Y1;          \
	VMULPS       SOFF(SP), Y1, Y2; \
	VMULPS       MOFF(SP), Y1, Y1; \
	VCVTDQ2PS    Y0, Y0;           \
	VMULPS       Y2, Y0, Y0;       \
	VPBROADCASTD SXS, Y3;          \
	VCVTDQ2PS    Y3, Y3;           \
	VMULPS       Y1, Y3, Y3;       \
	VSUBPS       Y3, Y0, Y0;       \
	VADDPS       Y0, ACC, ACC

// K4NEXT: the activation pointers advance one block.
#define K4NEXT \
	ADDQ $32, SI; \
	ADDQ $4, DI;  \
	ADDQ $4, R11

// K4INTLO(QOFF, XS) / K4INTHI: Y0 = the 8 rows' exact sums of one
// sub-block (the low / high nibbles of the 32 quant bytes at QOFF in each
// row's super-block) times the 32 activations at XS.
#define K4INTLO(QOFF, XS) \
	VMOVDQU XS, Y9;                \
	K4LO(QOFF(AX), Y0);            \
	K4LO(QOFF(AX)(BX*1), Y1);      \
	VPHADDW Y1, Y0, Y0;            \
	K4LO(QOFF(AX)(BX*2), Y2);      \
	K4LO(QOFF(AX)(R9*1), Y3);      \
	VPHADDW Y3, Y2, Y2;            \
	VPHADDW Y2, Y0, Y0;            \
	VPMADDWD Y15, Y0, Y0;          \
	K4LO(QOFF(R8), Y4);            \
	K4LO(QOFF(R8)(BX*1), Y1);      \
	VPHADDW Y1, Y4, Y4;            \
	K4LO(QOFF(R8)(BX*2), Y2);      \
	K4LO(QOFF(R8)(R9*1), Y3);      \
	VPHADDW Y3, Y2, Y2;            \
	VPHADDW Y2, Y4, Y4;            \
	VPMADDWD Y15, Y4, Y4;          \
	K4HALVES(Y0, Y4, Y8)

#define K4INTHI(QOFF, XS) \
	VMOVDQU XS, Y9;                \
	K4HI(QOFF(AX), Y0);            \
	K4HI(QOFF(AX)(BX*1), Y1);      \
	VPHADDW Y1, Y0, Y0;            \
	K4HI(QOFF(AX)(BX*2), Y2);      \
	K4HI(QOFF(AX)(R9*1), Y3);      \
	VPHADDW Y3, Y2, Y2;            \
	VPHADDW Y2, Y0, Y0;            \
	VPMADDWD Y15, Y0, Y0;          \
	K4HI(QOFF(R8), Y4);            \
	K4HI(QOFF(R8)(BX*1), Y1);      \
	VPHADDW Y1, Y4, Y4;            \
	K4HI(QOFF(R8)(BX*2), Y2);      \
	K4HI(QOFF(R8)(R9*1), Y3);      \
	VPHADDW Y3, Y2, Y2;            \
	VPHADDW Y2, Y4, Y4;            \
	VPMADDWD Y15, Y4, Y4;          \
	K4HALVES(Y0, Y4, Y8)

// K4SUBLO(QOFF, SOFF, MOFF) / K4SUBHI: one sub-block of the matvec.
#define K4SUBLO(QOFF, SOFF, MOFF) \
	K4INTLO(QOFF, (SI));                     \
	K4FLOAT(SOFF, MOFF, (DI), (R11), Y14);   \
	K4NEXT

#define K4SUBHI(QOFF, SOFF, MOFF) \
	K4INTHI(QOFF, (SI));                     \
	K4FLOAT(SOFF, MOFF, (DI), (R11), Y14);   \
	K4NEXT

// K4SUB2LO(QOFF, SOFF, MOFF) / K4SUB2HI: one sub-block for two activation
// rows (row 1 at SI + R10, its scales and sums at DI + R12, R11 + R12;
// the weights come from L1 the second time).
#define K4SUB2LO(QOFF, SOFF, MOFF) \
	K4INTLO(QOFF, (SI));                                     \
	K4FLOAT(SOFF, MOFF, (DI), (R11), Y14);                   \
	K4INTLO(QOFF, (SI)(R10*1));                              \
	K4FLOAT(SOFF, MOFF, (DI)(R12*1), (R11)(R12*1), Y12);     \
	K4NEXT

#define K4SUB2HI(QOFF, SOFF, MOFF) \
	K4INTHI(QOFF, (SI));                                     \
	K4FLOAT(SOFF, MOFF, (DI), (R11), Y14);                   \
	K4INTHI(QOFF, (SI)(R10*1));                              \
	K4FLOAT(SOFF, MOFF, (DI)(R12*1), (R11)(R12*1), Y12);     \
	K4NEXT

// K4PREFETCH(OFF): line OFF of the 8 rows' super-blocks pf bytes ahead
// (R13 = row 0 + pf, R14 = row 4 + pf).
#define K4PREFETCH(OFF) \
	PREFETCHT0 OFF(R13);       \
	PREFETCHT0 OFF(R13)(BX*1); \
	PREFETCHT0 OFF(R13)(BX*2); \
	PREFETCHT0 OFF(R13)(R9*1); \
	PREFETCHT0 OFF(R14);       \
	PREFETCHT0 OFF(R14)(BX*1); \
	PREFETCHT0 OFF(R14)(BX*2); \
	PREFETCHT0 OFF(R14)(R9*1)

// The Q4_K kernel on wire.Interleaved8 groups (AVX2): 8 weight rows, one
// per dword lane, times any number of q8_0 activation rows, in the
// canonical order of dotQ4KGo. Per super-block the 8 rows' header dwords
// are loaded as they lie (pre-transposed) and K4UNPACK leaves their d1 and
// m1 in the frame. Per pair of sub-blocks (32 quant bytes a row: low
// nibbles sub-block 2c, high ones 2c+1) each 32-byte piece vector holds 4
// bytes of every row, so one VPMADDUBSW with a broadcast activation dword
// leaves each row's partial sums in its own lane (no reduction tree); the
// piece is split into nibbles once for 4 activation rows. The int16 sums
// of a sub-block (at most 16*15*127 < 2^15) are widened by VPMADDWD and
// the float part is acc = fl(acc + fl(fl(isum*fl(d1*dx)) -
// fl(sx*fl(m1*dx)))) per lane, the accumulators in the output tile
// (zeroed first), sub-blocks in order. Frame: 0..511 d1/m1 (as K4HEAD),
// 512/520/528(SP) the super-block's x, dx and sx of activation row 0.

// Q8W(Q): Y8, Y9 = the low and high nibbles of the 32 bytes at Q(AX).
#define Q8W(Q) \
	VMOVDQU Q(AX), Y9;   \
	VPAND   Y13, Y9, Y8; \
	VPSRLW  $4, Y9, Y9;  \
	VPAND   Y13, Y9, Y9

// Q8F(XL, XH, AL, AH): AL, AH = the int16 pair sums of Y8, Y9 times the
// activation dwords at XL, XH broadcast (a sub-block pair's first piece);
// Q8A adds them to AL, AH. Q8A clobbers Y10, Y11.
#define Q8F(XL, XH, AL, AH) \
	VPBROADCASTD XL, AL;     \
	VPMADDUBSW   AL, Y8, AL; \
	VPBROADCASTD XH, AH;     \
	VPMADDUBSW   AH, Y9, AH

#define Q8A(XL, XH, AL, AH) \
	VPBROADCASTD XL, Y10;      \
	VPMADDUBSW   Y10, Y8, Y10; \
	VPADDW       Y10, AL, AL;  \
	VPBROADCASTD XH, Y11;      \
	VPMADDUBSW   Y11, Y9, Y11; \
	VPADDW       Y11, AH, AH

// Q8P4(Q8X, C, P): piece P of pair C for the 4 activation rows at SI +
// r*R10 (R9 = 3*R10), accumulators Y0..Y7 (row r: Y2r low, Y2r+1 high).
#define Q8P4(Q8X, C, P) \
	Q8W(128+256*C+32*P);                                          \
	Q8X(64*C+4*P(SI), 64*C+32+4*P(SI), Y0, Y1);                   \
	Q8X(64*C+4*P(SI)(R10*1), 64*C+32+4*P(SI)(R10*1), Y2, Y3);     \
	Q8X(64*C+4*P(SI)(R10*2), 64*C+32+4*P(SI)(R10*2), Y4, Y5);     \
	Q8X(64*C+4*P(SI)(R9*1), 64*C+32+4*P(SI)(R9*1), Y6, Y7)

#define Q8P1(Q8X, C, P) \
	Q8W(128+256*C+32*P); \
	Q8X(64*C+4*P(SI), 64*C+32+4*P(SI), Y0, Y1)

// Q8FLT(AL, AH, C, DXB, SXB, YB): the y row at YB += sub-block 2C's float
// part, then 2C+1's, from their int16 sums in AL, AH; dx and sx of the
// activation row at DXB, SXB. Clobbers Y10, Y11.
#define Q8FLT(AL, AH, C, DXB, SXB, YB) \
	VPMADDWD     Y15, AL, AL;              \
	VPMADDWD     Y15, AH, AH;              \
	VBROADCASTSS 8*C DXB, Y10;             \
	VMULPS       64*C(SP), Y10, Y11;       \
	VMULPS       256+64*C(SP), Y10, Y10;   \
	VCVTDQ2PS    AL, AL;                   \
	VMULPS       Y11, AL, AL;              \
	VPBROADCASTD 8*C SXB, Y11;             \
	VCVTDQ2PS    Y11, Y11;                 \
	VMULPS       Y10, Y11, Y11;            \
	VSUBPS       Y11, AL, AL;              \
	VADDPS       YB, AL, AL;               \
	VBROADCASTSS 8*C+4 DXB, Y10;           \
	VMULPS       64*C+32(SP), Y10, Y11;    \
	VMULPS       256+64*C+32(SP), Y10, Y10; \
	VCVTDQ2PS    AH, AH;                   \
	VMULPS       Y11, AH, AH;              \
	VPBROADCASTD 8*C+4 SXB, Y11;           \
	VCVTDQ2PS    Y11, Y11;                 \
	VMULPS       Y10, Y11, Y11;            \
	VSUBPS       Y11, AH, AH;              \
	VADDPS       AH, AL, AL;               \
	VMOVUPS      AL, YB

// Q8PAIR(C, L4, L1, LE): sub-blocks 2C and 2C+1 for every activation
// row, 4 at a time, then one at a time; the lines 2 super-blocks ahead
// are prefetched, 5 a pair.
#define Q8PAIR(C, L4, L1, LE) \
	PREFETCHT0 2304+320*C(AX);         \
	PREFETCHT0 2368+320*C(AX);         \
	PREFETCHT0 2432+320*C(AX);         \
	PREFETCHT0 2496+320*C(AX);         \
	PREFETCHT0 2560+320*C(AX);         \
	MOVQ       512(SP), SI;            \
	MOVQ       520(SP), DI;            \
	MOVQ       528(SP), R11;           \
	MOVQ       y+48(FP), DX;           \
	MOVQ       rows+40(FP), R8;        \
	CMPQ       R8, $4;                 \
	JLT        L1;                     \
L4:                                    \
	Q8P4(Q8F, C, 0);                   \
	Q8P4(Q8A, C, 1);                   \
	Q8P4(Q8A, C, 2);                   \
	Q8P4(Q8A, C, 3);                   \
	Q8P4(Q8A, C, 4);                   \
	Q8P4(Q8A, C, 5);                   \
	Q8P4(Q8A, C, 6);                   \
	Q8P4(Q8A, C, 7);                   \
	Q8FLT(Y0, Y1, C, (DI), (R11), (DX));                                \
	Q8FLT(Y2, Y3, C, (DI)(R12*1), (R11)(R12*1), (DX)(BX*1));            \
	Q8FLT(Y4, Y5, C, (DI)(R12*2), (R11)(R12*2), (DX)(BX*2));            \
	Q8FLT(Y6, Y7, C, (DI)(R13*1), (R11)(R13*1), (DX)(R14*1));           \
	LEAQ       (SI)(R10*4), SI;        \
	LEAQ       (DI)(R12*4), DI;        \
	LEAQ       (R11)(R12*4), R11;      \
	LEAQ       (DX)(BX*4), DX;         \
	SUBQ       $4, R8;                 \
	CMPQ       R8, $4;                 \
	JGE        L4;                     \
L1:                                    \
	TESTQ      R8, R8;                 \
	JZ         LE;                     \
	Q8P1(Q8F, C, 0);                   \
	Q8P1(Q8A, C, 1);                   \
	Q8P1(Q8A, C, 2);                   \
	Q8P1(Q8A, C, 3);                   \
	Q8P1(Q8A, C, 4);                   \
	Q8P1(Q8A, C, 5);                   \
	Q8P1(Q8A, C, 6);                   \
	Q8P1(Q8A, C, 7);                   \
	Q8FLT(Y0, Y1, C, (DI), (R11), (DX)); \
	ADDQ       R10, SI;                \
	ADDQ       R12, DI;                \
	ADDQ       R12, R11;               \
	ADDQ       BX, DX;                 \
	DECQ       R8;                     \
	JMP        L1;                     \
LE:

// func q4kmv8AVX2(x *int8, dx *float32, sx *int32, w *byte, ldw, ns, step, pf int, y *float32)
//
// y[r] = dot(x, row r) for the 8 block_q4_K rows at w + r*ldw, ns >= 1
// super-blocks (8*ns activation blocks), super-block s of row r at
// w + r*ldw + s*step (step = 144 row-major). The lines pf bytes past each
// super-block read are prefetched (the next tile's: pf = 8*ldw).
TEXT ·q4kmv8AVX2(SB), NOSPLIT, $512-72
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ sx+16(FP), R11
	MOVQ w+24(FP), AX
	MOVQ ldw+32(FP), BX
	MOVQ ns+40(FP), CX
	MOVQ step+48(FP), DX
	MOVQ pf+56(FP), R13
	LEAQ (BX)(BX*2), R9  // 3*ldw
	LEAQ (AX)(BX*4), R8  // row 4
	LEAQ (R8)(R13*1), R14 // row 4 + pf (prefetch)
	ADDQ AX, R13          // row 0 + pf (prefetch)
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // int16 ones
	VXORPS   Y14, Y14, Y14 // acc
	VMOVDQU  k4m0f<>(SB), Y13

q4kmv8loop:
	// The next tile's prefetches are spread over the super-block (a
	// burst of 24 would queue behind the line fill buffers).
	K4HEAD
	K4PREFETCH(0)
	K4SUBLO(16, 0, 256)
	K4SUBHI(16, 32, 288)
	K4PREFETCH(64)
	K4SUBLO(48, 64, 320)
	K4SUBHI(48, 96, 352)
	K4PREFETCH(128)
	K4SUBLO(80, 128, 384)
	K4SUBHI(80, 160, 416)
	K4SUBLO(112, 192, 448)
	K4SUBHI(112, 224, 480)
	ADDQ DX, AX
	ADDQ DX, R8
	ADDQ DX, R13
	ADDQ DX, R14
	DECQ CX
	JNZ  q4kmv8loop

	MOVQ    y+64(FP), DX
	VMOVUPS Y14, (DX)
	VZEROUPPER
	RET

// func q4kmm28AVX2(x *int8, dx *float32, sx *int32, w *byte, ldw, ns, step, pf int, y *float32, ldy int)
//
// For r < 2, c < 8: y[r*ldy + c] = dot(activation row r, weight row c):
// activation row r at x + r*256*ns (scales and sums at dx, sx + r*8*ns),
// the 8 block_q4_K rows at w + c*ldw, ns >= 1 super-blocks, with step and
// pf as in q4kmv8AVX2. The headers are unpacked once for both rows.
TEXT ·q4kmm28AVX2(SB), NOSPLIT, $512-80
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ sx+16(FP), R11
	MOVQ w+24(FP), AX
	MOVQ ldw+32(FP), BX
	MOVQ ns+40(FP), CX
	MOVQ step+48(FP), DX
	MOVQ pf+56(FP), R13
	MOVQ CX, R10
	SHLQ $8, R10         // 256*ns: activation row 1
	MOVQ CX, R12
	SHLQ $5, R12         // 4*8*ns: its scales and sums
	LEAQ (BX)(BX*2), R9  // 3*ldw
	LEAQ (AX)(BX*4), R8  // row 4
	LEAQ (R8)(R13*1), R14 // row 4 + pf (prefetch)
	ADDQ AX, R13          // row 0 + pf (prefetch)
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // int16 ones
	VXORPS   Y14, Y14, Y14 // acc, activation row 0
	VXORPS   Y12, Y12, Y12 // acc, activation row 1
	VMOVDQU  k4m0f<>(SB), Y13

q4kmm28loop:
	K4HEAD
	K4PREFETCH(0)
	K4SUB2LO(16, 0, 256)
	K4SUB2HI(16, 32, 288)
	K4PREFETCH(64)
	K4SUB2LO(48, 64, 320)
	K4SUB2HI(48, 96, 352)
	K4PREFETCH(128)
	K4SUB2LO(80, 128, 384)
	K4SUB2HI(80, 160, 416)
	K4SUB2LO(112, 192, 448)
	K4SUB2HI(112, 224, 480)
	ADDQ DX, AX
	ADDQ DX, R8
	ADDQ DX, R13
	ADDQ DX, R14
	DECQ CX
	JNZ  q4kmm28loop

	MOVQ    y+64(FP), DX
	MOVQ    ldy+72(FP), R10
	VMOVUPS Y14, (DX)
	VMOVUPS Y12, (DX)(R10*4)
	VZEROUPPER
	RET

// func q4kmm8ILAVX2(x *int8, dx *float32, sx *int32, w *byte, ns, rows int, y *float32, ldy int)
//
// For r < rows, c < 8: y[r*ldy + c] = dot(activation row r, row c of the
// Q4_K Interleaved8 group at w), activation row r at x + r*256*ns (scales
// dx + r*8*ns, sums sx + r*8*ns), ns >= 1 super-blocks, rows >= 1.
TEXT ·q4kmm8ILAVX2(SB), 0, $544-64
	MOVQ     x+0(FP), SI
	MOVQ     SI, 512(SP)
	MOVQ     dx+8(FP), DI
	MOVQ     DI, 520(SP)
	MOVQ     sx+16(FP), R11
	MOVQ     R11, 528(SP)
	MOVQ     w+24(FP), AX
	MOVQ     ns+32(FP), CX
	MOVQ     CX, R10
	SHLQ     $8, R10               // 256*ns: x row stride
	LEAQ     (R10)(R10*2), R9
	MOVQ     CX, R12
	SHLQ     $5, R12               // 32*ns: dx and sx row stride
	LEAQ     (R12)(R12*2), R13
	MOVQ     ldy+56(FP), BX
	SHLQ     $2, BX                // 4*ldy
	LEAQ     (BX)(BX*2), R14
	VMOVDQU  k4m0f<>(SB), Y13
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15         // int16 ones
	VXORPS   Y0, Y0, Y0
	MOVQ     y+48(FP), DX
	MOVQ     rows+40(FP), R8

q4kil8zero:
	VMOVUPS Y0, (DX)
	ADDQ    BX, DX
	DECQ    R8
	JNZ     q4kil8zero

q4kil8super:
	VMOVDQU 0(AX), Y0
	VMOVDQU 32(AX), Y1
	VMOVDQU 64(AX), Y2
	VMOVDQU 96(AX), Y3
	K4UNPACK
	Q8PAIR(0, q4kil8r40, q4kil8r10, q4kil8e0)
	Q8PAIR(1, q4kil8r41, q4kil8r11, q4kil8e1)
	Q8PAIR(2, q4kil8r42, q4kil8r12, q4kil8e2)
	Q8PAIR(3, q4kil8r43, q4kil8r13, q4kil8e3)
	ADDQ $1152, AX
	ADDQ $256, 512(SP)
	ADDQ $32, 520(SP)
	ADDQ $32, 528(SP)
	DECQ CX
	JNZ  q4kil8super

	VZEROUPPER
	RET
