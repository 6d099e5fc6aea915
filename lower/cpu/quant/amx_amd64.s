//go:build !purego

#include "textflag.h"
#include "q4k16head_amd64.h"

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
// the high nibbles 16+4p.., rows 4-7), less 8, so the sum is exact too.
// The tile is stored, and the float part is the canonical one per lane,
// as in the AVX-512 kernels:
// s = fl32(fp16(dw) * dx), acc = fl32(acc + fl32(float32(isum) * s)),
// blocks in increasing order, no FMA; the 16 accumulators stay in Z0..Z15.
// Go's assembler has no AMX mnemonics: the instructions are bytes (GNU as
// output), their operands fixed:
//
//	tmm0, tmm3  C (16 rows x 64 bytes)   stored at (R8), 1024(R8), stride CX = 64
//	tmm1, tmm4  A (16 rows x 32 bytes)   from (SI), 32(SI), stride DX = 32*nb
//	tmm2, tmm5  B (8 rows x 64 bytes)    from 32(DI), 576(DI) (Q8_0), or 2048(R8), 2560(R8) (Q4_0, Q4_K), stride CX
//
// The scratch is double-buffered: R8 and R14 (scr, scr+3072; R14, g in
// Go's internal ABI, is free in an ABI0 function) swap after each pair of
// blocks, so the next pair's tile multiplies, issued before this pair's
// float part, need not wait for it to have read this pair's sums. They
// still overlap little: a q8_0 GEMM of 128 x 1024 x 3072 on the Intel
// Xeon kind took 0.74 ms before the pipelining (the tile work alone
// 0.39-0.42, the float part alone 0.32) and 0.69-0.72 after. The tile
// configuration (amxConfig) is loaded on
// entry and the tile state released before return, so no tile state
// outlives a call.

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

// AMXROW(ACC, T, DXA): one activation row's float part: isum at T,
// dx at DXA, the block's 16 scales in Z16.
#define AMXROW(ACC, T, DXA) \
	VMULPS.BCST DXA, Z16, Z17; \
	VCVTDQ2PS   T, Z18;        \
	VMULPS      Z17, Z18, Z18; \
	VADDPS      Z18, ACC, ACC

// AMXFLOAT(T, D, S): the float part of the block whose sums are at T(S),
// dx D bytes past the row pointers (R10 rows 0-3, R13 4-7, BX 8-11, AX
// 12-15; R11 = 4*nb, R12 = 3 * 4*nb), scales in Z16.
#define AMXFLOAT(T, D, S) \
	AMXROW(Z0, T+0(S), D(R10));          \
	AMXROW(Z1, T+64(S), D(R10)(R11*1));  \
	AMXROW(Z2, T+128(S), D(R10)(R11*2)); \
	AMXROW(Z3, T+192(S), D(R10)(R12*1)); \
	AMXROW(Z4, T+256(S), D(R13));        \
	AMXROW(Z5, T+320(S), D(R13)(R11*1)); \
	AMXROW(Z6, T+384(S), D(R13)(R11*2)); \
	AMXROW(Z7, T+448(S), D(R13)(R12*1)); \
	AMXROW(Z8, T+512(S), D(BX));         \
	AMXROW(Z9, T+576(S), D(BX)(R11*1));  \
	AMXROW(Z10, T+640(S), D(BX)(R11*2)); \
	AMXROW(Z11, T+704(S), D(BX)(R12*1)); \
	AMXROW(Z12, T+768(S), D(AX));        \
	AMXROW(Z13, T+832(S), D(AX)(R11*1)); \
	AMXROW(Z14, T+896(S), D(AX)(R11*2)); \
	AMXROW(Z15, T+960(S), D(AX)(R12*1))

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

