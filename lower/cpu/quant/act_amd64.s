//go:build !purego

#include "textflag.h"

// The activation quantizer of wire.QuantizeActBlock with AVX2, block by
// block of 32 values, the same operations: amax as the largest |x| bit
// pattern, d = amax / 127 and id = 1 / d in float32 (id = 0 when d = 0),
// each quant int32(t + copysign(0.5, t)) with t = float64(x * id) (the
// product rounded to float32, then widened; the add in float64 and the
// truncating conversion as Go's), and the quants' int32 sum. A block that
// holds a NaN or an infinity, or whose 1/d overflows, is left to the Go
// code: the kernel stops before it.

DATA actAbs<>+0(SB)/8, $0x7fffffff7fffffff
DATA actAbs<>+8(SB)/8, $0x7fffffff7fffffff
DATA actAbs<>+16(SB)/8, $0x7fffffff7fffffff
DATA actAbs<>+24(SB)/8, $0x7fffffff7fffffff
GLOBL actAbs<>(SB), RODATA|NOPTR, $32

DATA actSign<>+0(SB)/8, $0x8000000000000000
DATA actSign<>+8(SB)/8, $0x8000000000000000
DATA actSign<>+16(SB)/8, $0x8000000000000000
DATA actSign<>+24(SB)/8, $0x8000000000000000
GLOBL actSign<>(SB), RODATA|NOPTR, $32

// 0.5 as a float64.
DATA actHalf<>+0(SB)/8, $0x3fe0000000000000
DATA actHalf<>+8(SB)/8, $0x3fe0000000000000
DATA actHalf<>+16(SB)/8, $0x3fe0000000000000
DATA actHalf<>+24(SB)/8, $0x3fe0000000000000
GLOBL actHalf<>(SB), RODATA|NOPTR, $32

// 127 and 1 as float32s.
DATA act127<>+0(SB)/4, $0x42fe0000
GLOBL act127<>(SB), RODATA|NOPTR, $4
DATA actOne<>+0(SB)/4, $0x3f800000
GLOBL actOne<>(SB), RODATA|NOPTR, $4

// ACTQ8(Y, X): the 8 float32s in Y (times id, Y6) become 8 int32 quants,
// added to the sum (X12) and packed to 8 int16s in X. Clobbers Y8..Y11.
#define ACTQ8(Y, X) \
	VMULPS       Y6, Y, Y;       \
	VEXTRACTF128 $1, Y, X9;      \
	VCVTPS2PD    X, Y8;          \
	VCVTPS2PD    X9, Y9;         \
	VANDPD       Y13, Y8, Y10;   \
	VORPD        Y14, Y10, Y10;  \
	VADDPD       Y10, Y8, Y8;    \
	VANDPD       Y13, Y9, Y11;   \
	VORPD        Y14, Y11, Y11;  \
	VADDPD       Y11, Y9, Y9;    \
	VCVTTPD2DQY  Y8, X8;         \
	VCVTTPD2DQY  Y9, X9;         \
	VPADDD       X8, X12, X12;   \
	VPADDD       X9, X12, X12;   \
	VPACKSSDW    X9, X8, X

// func quantizeActAVX2(q *int8, d *float32, s *int32, x *float32, nblocks int) int
//
// Quantizes blocks 0.. of x (32 values each) into q, d and s until
// nblocks or a block the Go code must take; returns how many it did.
TEXT ·quantizeActAVX2(SB), NOSPLIT, $0-48
	MOVQ    q+0(FP), DI
	MOVQ    d+8(FP), R8
	MOVQ    s+16(FP), R9
	MOVQ    x+24(FP), SI
	MOVQ    nblocks+32(FP), CX
	XORQ    AX, AX
	VMOVUPS actAbs<>(SB), Y15
	VMOVUPD actSign<>(SB), Y13
	VMOVUPD actHalf<>(SB), Y14
	CMPQ    CX, $0
	JLE     aqdone

aqloop:
	VMOVUPS  (SI), Y0
	VMOVUPS  32(SI), Y1
	VMOVUPS  64(SI), Y2
	VMOVUPS  96(SI), Y3
	VANDPS   Y15, Y0, Y4
	VANDPS   Y15, Y1, Y5
	VPMAXUD  Y5, Y4, Y4
	VANDPS   Y15, Y2, Y5
	VPMAXUD  Y5, Y4, Y4
	VANDPS   Y15, Y3, Y5
	VPMAXUD  Y5, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD  X5, X4, X4
	VPSHUFD  $0x4e, X4, X5
	VPMAXUD  X5, X4, X4
	VPSHUFD  $0xb1, X4, X5
	VPMAXUD  X5, X4, X4
	VMOVD    X4, DX
	CMPL     DX, $0x7f800000
	JAE      aqdone              // NaN or infinity: the Go code's block

	VDIVSS   act127<>(SB), X4, X5 // d = amax / 127
	VXORPS   X6, X6, X6
	VXORPS   X7, X7, X7
	VUCOMISS X7, X5
	JEQ      aqscale             // d = 0: id = 0
	VMOVSS   actOne<>(SB), X6
	VDIVSS   X5, X6, X6          // id = 1 / d
	VMOVD    X6, DX
	CMPL     DX, $0x7f800000
	JAE      aqdone              // 1/d overflows: the Go code's block

aqscale:
	VMOVSS       X5, (R8)
	VBROADCASTSS X6, Y6
	VPXOR        X12, X12, X12
	ACTQ8(Y0, X0)
	ACTQ8(Y1, X1)
	ACTQ8(Y2, X2)
	ACTQ8(Y3, X3)
	VPACKSSWB    X1, X0, X0
	VPACKSSWB    X3, X2, X2
	VMOVDQU      X0, (DI)
	VMOVDQU      X2, 16(DI)
	VPSHUFD      $0x4e, X12, X8
	VPADDD       X8, X12, X12
	VPSHUFD      $0xb1, X12, X8
	VPADDD       X8, X12, X12
	VMOVD        X12, (R9)

	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, R8
	ADDQ $4, R9
	INCQ AX
	CMPQ AX, CX
	JB   aqloop

aqdone:
	MOVQ AX, ret+40(FP)
	VZEROUPPER
	RET
