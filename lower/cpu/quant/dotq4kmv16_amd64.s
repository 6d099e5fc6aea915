//go:build !purego

#include "textflag.h"
#include "q4k16head_amd64.h"

// The one-row Q4_K kernel on wire.Interleaved16 groups (AVX-512 F/BW/VL +
// VNNI), for decode: q4kmm16ILAVX512's arithmetic with one activation row,
// so nothing goes through the frame. Per super-block the 16 rows' header
// dwords are unpacked in the lanes (K16HEAD: d, dmin, the 6-bit scales and
// mins kept packed in registers); per pair of sub-blocks each 64-byte piece
// is loaded once, its low nibbles (VPANDD) and its high nibbles left in
// place, 16 times their value (VPANDND: one instruction, not a shift and a
// mask), and VPDPBUSD with the broadcast activation dwords sums them into
// four accumulators per sub-block (chains of two, not eight: the integer
// sums are exact, so splitting them changes no bit). The high sums are
// shifted back (VPSRAD $4, exact: they are multiples of 16) and the float
// part is q4kmm16ILAVX512's, per lane, sub-blocks in order:
// acc = fl(acc + fl(fl(isum*fl(d1*dx)) - fl(sx*fl(m1*dx)))), with
// d1 = fl(d*sc_j), m1 = fl(dmin*m_j). The super-block after next's 36 lines
// are prefetched, 9 before each pair of sub-blocks, as there.

// K4MVPIECE(OFF, XL, XH, AL, AH): the piece at OFF(AX) (4 bytes of each of
// the 16 rows): low nibbles times the activation dword at XL(SI) into AL,
// high nibbles (in place) times the dword at XH(SI) into AH.
#define K4MVPIECE(OFF, XL, XH, AL, AH) \
	VMOVDQU32 OFF(AX), Z0;        \
	VPANDD    Z25, Z0, Z1;        \
	VPANDND   Z0, Z25, Z2;        \
	VPDPBUSD.BCST XL(SI), Z1, AL; \
	VPDPBUSD.BCST XH(SI), Z2, AH

// K4MVPAIR(C, PF): sub-blocks 2C and 2C+1 (their 8 pieces at 256+512C), the
// prefetch of the super-block after next's 9 lines for them, and the
// exact sums: Z16 = isum of sub-block 2C, Z20 = isum of 2C+1.
#define K4MVPAIR(C, PF) \
	PF (4608+576*C)(AX);     \
	PF (4608+576*C+64)(AX);  \
	PF (4608+576*C+128)(AX); \
	PF (4608+576*C+192)(AX); \
	PF (4608+576*C+256)(AX); \
	PF (4608+576*C+320)(AX); \
	PF (4608+576*C+384)(AX); \
	PF (4608+576*C+448)(AX); \
	PF (4608+576*C+512)(AX); \
	VPXORD Z16, Z16, Z16; VPXORD Z17, Z17, Z17; VPXORD Z18, Z18, Z18; VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; VPXORD Z22, Z22, Z22; VPXORD Z23, Z23, Z23; VPXORD Z24, Z24, Z24; \
	K4MVPIECE((256+512*C), (64*C), (64*C+32), Z16, Z20);         \
	K4MVPIECE((256+512*C+64), (64*C+4), (64*C+36), Z17, Z22);    \
	K4MVPIECE((256+512*C+128), (64*C+8), (64*C+40), Z18, Z23);   \
	K4MVPIECE((256+512*C+192), (64*C+12), (64*C+44), Z19, Z24);  \
	K4MVPIECE((256+512*C+256), (64*C+16), (64*C+48), Z16, Z20);  \
	K4MVPIECE((256+512*C+320), (64*C+20), (64*C+52), Z17, Z22);  \
	K4MVPIECE((256+512*C+384), (64*C+24), (64*C+56), Z18, Z23);  \
	K4MVPIECE((256+512*C+448), (64*C+28), (64*C+60), Z19, Z24);  \
	VPADDD Z17, Z16, Z16; VPADDD Z19, Z18, Z18; VPADDD Z18, Z16, Z16; \
	VPADDD Z22, Z20, Z20; VPADDD Z24, Z23, Z23; VPADDD Z23, Z20, Z20; \
	VPSRAD $4, Z20, Z20