// NIBLO(V, T, M, K), NIBHI(V, T, M, K): the low (high) nibbles of the
// bytes of V (M = 0x0f bytes), less K bytes, stored at T(R8); NIBHI
// clobbers V, NIBLO Z25.
#define NIBLO(V, T, M, K) \
	VPANDD    M, V, Z25;   \
	VPSUBB    K, Z25, Z25; \
	VMOVDQU32 Z25, T(R8)

#define NIBHI(V, T, M, K) \
	VPSRLW    $4, V, V; \
	VPANDD    M, V, V;  \
	VPSUBB    K, V, V;  \
	VMOVDQU32 V, T(R8)

// Q4UNPACK(B, T): the Q4_0 block at B(DI) as a B tile at T(R8): its 4
// piece vectors' low nibbles as rows 0-3, high nibbles as rows 4-7, each
// less 8 (Z19 = 0x0F bytes, Z20 = 0x08 bytes). Clobbers Z21..Z25.
#define Q4UNPACK(B, T) \
	VMOVDQU32 B+32(DI), Z21;       \
	VMOVDQU32 B+96(DI), Z22;       \
	VMOVDQU32 B+160(DI), Z23;      \
	VMOVDQU32 B+224(DI), Z24;      \
	NIBLO(Z21, T, Z19, Z20);       \
	NIBLO(Z22, T+64, Z19, Z20);    \
	NIBLO(Z23, T+128, Z19, Z20);   \
	NIBLO(Z24, T+192, Z19, Z20);   \
	NIBHI(Z21, T+256, Z19, Z20);   \
	NIBHI(Z22, T+320, Z19, Z20);   \
	NIBHI(Z23, T+384, Z19, Z20);   \
	NIBHI(Z24, T+448, Z19, Z20)

// AMXMUL(PREP0, LOADB0, PREP1, LOADB1): the tile multiplies of the pair
// of blocks at (SI) and (DI), their sums left in tmm0 and tmm3.
#define AMXMUL(PREP0, LOADB0, PREP1, LOADB1) \
	PREP0;            \
	PREP1;            \
	TILEZERO_T0;      \
	TILELOAD_T1_SI;   \
	LOADB0;           \
	TDPBSSD_T0;       \
	TILEZERO_T3;      \
	TILELOAD_T4_SI32; \
	LOADB1;           \
	TDPBSSD_T3

// AMXSTORES: tmm0 and tmm3 stored at (R8) and 1024(R8).
#define AMXSTORES \
	TILESTORE_T0; \
	TILESTORE_T3

// AMXPAIRFLOAT(W, S): the float part of a pair of blocks, their scales at
// W and W+BLK bytes past DI, their sums at (S), the dx row pointers moved
// on.
#define AMXPAIRFLOAT(W, BLK, S) \
	VCVTPH2PS W(DI), Z16;         \
	AMXFLOAT(0, 0, S);            \
	VCVTPH2PS (W+BLK)(DI), Z16;   \
	AMXFLOAT(1024, 4, S);         \
	ADDQ $8, R10;                 \
	ADDQ $8, R13;                 \
	ADDQ $8, BX;                  \
	ADDQ $8, AX

// AMXKERNEL(BLK, PREP0, LOADB0, PREP1, LOADB1, GROUP, PAIR, LAST, TAIL, END):
// the body of the AMX GEMM kernels for blocks of BLK bytes; PREP0 and
// LOADB0 bring block 0 at (DI) into the B tile tmm2, PREP1 and LOADB1
// block 1 at BLK(DI) into tmm5; the rest are the labels. Software
// pipelined: the tile multiplies of the next pair of blocks are issued
// before the float part of this one and stored (into the other half of
// the scratch) after it, so no load of the float part is ordered after a
// tile store it does not read.
#define AMXKERNEL(BLK, PREP0, LOADB0, PREP1, LOADB1, GROUP, PAIR, LAST, TAIL, END) \
	MOVQ cfg+64(FP), AX;    \
	LDTILECFG_AX;           \
	MOVQ w+16(FP), DI;      \
	MOVQ scr+56(FP), R8;    \
	LEAQ 3072(R8), R14;     \
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
	AMXMUL(PREP0, LOADB0, PREP1, LOADB1); \
	AMXSTORES;              \
