//go:build !purego

#include "textflag.h"

// func u32Lanes4AVX2(x *uint32, w *byte, ldw, k8 int, acc *uint32)
//
// The lwe product's lanes for four weight rows at once: for r < 4 and
// l < 8, acc[8r+l] = sum over i = l mod 8, i < k8 (k8 > 0, a multiple of
// 8) of int32(int8(w[r*ldw+i])) * x[i] mod 2^32: each weight sign-extended
// (VPMOVSXBD), multiplied keeping the low 32 bits (VPMULLD) and added with
// wrap-around (VPADDD), which is arithmetic mod 2^32 in any order.
TEXT ·u32Lanes4AVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ ldw+16(FP), BX
	MOVQ k8+24(FP), CX
	MOVQ acc+32(FP), DX
	LEAQ (DI)(BX*2), R8    // row 2
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	XORQ  AX, AX           // i; BX runs as ldw + i (row 1 and, from R8, row 3)

u32loop:
	VMOVDQU   (SI)(AX*4), Y8
	VPMOVSXBD (DI)(AX*1), Y4
	VPMOVSXBD (DI)(BX*1), Y5
	VPMOVSXBD (R8)(AX*1), Y6
	VPMOVSXBD (R8)(BX*1), Y7
	VPMULLD   Y8, Y4, Y4
	VPMULLD   Y8, Y5, Y5
	VPMULLD   Y8, Y6, Y6
	VPMULLD   Y8, Y7, Y7
	VPADDD    Y4, Y0, Y0
	VPADDD    Y5, Y1, Y1
	VPADDD    Y6, Y2, Y2
	VPADDD    Y7, Y3, Y3
	ADDQ      $8, AX
	ADDQ      $8, BX
	CMPQ      AX, CX
	JB        u32loop

	VMOVDQU Y0, (DX)
	VMOVDQU Y1, 32(DX)
	VMOVDQU Y2, 64(DX)
	VMOVDQU Y3, 96(DX)
	VZEROUPPER
	RET
