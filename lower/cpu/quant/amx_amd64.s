//go:build !purego

#include "textflag.h"

// AMX kernels on wire.Interleaved16 groups, 16 activation rows at a time.
// The 8 64-byte vectors of a Q8_0 block (a 4-byte piece of each of the 16
// weight rows, row r in dword r) are exactly the B operand of TDPBSSD (K
// = 32 int8, N = 16 columns in 4-byte groups), and the 16 activation rows'
// 32 quants of the same block are its A operand (16 rows of 32 bytes, one
// activation row apart): one TDPBSSD leaves the exact int32 block sum isum
// of every (activation row, weight row) pair in the C tile, row i of the
// tile the activation row, dword r the weight row. A Q4_0 block's 4
// vectors of nibble pieces are unpacked first into that B layout in the
// scratch (the low nibbles are elements 4p..4p+3, rows 0-3 of the tile;
// the high nibbles 16+4p.., rows 4-7), less 8, so the sum is exact too. The tile is stored, and
// the float part is the canonical one per lane, as in the AVX-512 kernels:
// s = fl32(fp16(dw) * dx), acc = fl32(acc + fl32(float32(isum) * s)),
// blocks in increasing order, no FMA; the 16 accumulators stay in Z0..Z15.
// Go's assembler has no AMX mnemonics: the instructions are bytes (GNU as
// output), their operands fixed:
//
//	tmm0, tmm3  C (16 rows x 64 bytes)   stored at (R8), 1024(R8), stride CX = 64
//	tmm1, tmm4  A (16 rows x 32 bytes)   from (SI), 32(SI), stride DX = 32*nb
//	tmm2, tmm5  B (8 rows x 64 bytes)    from 32(DI), 576(DI) (Q8_0), or 2048(R8), 2560(R8) (Q4_0), stride CX
//
// The tile configuration (amxConfig) is loaded on entry and the tile state
// released before return, so no tile state outlives a call.

#define LDTILECFG_AX     BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE      BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0
#define TILEZERO_T0      BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0
#define TILEZERO_T3      BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8
// tileloadd (%rsi,%rdx,1), %tmm1 and 32(%rsi,%rdx,1), %tmm4
#define TILELOAD_T1_SI   BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x0c; BYTE $0x16
#define TILELOAD_T4_SI32 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x64; BYTE $0x16; BYTE $0x20
// tileloadd 32(%rdi,%rcx,1), %tmm2 and 576(%rdi,%rcx,1), %tmm5
#define TILELOAD_T2_DI32  BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x54; BYTE $0x0f; BYTE $0x20
#define TILELOAD_T5_DI576 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0xac; BYTE $0x0f; BYTE $0x40; BYTE $0x02; BYTE $0x00; BYTE $0x00
// tileloadd 2048(%r8,%rcx,1), %tmm2 and 2560(%r8,%rcx,1), %tmm5
#define TILELOAD_T2_R82048 BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x94; BYTE $0x08; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00
#define TILELOAD_T5_R82560 BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0xac; BYTE $0x08; BYTE $0x00; BYTE $0x0a; BYTE $0x00; BYTE $0x00
// tdpbssd %tmm2, %tmm1, %tmm0 and %tmm5, %tmm4, %tmm3
#define TDPBSSD_T0  BYTE $0xc4; BYTE $0xe2; BYTE $0x6b; BYTE $0x5e; BYTE $0xc1
#define TDPBSSD_T3  BYTE $0xc4; BYTE $0xe2; BYTE $0x53; BYTE $0x5e; BYTE $0xdc
// tilestored %tmm0, (%r8,%rcx,1) and %tmm3, 1024(%r8,%rcx,1)
#define TILESTORE_T0 BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x08
#define TILESTORE_T3 BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x9c; BYTE $0x08; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00