PAIR:;                      \
	DECQ R9;                \
	JZ   LAST;              \
	ADDQ $64, SI;           \
	ADDQ $(2*BLK), DI;      \
	XCHGQ R8, R14;          \
	AMXMUL(PREP0, LOADB0, PREP1, LOADB1); \
	AMXPAIRFLOAT(-2*BLK, BLK, R14); \
	AMXSTORES;              \
	JMP  PAIR;              \
LAST:;                      \
	AMXPAIRFLOAT(0, BLK, R8); \
	ADDQ $64, SI;           \
	ADDQ $(2*BLK), DI;      \
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
	AMXFLOAT(0, 0, R8);     \
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
// tiles), cfg the tile configuration (amxConfig). Blocks go in pairs.
TEXT ·q8mm16ILAMX(SB), NOSPLIT, $16-72
	AMXKERNEL(544, NOPREP, TILELOAD_T2_DI32, NOPREP, TILELOAD_T5_DI576, q8amxgroup, q8amxpair, q8amxlast, q8amxtail, q8amxend)

// func q4mm16ILAMX(x *int8, dx *float32, w *byte, nb, groups int, y *float32, ldy int, scr *int32, cfg *byte)
//
// As q8mm16ILAMX for Q4_0 Interleaved16 groups (blocks of 288 bytes).
TEXT ·q4mm16ILAMX(SB), NOSPLIT, $16-72
	AMXKERNEL(288, Q4UNPACK(0, 2048), TILELOAD_T2_R82048, Q4UNPACK(288, 2560), TILELOAD_T5_R82560, q4amxgroup, q4amxpair, q4amxlast, q4amxtail, q4amxend)

// The Q4_K kernel (q4kmm16ILAMX): per super-block the 16 rows' header is
// unpacked (K16HEAD, K16SCALES: d1_s and m1_s in the scratch, the
// accumulators spilled around it), then per pair of sub-blocks the 8
// pieces' low nibbles (sub-block 2j) and high nibbles (2j+1) go into the
// two B tiles as they are (0..15, exact as signed bytes), and the float
// part is the canonical Q4_K one per lane:
// acc = fl32(acc + fl32(fl32(float32(isum) * fl32(d1*dx)) - fl32(float32(sx) * fl32(m1*dx)))).
// dx and float32(sx) come from the chunk's table (amxTable: per block
// the 16 rows' dx, then their sx as float32), so one pointer (R10) reads
// them. Scratch (R8): C tiles 0-2047, B tiles 2048-3071 (a pair of
// sub-blocks; the next pair's at 3072-6143, R8 and R14 swapped after
// each pair), d1/m1 6144-7167 (R11), the spilled accumulators 7168-8191.

// K4ROW(ACC, T, D): one activation row's float part for the sub-block
// whose sums are at T: dx at D(R10), float32(sx) at D+64(R10), d1 in
// Z16, m1 in Z17.
#define K4ROW(ACC, T, D) \
	VMULPS.BCST D(R10), Z16, Z18;      \
	VCVTDQ2PS   T, Z19;                \
	VMULPS      Z18, Z19, Z19;         \
	VMULPS.BCST D(R10), Z17, Z18;      \
	VMULPS.BCST (D+64)(R10), Z18, Z18; \
	VSUBPS      Z18, Z19, Z19;         \
	VADDPS      Z19, ACC, ACC

