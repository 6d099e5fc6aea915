//go:build !purego

#include "textflag.h"

DATA absMask<>+0(SB)/8, $0x7fffffffffffffff
GLOBL absMask<>(SB), RODATA|NOPTR, $8

// REDUCE sums Y0..Y3 lane-wise, then the four lanes, into the low double
// of X0.
#define REDUCE \
	VADDPD       Y1, Y0, Y0; \
	VADDPD       Y3, Y2, Y2; \
	VADDPD       Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPD       X1, X0, X0; \
	VPERMILPD    $1, X0, X1; \
	VADDSD       X1, X0, X0

// func dotF32F64AVX2(a *float32, b *float64, n int) float64
// Sum of float64(a[i]) * b[i], i < n (n a multiple of 16), in four
// accumulators of four lanes, each product fused into its sum.
TEXT ·dotF32F64AVX2(SB), NOSPLIT, $0-32
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3

dotloop:
	CMPQ        CX, $16
	JLT         dotdone
	VCVTPS2PD   (SI), Y4
	VCVTPS2PD   16(SI), Y5
	VCVTPS2PD   32(SI), Y6
	VCVTPS2PD   48(SI), Y7
	VFMADD231PD (DI), Y4, Y0
	VFMADD231PD 32(DI), Y5, Y1
	VFMADD231PD 64(DI), Y6, Y2
	VFMADD231PD 96(DI), Y7, Y3
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $16, CX
	JMP         dotloop

dotdone:
	REDUCE
	VZEROUPPER
	MOVSD X0, ret+24(FP)
	RET

// func absDotF32F64AVX2(a *float32, b *float64, n int) float64
// Sum of |float64(a[i])| * b[i], i < n (n a multiple of 16).
TEXT ·absDotF32F64AVX2(SB), NOSPLIT, $0-32
	MOVQ         a+0(FP), SI
	MOVQ         b+8(FP), DI
	MOVQ         n+16(FP), CX
	VBROADCASTSD absMask<>(SB), Y15
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	VXORPD       Y2, Y2, Y2
	VXORPD       Y3, Y3, Y3

absdotloop:
	CMPQ        CX, $16
	JLT         absdotdone
	VCVTPS2PD   (SI), Y4
	VCVTPS2PD   16(SI), Y5
	VCVTPS2PD   32(SI), Y6
	VCVTPS2PD   48(SI), Y7
	VANDPD      Y15, Y4, Y4
	VANDPD      Y15, Y5, Y5
	VANDPD      Y15, Y6, Y6
	VANDPD      Y15, Y7, Y7
	VFMADD231PD (DI), Y4, Y0
	VFMADD231PD 32(DI), Y5, Y1
	VFMADD231PD 64(DI), Y6, Y2
	VFMADD231PD 96(DI), Y7, Y3
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $16, CX
	JMP         absdotloop

absdotdone:
	REDUCE
	VZEROUPPER
	MOVSD X0, ret+24(FP)
	RET

// func absSumF32AVX2(a *float32, n int) float64
// Sum of |float64(a[i])|, i < n (n a multiple of 16).
TEXT ·absSumF32AVX2(SB), NOSPLIT, $0-24
	MOVQ         a+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD absMask<>(SB), Y15
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	VXORPD       Y2, Y2, Y2
	VXORPD       Y3, Y3, Y3

abssumloop:
	CMPQ      CX, $16
	JLT       abssumdone
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VANDPD    Y15, Y4, Y4
	VANDPD    Y15, Y5, Y5
	VANDPD    Y15, Y6, Y6
	VANDPD    Y15, Y7, Y7
	VADDPD    Y4, Y0, Y0
	VADDPD    Y5, Y1, Y1
	VADDPD    Y6, Y2, Y2
	VADDPD    Y7, Y3, Y3
	ADDQ      $64, SI
	SUBQ      $16, CX
	JMP       abssumloop

abssumdone:
	REDUCE
	VZEROUPPER
	MOVSD X0, ret+16(FP)
	RET

// func sumSqF32AVX2(a *float32, n int) float64
// Sum of float64(a[i])^2, i < n (n a multiple of 16).
TEXT ·sumSqF32AVX2(SB), NOSPLIT, $0-24
	MOVQ   a+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3

