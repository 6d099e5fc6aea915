//go:build !purego

#include "textflag.h"

// The one-row Q4_K kernel on wire.Interleaved16 groups (AVX-512 F/BW/VL +
// VNNI), for decode: q4kmm16ILAVX512's arithmetic with one activation row,
// so nothing goes through the frame. Per super-block the 16 rows' header
// dwords are unpacked in the lanes (d, dmin, the 6-bit scales and mins
// kept packed in registers); per pair of sub-blocks each 64-byte piece is
// loaded once, its low nibbles (VPANDD) and its high nibbles left in place,
// 16 times their value (VPANDND: one instruction, not a shift and a mask),
// and VPDPBUSD with the broadcast activation dwords sums them into four
// accumulators per sub-block (chains of two, not eight: the integer sums are
// exact, so splitting them changes no bit). The high sums are shifted back
// (VPSRAD $4, exact: they are multiples of 16) and the float part is
// q4kmm16ILAVX512's, per lane, sub-blocks in order:
// acc = fl(acc + fl(fl(isum*fl(d1*dx)) - fl(sx*fl(m1*dx)))), with
// d1 = fl(d*sc_j), m1 = fl(dmin*m_j). The super-block after next's 36 lines
// are prefetched, 9 before each pair of sub-blocks, as there.
//
// Generated (the repetitive blocks written out).