// AMXROW(ACC, T, DXA): one activation row's float part: isum at T(R8),
// dx at DXA, the block's 16 scales in Z16.
#define AMXROW(ACC, T, DXA) \
	VMULPS.BCST DXA, Z16, Z17; \
	VCVTDQ2PS   T(R8), Z18;    \
	VMULPS      Z17, Z18, Z18; \
	VADDPS      Z18, ACC, ACC

// AMXFLOAT(T, D): the float part of the block whose sums are at T(R8),
// dx D bytes past the row pointers (R10 rows 0-3, R13 4-7, BX 8-11, AX
// 12-15; R11 = 4*nb, R12 = 3 * 4*nb), scales in Z16.
#define AMXFLOAT(T, D) \
	AMXROW(Z0, T+0, D(R10));          \
	AMXROW(Z1, T+64, D(R10)(R11*1));  \
	AMXROW(Z2, T+128, D(R10)(R11*2)); \
	AMXROW(Z3, T+192, D(R10)(R12*1)); \
	AMXROW(Z4, T+256, D(R13));        \
	AMXROW(Z5, T+320, D(R13)(R11*1)); \
	AMXROW(Z6, T+384, D(R13)(R11*2)); \
	AMXROW(Z7, T+448, D(R13)(R12*1)); \
	AMXROW(Z8, T+512, D(BX));         \
	AMXROW(Z9, T+576, D(BX)(R11*1));  \
	AMXROW(Z10, T+640, D(BX)(R11*2)); \
	AMXROW(Z11, T+704, D(BX)(R12*1)); \
	AMXROW(Z12, T+768, D(AX));        \
	AMXROW(Z13, T+832, D(AX)(R11*1)); \
	AMXROW(Z14, T+896, D(AX)(R11*2)); \
	AMXROW(Z15, T+960, D(AX)(R12*1))

// AMXZERO: Z0..Z15 (the accumulators) zeroed.
#define AMXZERO \
	VPXORD Z0, Z0, Z0; \
	VMOVAPS Z0, Z1;    \
	VMOVAPS Z0, Z2;    \
	VMOVAPS Z0, Z3;    \
	VMOVAPS Z0, Z4;    \
	VMOVAPS Z0, Z5;    \
	VMOVAPS Z0, Z6;    \
	VMOVAPS Z0, Z7;    \
	VMOVAPS Z0, Z8;    \
	VMOVAPS Z0, Z9;    \
	VMOVAPS Z0, Z10;   \
	VMOVAPS Z0, Z11;   \
	VMOVAPS Z0, Z12;   \
	VMOVAPS Z0, Z13;   \
	VMOVAPS Z0, Z14;   \
	VMOVAPS Z0, Z15

// AMXSTORE: Z0..Z15 stored as 16 output rows from R9, R13 bytes apart.
#define AMXSTORE \
	VMOVUPS Z0, (R9);  \
	ADDQ R13, R9;      \
	VMOVUPS Z1, (R9);  \
	ADDQ R13, R9;      \
	VMOVUPS Z2, (R9);  \
	ADDQ R13, R9;      \
	VMOVUPS Z3, (R9);  \
	ADDQ R13, R9;      \
	VMOVUPS Z4, (R9);  \
	ADDQ R13, R9;      \
	VMOVUPS Z5, (R9);  \
	ADDQ R13, R9;      \
	VMOVUPS Z6, (R9);  \
	ADDQ R13, R9;      \
	VMOVUPS Z7, (R9);  \
	ADDQ R13, R9;      \
	VMOVUPS Z8, (R9);  \
	ADDQ R13, R9;      \
	VMOVUPS Z9, (R9);  \
	ADDQ R13, R9;      \
	VMOVUPS Z10, (R9); \
	ADDQ R13, R9;      \
	VMOVUPS Z11, (R9); \
	ADDQ R13, R9;      \
	VMOVUPS Z12, (R9); \
	ADDQ R13, R9;      \
	VMOVUPS Z13, (R9); \
	ADDQ R13, R9;      \
	VMOVUPS Z14, (R9); \
	ADDQ R13, R9;      \
	VMOVUPS Z15, (R9)