// K4FLOAT(T, S, R): the float part of sub-block S (0..7) of the
// super-block, its sums at T(R).
#define K4FLOAT(T, S, R) \
	VMOVUPS (S*64)(R11), Z16 \
	VMOVUPS (512+S*64)(R11), Z17 \
	K4ROW(Z0, T+0(R), (S*128+0)) \
	K4ROW(Z1, T+64(R), (S*128+4)) \
	K4ROW(Z2, T+128(R), (S*128+8)) \
	K4ROW(Z3, T+192(R), (S*128+12)) \
	K4ROW(Z4, T+256(R), (S*128+16)) \
	K4ROW(Z5, T+320(R), (S*128+20)) \
	K4ROW(Z6, T+384(R), (S*128+24)) \
	K4ROW(Z7, T+448(R), (S*128+28)) \
	K4ROW(Z8, T+512(R), (S*128+32)) \
	K4ROW(Z9, T+576(R), (S*128+36)) \
	K4ROW(Z10, T+640(R), (S*128+40)) \
	K4ROW(Z11, T+704(R), (S*128+44)) \
	K4ROW(Z12, T+768(R), (S*128+48)) \
	K4ROW(Z13, T+832(R), (S*128+52)) \
	K4ROW(Z14, T+896(R), (S*128+56)) \
	K4ROW(Z15, T+960(R), (S*128+60))

// K4HALF(O, T): 4 piece vectors of a Q4_K super-block at O(DI), their
// low nibbles stored at T(R8) and their high nibbles at T+512(R8), 64
// bytes apart, as they are (Z25 = 0x0f bytes; clobbers Z20..Z24).
#define K4HALF(O, T) \
	VMOVDQU32 O(DI), Z20;            \
	VMOVDQU32 (O+64)(DI), Z21;       \
	VMOVDQU32 (O+128)(DI), Z22;      \
	VMOVDQU32 (O+192)(DI), Z23;      \
	K4LO(Z20, T);                    \
	K4LO(Z21, T+64);                 \
	K4LO(Z22, T+128);                \
	K4LO(Z23, T+192);                \
	K4HI(Z20, T+512);                \
	K4HI(Z21, T+576);                \
	K4HI(Z22, T+640);                \
	K4HI(Z23, T+704)

// K4LO(V, T), K4HI(V, T): the low (high) nibbles of the bytes of V
// stored at T(R8) as they are (Z25 = 0x0f bytes; K4LO clobbers Z24, K4HI
// V).
#define K4LO(V, T) \
	VPANDD    Z25, V, Z24; \
	VMOVDQU32 Z24, T(R8)

#define K4HI(V, T) \
	VPSRLW    $4, V, V; \
	VPANDD    Z25, V, V; \
	VMOVDQU32 V, T(R8)

// K4UNPACK(J): sub-blocks 2J and 2J+1 of the super-block at DI as the B
// tiles at 2048(R8) and 2560(R8) (Z25 = 0x0f bytes; clobbers Z20..Z24).
#define K4UNPACK(J) \
	K4HALF((256+J*512), 2048); \
	K4HALF((256+J*512+256), 2304)

// K4MUL(J): the tile multiplies of sub-blocks 2J and 2J+1 (A tiles at
// SI, 32(SI)), their sums left in tmm0 and tmm3 (AMXSTORES stores them),
// SI moved on.
#define K4MUL(J) \
	AMXMUL(K4UNPACK(J), TILELOAD_T2_R82048, NOPREP, TILELOAD_T5_R82560); \
	ADDQ $64, SI

// K4PAIRFLOAT(J, R): the float parts of sub-blocks 2J and 2J+1, their
// sums at (R) and 1024(R).
#define K4PAIRFLOAT(J, R) \
	K4FLOAT(0, (2*J), R); \
	K4FLOAT(1024, (2*J+1), R)