// Byte B of each dword of S into D (the scale or min of sub-block 4k+B).
#define BYTE0(S, D) VPANDD Z28, S, D
#define BYTE1(S, D) VPSRLD $8, S, D; VPANDD Z28, D, D
#define BYTE2(S, D) VPSRLD $16, S, D; VPANDD Z28, D, D
#define BYTE3(S, D) VPSRLD $24, S, D

// K4MVFLOAT(J, I): sub-block J's float part, its isum in I, its scale
// and min bytes in Z12 and Z13: d1, m1, then acc (Z21) takes
// fl(fl(isum*fl(d1*dx)) - fl(sx*fl(m1*dx))).
#define K4MVFLOAT(J, I) \
	VCVTDQ2PS Z12, Z12;         \
	VMULPS    Z4, Z12, Z12;     \
	VCVTDQ2PS Z13, Z13;         \
	VMULPS    Z5, Z13, Z13;     \
	VBROADCASTSS (4*J)(DI), Z14; \
	VMULPS    Z12, Z14, Z15;    \
	VMULPS    Z13, Z14, Z14;    \
	VCVTDQ2PS I, I;             \
	VMULPS    Z15, I, I;        \
	VPBROADCASTD (4*J)(R11), Z9; \
	VCVTDQ2PS Z9, Z9;           \
	VMULPS    Z14, Z9, Z9;      \
	VSUBPS    Z9, I, I;         \
	VADDPS    I, Z21, Z21

// Q4KMV16BODY(SUPER, PF): q4kmv16ILAVX512 (SUPER its label) with the
// prefetch instruction PF; the accumulators Z21 start at +0.
#define Q4KMV16BODY(SUPER, PF) \
	MOVQ  x+0(FP), SI; \
	MOVQ  dx+8(FP), DI; \
	MOVQ  sx+16(FP), R11; \
	MOVQ  w+24(FP), AX; \
	MOVQ  ns+32(FP), CX; \
	MOVQ  y+40(FP), DX; \
	K16CONSTS; \
	VPXORD Z21, Z21, Z21; \
SUPER:; \
	K16HEAD; \
	K4MVPAIR(0, PF); \
	BYTE0(Z6, Z12); BYTE0(Z7, Z13); K4MVFLOAT(0, Z16); \
	BYTE1(Z6, Z12); BYTE1(Z7, Z13); K4MVFLOAT(1, Z20); \
	K4MVPAIR(1, PF); \
	BYTE2(Z6, Z12); BYTE2(Z7, Z13); K4MVFLOAT(2, Z16); \
	BYTE3(Z6, Z12); BYTE3(Z7, Z13); K4MVFLOAT(3, Z20); \
	K4MVPAIR(2, PF); \
	BYTE0(Z8, Z12); BYTE0(Z10, Z13); K4MVFLOAT(4, Z16); \
	BYTE1(Z8, Z12); BYTE1(Z10, Z13); K4MVFLOAT(5, Z20); \
	K4MVPAIR(3, PF); \
	BYTE2(Z8, Z12); BYTE2(Z10, Z13); K4MVFLOAT(6, Z16); \
	BYTE3(Z8, Z12); BYTE3(Z10, Z13); K4MVFLOAT(7, Z20); \
	ADDQ $2304, AX; \
	ADDQ $256, SI; \
	ADDQ $32, DI; \
	ADDQ $32, R11; \
	DECQ CX; \
	JNZ  SUPER; \
	VMOVUPS Z21, (DX); \
	VZEROUPPER; \
	RET

// func q4kmv16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, ns int, y *float32)
//
// For c < 16: y[c] = dot(the activation row, row c of the Q4_K
// Interleaved16 group at w), ns >= 1 super-blocks (x holds 256*ns values,
// dx and sx 8*ns).
TEXT ·q4kmv16ILAVX512(SB), NOSPLIT, $0-48
	Q4KMV16BODY(q4kmv16super, PREFETCHT0)

// func q4kmv16ILAVX512L2(x *int8, dx *float32, sx *int32, w *byte, ns int, y *float32)
//
// q4kmv16ILAVX512 prefetching into L2 (PREFETCHT1; cpuid.L2Prefetch picks
// it): on the Intel Xeon kind a cold decode step's q4_k matrices streamed
// at 16.5-16.7 GB/s with T0 and 23.9-24.0 with T1 (BenchmarkDecodeLayers,
// 1.5 GiB of layers, 2 cores).
TEXT ·q4kmv16ILAVX512L2(SB), NOSPLIT, $0-48
	Q4KMV16BODY(q4kmv16super2, PREFETCHT1)