// AMXGROUP: the next group's activation and dx row pointers (SI, R10,
// R13, BX, AX) set from the arguments, the accumulators zeroed, R9 = the
// block pairs.
#define AMXGROUP \
	MOVQ x+0(FP), SI;       \
	MOVQ dx+8(FP), R10;     \
	LEAQ (R10)(R11*4), R13; \
	LEAQ (R13)(R11*4), BX;  \
	LEAQ (BX)(R11*4), AX;   \
	AMXZERO;                \
	MOVQ nb+24(FP), R9;     \
	SHRQ $1, R9

// AMXEND: the group's 16 output rows stored at 8(SP), which moves on by
// 16 columns; the group count 0(SP) down by one.
#define AMXEND \
	MOVQ 8(SP), R9;        \
	MOVQ ldy+48(FP), R13;  \
	SHLQ $2, R13;          \
	AMXSTORE;              \
	ADDQ $64, 8(SP);       \
	DECQ 0(SP)

// Q4UNPACK(B, T): the Q4_0 block at B(DI) as a B tile at T(R8): its 4
// piece vectors' low nibbles as rows 0-3, high nibbles as rows 4-7, each
// less 8 (Z19 = 0x0F bytes, Z20 = 0x08 bytes). Clobbers Z21..Z25.
#define Q4UNPACK(B, T) \
	VMOVDQU32 B+32(DI), Z21;    \
	VMOVDQU32 B+96(DI), Z22;    \
	VMOVDQU32 B+160(DI), Z23;   \
	VMOVDQU32 B+224(DI), Z24;   \
	VPANDD    Z19, Z21, Z25;    \
	VPSUBB    Z20, Z25, Z25;    \
	VMOVDQU32 Z25, T(R8);       \
	VPANDD    Z19, Z22, Z25;    \
	VPSUBB    Z20, Z25, Z25;    \
	VMOVDQU32 Z25, T+64(R8);    \
	VPANDD    Z19, Z23, Z25;    \
	VPSUBB    Z20, Z25, Z25;    \
	VMOVDQU32 Z25, T+128(R8);   \
	VPANDD    Z19, Z24, Z25;    \
	VPSUBB    Z20, Z25, Z25;    \
	VMOVDQU32 Z25, T+192(R8);   \
	VPSRLW    $4, Z21, Z21;     \
	VPANDD    Z19, Z21, Z21;    \
	VPSUBB    Z20, Z21, Z21;    \
	VMOVDQU32 Z21, T+256(R8);   \
	VPSRLW    $4, Z22, Z22;     \
	VPANDD    Z19, Z22, Z22;    \
	VPSUBB    Z20, Z22, Z22;    \
	VMOVDQU32 Z22, T+320(R8);   \
	VPSRLW    $4, Z23, Z23;     \
	VPANDD    Z19, Z23, Z23;    \
	VPSUBB    Z20, Z23, Z23;    \
	VMOVDQU32 Z23, T+384(R8);   \
	VPSRLW    $4, Z24, Z24;     \
	VPANDD    Z19, Z24, Z24;    \
	VPSUBB    Z20, Z24, Z24;    \
	VMOVDQU32 Z24, T+448(R8)