// K4SPILL, K4RELOAD: the accumulators to and from 7168(R8).
#define K4SPILL \
	VMOVUPS Z0, 7168(R8) \
	VMOVUPS Z1, 7232(R8) \
	VMOVUPS Z2, 7296(R8) \
	VMOVUPS Z3, 7360(R8) \
	VMOVUPS Z4, 7424(R8) \
	VMOVUPS Z5, 7488(R8) \
	VMOVUPS Z6, 7552(R8) \
	VMOVUPS Z7, 7616(R8) \
	VMOVUPS Z8, 7680(R8) \
	VMOVUPS Z9, 7744(R8) \
	VMOVUPS Z10, 7808(R8) \
	VMOVUPS Z11, 7872(R8) \
	VMOVUPS Z12, 7936(R8) \
	VMOVUPS Z13, 8000(R8) \
	VMOVUPS Z14, 8064(R8) \
	VMOVUPS Z15, 8128(R8)

#define K4RELOAD \
	VMOVUPS 7168(R8), Z0 \
	VMOVUPS 7232(R8), Z1 \
	VMOVUPS 7296(R8), Z2 \
	VMOVUPS 7360(R8), Z3 \
	VMOVUPS 7424(R8), Z4 \
	VMOVUPS 7488(R8), Z5 \
	VMOVUPS 7552(R8), Z6 \
	VMOVUPS 7616(R8), Z7 \
	VMOVUPS 7680(R8), Z8 \
	VMOVUPS 7744(R8), Z9 \
	VMOVUPS 7808(R8), Z10 \
	VMOVUPS 7872(R8), Z11 \
	VMOVUPS 7936(R8), Z12 \
	VMOVUPS 8000(R8), Z13 \
	VMOVUPS 8064(R8), Z14 \
	VMOVUPS 8128(R8), Z15

// func q4kmm16ILAMX(x *int8, tab *float32, w *byte, ns, groups int, y *float32, ldy int, scr *int32, cfg *byte)
//
// For r < 16, c < 16*groups: y[r*ldy + c] = dot(activation row r, row c
// of the Q4_K Interleaved16 groups from w, one after another), activation
// row r at x + r*256*ns, its dx and sx in the table tab (amxTable), ns >=
// 1 super-blocks, groups >= 1; scr is amxScratch int32 of scratch, cfg the
// tile configuration (amxConfig).
TEXT ·q4kmm16ILAMX(SB), NOSPLIT, $16-72
	MOVQ cfg+64(FP), AX
	LDTILECFG_AX
	K16CONSTS
	MOVQ w+16(FP), DI
	MOVQ scr+56(FP), R8
	LEAQ 3072(R8), R14
	LEAQ 6144(R8), R11
	MOVQ $64, CX
	MOVQ ns+24(FP), DX
	SHLQ $8, DX
	MOVQ groups+32(FP), R9
	MOVQ R9, 0(SP)
	MOVQ y+40(FP), R9
	MOVQ R9, 8(SP)

q4kamxgroup:
	MOVQ x+0(FP), SI
	MOVQ tab+8(FP), R10
	AMXZERO
	MOVQ ns+24(FP), R9

q4kamxsuper:
	K4SPILL
	MOVQ DI, AX
	K16HEAD
	K16SCALES(R11)
	K4RELOAD
	// Software pipelined as AMXKERNEL: pair J+1's tile multiplies before
	// pair J's float part, stored (in the other half of the scratch)
	// after it; R8 is back at the first half after the four swaps (the
	// spill area is fixed to it).
	K4MUL(0)
	AMXSTORES
	XCHGQ R8, R14
	K4MUL(1)
	K4PAIRFLOAT(0, R14)
	AMXSTORES
	XCHGQ R8, R14
	K4MUL(2)
	K4PAIRFLOAT(1, R14)
	AMXSTORES
	XCHGQ R8, R14
	K4MUL(3)
	K4PAIRFLOAT(2, R14)
	AMXSTORES
	K4PAIRFLOAT(3, R8)
	XCHGQ R8, R14
	ADDQ $2304, DI
	ADDQ $1024, R10
	DECQ R9
	JNZ  q4kamxsuper

	AMXEND
	JNZ q4kamxgroup
	TILERELEASE
	VZEROUPPER
	RET
