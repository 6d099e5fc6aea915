//go:build !purego

#include "textflag.h"

// func int8Lanes4AVX2(x *float32, w *byte, ldw, k8 int, acc *float32)
//
// The eight lanes of dotInt8 for four weight rows at once: for r < 4 and
// l < 8, acc[8r+l] = sum over i = l mod 8, i < k8 (k8 > 0, a multiple of
// 8), in increasing i, of float32(int8(w[r*ldw+i])) * x[i], each product
// rounded (VMULPS) before it is added (VADDPS): the lanes of the Go
// order, which dotInt8's caller then sums.
TEXT ·int8Lanes4AVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ ldw+16(FP), BX
	MOVQ k8+24(FP), CX
	MOVQ acc+32(FP), DX
	LEAQ (DI)(BX*2), R8    // row 2
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ  AX, AX           // i

i8loop:
	VMOVUPS   (SI)(AX*4), Y8
	VPMOVSXBD (DI)(AX*1), Y4
	VPMOVSXBD (DI)(BX*1), Y5
	VPMOVSXBD (R8)(AX*1), Y6
	VPMOVSXBD (R8)(BX*1), Y7
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS    Y8, Y4, Y4
	VMULPS    Y8, Y5, Y5
	VMULPS    Y8, Y6, Y6
	VMULPS    Y8, Y7, Y7
	VADDPS    Y4, Y0, Y0
	VADDPS    Y5, Y1, Y1
	VADDPS    Y6, Y2, Y2
	VADDPS    Y7, Y3, Y3
	ADDQ      $8, AX
	ADDQ      $8, BX
	CMPQ      AX, CX
	JB        i8loop

	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VZEROUPPER
	RET