DATA k16mv3f<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k16mv3f<>+8(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k16mv3f<>+16(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k16mv3f<>+24(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k16mv3f<>+32(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k16mv3f<>+40(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k16mv3f<>+48(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k16mv3f<>+56(SB)/8, $0x3f3f3f3f3f3f3f3f
GLOBL k16mv3f<>(SB), RODATA|NOPTR, $64

// K4MVPIECE(OFF, XL, XH, AL, AH): the piece at OFF(AX) (4 bytes of each of
// the 16 rows): low nibbles times the activation dword at XL(SI) into AL,
// high nibbles (in place) times the dword at XH(SI) into AH.
#define K4MVPIECE(OFF, XL, XH, AL, AH) \
	VMOVDQU32 OFF(AX), Z0;        \
	VPANDD    Z25, Z0, Z1;        \
	VPANDND   Z0, Z25, Z2;        \
	VPDPBUSD.BCST XL(SI), Z1, AL; \
	VPDPBUSD.BCST XH(SI), Z2, AH

// func q4kmv16ILAVX512(x *int8, dx *float32, sx *int32, w *byte, ns int, y *float32)
//
// For c < 16: y[c] = dot(the activation row, row c of the Q4_K
// Interleaved16 group at w), ns >= 1 super-blocks (x holds 256*ns values,
// dx and sx 8*ns).
TEXT ·q4kmv16ILAVX512(SB), NOSPLIT, $0-48
	MOVQ  x+0(FP), SI
	MOVQ  dx+8(FP), DI
	MOVQ  sx+16(FP), R11
	MOVQ  w+24(FP), AX
	MOVQ  ns+32(FP), CX
	MOVQ  y+40(FP), DX
	MOVL  $0x0f, R10
	VPBROADCASTB R10, Z25     // nibble / low-4 mask
	VMOVDQU32 k16mv3f<>(SB), Z26
	MOVL  $0x03, R10
	VPBROADCASTB R10, Z27
	MOVL  $0xff, R10
	VPBROADCASTD R10, Z28     // the low byte of each dword
	VPXORD Z21, Z21, Z21      // the accumulators start at +0

q4kmv16super:
	// The header: d, dmin, the scales and mins unpacked (as q4kmm16ILAVX512).
	VMOVDQU32 0(AX), Z0
	VMOVDQU32 64(AX), Z1
	VMOVDQU32 128(AX), Z2
	VMOVDQU32 192(AX), Z3
	VPMOVDW   Z0, Y4
	VCVTPH2PS Y4, Z4          // d
	VPSRLD    $16, Z0, Z5
	VPMOVDW   Z5, Y5
	VCVTPH2PS Y5, Z5          // dmin
	VPANDD    Z26, Z1, Z6     // sc_0..3
	VPANDD    Z26, Z2, Z7     // m_0..3
	VPANDD    Z25, Z3, Z8
	VPSRLD    $6, Z1, Z9
	VPANDD    Z27, Z9, Z9
	VPSLLD    $4, Z9, Z9
	VPORD     Z9, Z8, Z8      // sc_4..7
	VPSRLD    $4, Z3, Z10
	VPANDD    Z25, Z10, Z10
	VPSRLD    $6, Z2, Z11
	VPANDD    Z27, Z11, Z11
	VPSLLD    $4, Z11, Z11
	VPORD     Z11, Z10, Z10   // m_4..7


	// Sub-blocks 0 and 1.
	PREFETCHT0 4608(AX)
	PREFETCHT0 4672(AX)
	PREFETCHT0 4736(AX)
	PREFETCHT0 4800(AX)
	PREFETCHT0 4864(AX)
	PREFETCHT0 4928(AX)
	PREFETCHT0 4992(AX)
	PREFETCHT0 5056(AX)
	PREFETCHT0 5120(AX)
	VPXORD    Z16, Z16, Z16
	VPXORD    Z17, Z17, Z17
	VPXORD    Z18, Z18, Z18
	VPXORD    Z19, Z19, Z19
	VPXORD    Z20, Z20, Z20
	VPXORD    Z22, Z22, Z22
	VPXORD    Z23, Z23, Z23
	VPXORD    Z24, Z24, Z24
	K4MVPIECE(256, 0, 32, Z16, Z20)
	K4MVPIECE(320, 4, 36, Z17, Z22)
	K4MVPIECE(384, 8, 40, Z18, Z23)
	K4MVPIECE(448, 12, 44, Z19, Z24)
	K4MVPIECE(512, 16, 48, Z16, Z20)
	K4MVPIECE(576, 20, 52, Z17, Z22)
	K4MVPIECE(640, 24, 56, Z18, Z23)
	K4MVPIECE(704, 28, 60, Z19, Z24)
	VPADDD    Z17, Z16, Z16
	VPADDD    Z19, Z18, Z18
	VPADDD    Z18, Z16, Z16    // isum, sub-block 0
	VPADDD    Z22, Z20, Z20
	VPADDD    Z24, Z23, Z23
	VPADDD    Z23, Z20, Z20
	VPSRAD    $4, Z20, Z20     // isum, sub-block 1
	// sub-block 0: d1, m1, then the float part
	VPANDD    Z28, Z6, Z12
	VCVTDQ2PS Z12, Z12
	VMULPS    Z4, Z12, Z12     // d1
	VPANDD    Z28, Z7, Z13
	VCVTDQ2PS Z13, Z13
	VMULPS    Z5, Z13, Z13     // m1
	VBROADCASTSS 0(DI), Z14
	VMULPS    Z12, Z14, Z15    // fl(d1*dx)
	VMULPS    Z13, Z14, Z14    // fl(m1*dx)
	VCVTDQ2PS Z16, Z16
	VMULPS    Z15, Z16, Z16
	VPBROADCASTD 0(R11), Z9
	VCVTDQ2PS Z9, Z9
	VMULPS    Z14, Z9, Z9
	VSUBPS    Z9, Z16, Z16
	VADDPS    Z16, Z21, Z21
	// sub-block 1: d1, m1, then the float part
	VPSRLD    $8, Z6, Z12
	VPANDD    Z28, Z12, Z12
	VCVTDQ2PS Z12, Z12
	VMULPS    Z4, Z12, Z12     // d1
	VPSRLD    $8, Z7, Z13
	VPANDD    Z28, Z13, Z13
	VCVTDQ2PS Z13, Z13
	VMULPS    Z5, Z13, Z13     // m1
	VBROADCASTSS 4(DI), Z14
	VMULPS    Z12, Z14, Z15    // fl(d1*dx)
	VMULPS    Z13, Z14, Z14    // fl(m1*dx)
	VCVTDQ2PS Z20, Z20
	VMULPS    Z15, Z20, Z20
	VPBROADCASTD 4(R11), Z9
	VCVTDQ2PS Z9, Z9
	VMULPS    Z14, Z9, Z9
	VSUBPS    Z9, Z20, Z20
	VADDPS    Z20, Z21, Z21

	// Sub-blocks 2 and 3.
	PREFETCHT0 5184(AX)
	PREFETCHT0 5248(AX)
	PREFETCHT0 5312(AX)
	PREFETCHT0 5376(AX)
	PREFETCHT0 5440(AX)
	PREFETCHT0 5504(AX)
	PREFETCHT0 5568(AX)
	PREFETCHT0 5632(AX)
	PREFETCHT0 5696(AX)
	VPXORD    Z16, Z16, Z16
	VPXORD    Z17, Z17, Z17
	VPXORD    Z18, Z18, Z18
	VPXORD    Z19, Z19, Z19
	VPXORD    Z20, Z20, Z20
	VPXORD    Z22, Z22, Z22
	VPXORD    Z23, Z23, Z23
	VPXORD    Z24, Z24, Z24
	K4MVPIECE(768, 64, 96, Z16, Z20)
	K4MVPIECE(832, 68, 100, Z17, Z22)
	K4MVPIECE(896, 72, 104, Z18, Z23)
	K4MVPIECE(960, 76, 108, Z19, Z24)
	K4MVPIECE(1024, 80, 112, Z16, Z20)
	K4MVPIECE(1088, 84, 116, Z17, Z22)
	K4MVPIECE(1152, 88, 120, Z18, Z23)
	K4MVPIECE(1216, 92, 124, Z19, Z24)
	VPADDD    Z17, Z16, Z16
	VPADDD    Z19, Z18, Z18
	VPADDD    Z18, Z16, Z16    // isum, sub-block 2
	VPADDD    Z22, Z20, Z20
	VPADDD    Z24, Z23, Z23
	VPADDD    Z23, Z20, Z20
	VPSRAD    $4, Z20, Z20     // isum, sub-block 3
	// sub-block 2: d1, m1, then the float part
	VPSRLD    $16, Z6, Z12
	VPANDD    Z28, Z12, Z12
	VCVTDQ2PS Z12, Z12
	VMULPS    Z4, Z12, Z12     // d1
	VPSRLD    $16, Z7, Z13
	VPANDD    Z28, Z13, Z13
	VCVTDQ2PS Z13, Z13
	VMULPS    Z5, Z13, Z13     // m1
	VBROADCASTSS 8(DI), Z14
	VMULPS    Z12, Z14, Z15    // fl(d1*dx)
	VMULPS    Z13, Z14, Z14    // fl(m1*dx)
	VCVTDQ2PS Z16, Z16
	VMULPS    Z15, Z16, Z16
	VPBROADCASTD 8(R11), Z9
	VCVTDQ2PS Z9, Z9
	VMULPS    Z14, Z9, Z9
	VSUBPS    Z9, Z16, Z16
	VADDPS    Z16, Z21, Z21
	// sub-block 3: d1, m1, then the float part
	VPSRLD    $24, Z6, Z12
	VCVTDQ2PS Z12, Z12
	VMULPS    Z4, Z12, Z12     // d1
	VPSRLD    $24, Z7, Z13
	VCVTDQ2PS Z13, Z13
	VMULPS    Z5, Z13, Z13     // m1
	VBROADCASTSS 12(DI), Z14
	VMULPS    Z12, Z14, Z15    // fl(d1*dx)
	VMULPS    Z13, Z14, Z14    // fl(m1*dx)
	VCVTDQ2PS Z20, Z20
	VMULPS    Z15, Z20, Z20
	VPBROADCASTD 12(R11), Z9
	VCVTDQ2PS Z9, Z9
	VMULPS    Z14, Z9, Z9
	VSUBPS    Z9, Z20, Z20
	VADDPS    Z20, Z21, Z21

	// Sub-blocks 4 and 5.
	PREFETCHT0 5760(AX)
	PREFETCHT0 5824(AX)
	PREFETCHT0 5888(AX)
	PREFETCHT0 5952(AX)
	PREFETCHT0 6016(AX)
	PREFETCHT0 6080(AX)
	PREFETCHT0 6144(AX)
	PREFETCHT0 6208(AX)
	PREFETCHT0 6272(AX)
	VPXORD    Z16, Z16, Z16
	VPXORD    Z17, Z17, Z17
	VPXORD    Z18, Z18, Z18
	VPXORD    Z19, Z19, Z19
	VPXORD    Z20, Z20, Z20
	VPXORD    Z22, Z22, Z22
	VPXORD    Z23, Z23, Z23
	VPXORD    Z24, Z24, Z24
	K4MVPIECE(1280, 128, 160, Z16, Z20)
	K4MVPIECE(1344, 132, 164, Z17, Z22)
	K4MVPIECE(1408, 136, 168, Z18, Z23)
	K4MVPIECE(1472, 140, 172, Z19, Z24)
	K4MVPIECE(1536, 144, 176, Z16, Z20)
	K4MVPIECE(1600, 148, 180, Z17, Z22)
	K4MVPIECE(1664, 152, 184, Z18, Z23)
	K4MVPIECE(1728, 156, 188, Z19, Z24)
	VPADDD    Z17, Z16, Z16
	VPADDD    Z19, Z18, Z18
	VPADDD    Z18, Z16, Z16    // isum, sub-block 4
	VPADDD    Z22, Z20, Z20
	VPADDD    Z24, Z23, Z23
	VPADDD    Z23, Z20, Z20
	VPSRAD    $4, Z20, Z20     // isum, sub-block 5
	// sub-block 4: d1, m1, then the float part
	VPANDD    Z28, Z8, Z12
	VCVTDQ2PS Z12, Z12
	VMULPS    Z4, Z12, Z12     // d1
	VPANDD    Z28, Z10, Z13
	VCVTDQ2PS Z13, Z13
	VMULPS    Z5, Z13, Z13     // m1
	VBROADCASTSS 16(DI), Z14
	VMULPS    Z12, Z14, Z15    // fl(d1*dx)
	VMULPS    Z13, Z14, Z14    // fl(m1*dx)
	VCVTDQ2PS Z16, Z16
	VMULPS    Z15, Z16, Z16
	VPBROADCASTD 16(R11), Z9
	VCVTDQ2PS Z9, Z9
	VMULPS    Z14, Z9, Z9
	VSUBPS    Z9, Z16, Z16
	VADDPS    Z16, Z21, Z21
	// sub-block 5: d1, m1, then the float part
	VPSRLD    $8, Z8, Z12
	VPANDD    Z28, Z12, Z12
	VCVTDQ2PS Z12, Z12
	VMULPS    Z4, Z12, Z12     // d1
	VPSRLD    $8, Z10, Z13
	VPANDD    Z28, Z13, Z13
	VCVTDQ2PS Z13, Z13
	VMULPS    Z5, Z13, Z13     // m1
	VBROADCASTSS 20(DI), Z14
	VMULPS    Z12, Z14, Z15    // fl(d1*dx)
	VMULPS    Z13, Z14, Z14    // fl(m1*dx)
	VCVTDQ2PS Z20, Z20
	VMULPS    Z15, Z20, Z20
	VPBROADCASTD 20(R11), Z9
	VCVTDQ2PS Z9, Z9
	VMULPS    Z14, Z9, Z9
	VSUBPS    Z9, Z20, Z20
	VADDPS    Z20, Z21, Z21

	// Sub-blocks 6 and 7.
	PREFETCHT0 6336(AX)
	PREFETCHT0 6400(AX)
	PREFETCHT0 6464(AX)
	PREFETCHT0 6528(AX)
	PREFETCHT0 6592(AX)
	PREFETCHT0 6656(AX)
	PREFETCHT0 6720(AX)
	PREFETCHT0 6784(AX)
	PREFETCHT0 6848(AX)
	VPXORD    Z16, Z16, Z16
	VPXORD    Z17, Z17, Z17
	VPXORD    Z18, Z18, Z18
	VPXORD    Z19, Z19, Z19
	VPXORD    Z20, Z20, Z20
	VPXORD    Z22, Z22, Z22
	VPXORD    Z23, Z23, Z23
	VPXORD    Z24, Z24, Z24
	K4MVPIECE(1792, 192, 224, Z16, Z20)
	K4MVPIECE(1856, 196, 228, Z17, Z22)
	K4MVPIECE(1920, 200, 232, Z18, Z23)
	K4MVPIECE(1984, 204, 236, Z19, Z24)
	K4MVPIECE(2048, 208, 240, Z16, Z20)
	K4MVPIECE(2112, 212, 244, Z17, Z22)
	K4MVPIECE(2176, 216, 248, Z18, Z23)
	K4MVPIECE(2240, 220, 252, Z19, Z24)
	VPADDD    Z17, Z16, Z16
	VPADDD    Z19, Z18, Z18
	VPADDD    Z18, Z16, Z16    // isum, sub-block 6
	VPADDD    Z22, Z20, Z20
	VPADDD    Z24, Z23, Z23
	VPADDD    Z23, Z20, Z20
	VPSRAD    $4, Z20, Z20     // isum, sub-block 7
	// sub-block 6: d1, m1, then the float part
	VPSRLD    $16, Z8, Z12
	VPANDD    Z28, Z12, Z12
	VCVTDQ2PS Z12, Z12
	VMULPS    Z4, Z12, Z12     // d1
	VPSRLD    $16, Z10, Z13
	VPANDD    Z28, Z13, Z13
	VCVTDQ2PS Z13, Z13
	VMULPS    Z5, Z13, Z13     // m1
	VBROADCASTSS 24(DI), Z14
	VMULPS    Z12, Z14, Z15    // fl(d1*dx)
	VMULPS    Z13, Z14, Z14    // fl(m1*dx)
	VCVTDQ2PS Z16, Z16
	VMULPS    Z15, Z16, Z16
	VPBROADCASTD 24(R11), Z9
	VCVTDQ2PS Z9, Z9
	VMULPS    Z14, Z9, Z9
	VSUBPS    Z9, Z16, Z16
	VADDPS    Z16, Z21, Z21
	// sub-block 7: d1, m1, then the float part
	VPSRLD    $24, Z8, Z12
	VCVTDQ2PS Z12, Z12
	VMULPS    Z4, Z12, Z12     // d1
	VPSRLD    $24, Z10, Z13
	VCVTDQ2PS Z13, Z13
	VMULPS    Z5, Z13, Z13     // m1
	VBROADCASTSS 28(DI), Z14
	VMULPS    Z12, Z14, Z15    // fl(d1*dx)
	VMULPS    Z13, Z14, Z14    // fl(m1*dx)
	VCVTDQ2PS Z20, Z20
	VMULPS    Z15, Z20, Z20
	VPBROADCASTD 28(R11), Z9
	VCVTDQ2PS Z9, Z9
	VMULPS    Z14, Z9, Z9
	VSUBPS    Z9, Z20, Z20
	VADDPS    Z20, Z21, Z21

	ADDQ $2304, AX
	ADDQ $256, SI
	ADDQ $32, DI
	ADDQ $32, R11
	DECQ CX
	JNZ  q4kmv16super

	VMOVUPS Z21, (DX)
	VZEROUPPER
	RET