// AMXKERNEL(BLK, PREP0, LOADB0, PREP1, LOADB1, GROUP, PAIR, TAIL, END):
// the body of the AMX GEMM kernels for blocks of BLK bytes; PREP0 and
// LOADB0 bring block 0 at (DI) into the B tile tmm2, PREP1 and LOADB1
// block 1 at BLK(DI) into tmm5; the rest are the labels.
#define AMXKERNEL(BLK, PREP0, LOADB0, PREP1, LOADB1, GROUP, PAIR, TAIL, END) \
	MOVQ cfg+64(FP), AX;    \
	LDTILECFG_AX;           \
	MOVQ w+16(FP), DI;      \
	MOVQ scr+56(FP), R8;    \
	MOVQ $64, CX;           \
	MOVQ nb+24(FP), DX;     \
	LEAQ (DX*4), R11;       \
	LEAQ (R11)(R11*2), R12; \
	SHLQ $5, DX;            \
	MOVQ groups+32(FP), R9; \
	MOVQ R9, 0(SP);         \
	MOVQ y+40(FP), R9;      \
	MOVQ R9, 8(SP);         \
	MOVL $0x0f, R9;         \
	VPBROADCASTB R9, Z19;   \
	MOVL $0x08, R9;         \
	VPBROADCASTB R9, Z20;   \
GROUP:;                     \
	AMXGROUP;               \
	JZ   TAIL;              \
PAIR:;                      \
	PREP0;                  \
	PREP1;                  \
	TILEZERO_T0;            \
	TILELOAD_T1_SI;         \
	LOADB0;                 \
	TDPBSSD_T0;             \
	TILESTORE_T0;           \
	TILEZERO_T3;            \
	TILELOAD_T4_SI32;       \
	LOADB1;                 \
	TDPBSSD_T3;             \
	TILESTORE_T3;           \
	VCVTPH2PS (DI), Z16;    \
	AMXFLOAT(0, 0);         \
	VCVTPH2PS BLK(DI), Z16; \
	AMXFLOAT(1024, 4);      \
	ADDQ $64, SI;           \
	ADDQ $(2*BLK), DI;      \
	ADDQ $8, R10;           \
	ADDQ $8, R13;           \
	ADDQ $8, BX;            \
	ADDQ $8, AX;            \
	DECQ R9;                \
	JNZ  PAIR;              \
TAIL:;                      \
	MOVQ nb+24(FP), R9;     \
	TESTQ $1, R9;           \
	JZ   END;               \
	PREP0;                  \
	TILEZERO_T0;            \
	TILELOAD_T1_SI;         \
	LOADB0;                 \
	TDPBSSD_T0;             \
	TILESTORE_T0;           \
	VCVTPH2PS (DI), Z16;    \
	AMXFLOAT(0, 0);         \
	ADDQ $BLK, DI;          \
END:;                       \
	AMXEND;                 \
	JNZ GROUP;              \
	TILERELEASE;            \
	VZEROUPPER;             \
	RET

#define NOPREP

// func q8mm16ILAMX(x *int8, dx *float32, w *byte, nb, groups int, y *float32, ldy int, scr *int32, cfg *byte)
//
// For r < 16, c < 16*groups: y[r*ldy + c] = dot(activation row r, row c
// of the Q8_0 Interleaved16 groups from w, one after another), activation
// row r at x + r*32*nb (scales dx + r*nb), nb >= 1, groups >= 1; scr is
// amxScratch int32 of scratch (the stored C tiles, and Q4_0's unpacked B
// tiles), cfg the tile configuration (amxConfig). Blocks go in pairs, both
// tile multiplies before the float parts.
TEXT ·q8mm16ILAMX(SB), NOSPLIT, $16-72
	AMXKERNEL(544, NOPREP, TILELOAD_T2_DI32, NOPREP, TILELOAD_T5_DI576, q8amxgroup, q8amxpair, q8amxtail, q8amxend)

// func q4mm16ILAMX(x *int8, dx *float32, w *byte, nb, groups int, y *float32, ldy int, scr *int32, cfg *byte)
//
// As q8mm16ILAMX for Q4_0 Interleaved16 groups (blocks of 288 bytes).
TEXT ·q4mm16ILAMX(SB), NOSPLIT, $16-72
	AMXKERNEL(288, Q4UNPACK(0, 2048), TILELOAD_T2_R82048, Q4UNPACK(288, 2560), TILELOAD_T5_R82560, q4amxgroup, q4amxpair, q4amxtail, q4amxend)