sumsqloop:
	CMPQ        CX, $16
	JLT         sumsqdone
	VCVTPS2PD   (SI), Y4
	VCVTPS2PD   16(SI), Y5
	VCVTPS2PD   32(SI), Y6
	VCVTPS2PD   48(SI), Y7
	VFMADD231PD Y4, Y4, Y0
	VFMADD231PD Y5, Y5, Y1
	VFMADD231PD Y6, Y6, Y2
	VFMADD231PD Y7, Y7, Y3
	ADDQ        $64, SI
	SUBQ        $16, CX
	JMP         sumsqloop

sumsqdone:
	REDUCE
	VZEROUPPER
	MOVSD X0, ret+16(FP)
	RET

// func axpyF32F64AVX2(acc *float64, w *float32, r float64, n int)
// acc[i] += r * float64(w[i]), i < n (n a multiple of 16), each fused.
TEXT ·axpyF32F64AVX2(SB), NOSPLIT, $0-32
	MOVQ         acc+0(FP), DI
	MOVQ         w+8(FP), SI
	VBROADCASTSD r+16(FP), Y15
	MOVQ         n+24(FP), CX

axpyloop:
	CMPQ        CX, $16
	JLT         axpydone
	VCVTPS2PD   (SI), Y4
	VCVTPS2PD   16(SI), Y5
	VCVTPS2PD   32(SI), Y6
	VCVTPS2PD   48(SI), Y7
	VFMADD213PD (DI), Y15, Y4
	VFMADD213PD 32(DI), Y15, Y5
	VFMADD213PD 64(DI), Y15, Y6
	VFMADD213PD 96(DI), Y15, Y7
	VMOVUPD     Y4, (DI)
	VMOVUPD     Y5, 32(DI)
	VMOVUPD     Y6, 64(DI)
	VMOVUPD     Y7, 96(DI)
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $16, CX
	JMP         axpyloop

axpydone:
	VZEROUPPER
	RET

// AXPY4 adds r0..r3 (Y12..Y15) times 4 converted floats at offset OFF of
// the rows w0..w3 (SI, DX, BX, R9) to the 4 doubles ACC.
#define AXPY4(OFF, ACC) \
	VCVTPS2PD   OFF(SI), Y4;   \
	VFMADD231PD Y4, Y12, ACC;  \
	VCVTPS2PD   OFF(DX), Y5;   \
	VFMADD231PD Y5, Y13, ACC;  \
	VCVTPS2PD   OFF(BX), Y6;   \
	VFMADD231PD Y6, Y14, ACC;  \
	VCVTPS2PD   OFF(R9), Y7;   \
	VFMADD231PD Y7, Y15, ACC

// func axpy4F32F64AVX2(acc *float64, w0, w1, w2, w3 *float32, r *[4]float64, n int)
// acc[i] += r[0] w0[i] + r[1] w1[i] + r[2] w2[i] + r[3] w3[i], i < n (n a
// multiple of 16), each product fused into the running sum in row order.
TEXT ·axpy4F32F64AVX2(SB), NOSPLIT, $0-56
	MOVQ         acc+0(FP), DI
	MOVQ         w0+8(FP), SI
	MOVQ         w1+16(FP), DX
	MOVQ         w2+24(FP), BX
	MOVQ         w3+32(FP), R9
	MOVQ         r+40(FP), R8
	MOVQ         n+48(FP), CX
	VBROADCASTSD 0(R8), Y12
	VBROADCASTSD 8(R8), Y13
	VBROADCASTSD 16(R8), Y14
	VBROADCASTSD 24(R8), Y15

axpy4loop:
	CMPQ    CX, $16
	JLT     axpy4done
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	AXPY4(0, Y0)
	AXPY4(16, Y1)
	AXPY4(32, Y2)
	AXPY4(48, Y3)
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, BX
	ADDQ    $64, R9
	ADDQ    $128, DI
	SUBQ    $16, CX
	JMP     axpy4loop

axpy4done:
	VZEROUPPER
	RET
