//go:build !purego

#include "textflag.h"

// func dot4AVX2(a0, a1, a2, a3 *uint32, b *uint32, n8 int, out *uint32)
//
// Four dot products mod 2^32 against one vector: out[j] = sum_{i < n8}
// a_j[i] * b[i] (n8 a positive multiple of 8), the low 32 bits of each
// product (VPMULLD) added with wrap-around (VPADDD): arithmetic mod 2^32,
// so any order gives the same words. b is loaded once for the four.
TEXT ·dot4AVX2(SB), NOSPLIT, $0-56
	MOVQ a0+0(FP), SI
	MOVQ a1+8(FP), R8
	MOVQ a2+16(FP), R9
	MOVQ a3+24(FP), R10
	MOVQ b+32(FP), DI
	MOVQ n8+40(FP), CX
	MOVQ out+48(FP), DX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	XORQ  AX, AX           // byte offset
	SHLQ  $2, CX           // n8 words -> bytes

dloop:
	VMOVDQU (DI)(AX*1), Y8
	VPMULLD (SI)(AX*1), Y8, Y4
	VPMULLD (R8)(AX*1), Y8, Y5
	VPMULLD (R9)(AX*1), Y8, Y6
	VPMULLD (R10)(AX*1), Y8, Y7
	VPADDD  Y4, Y0, Y0
	VPADDD  Y5, Y1, Y1
	VPADDD  Y6, Y2, Y2
	VPADDD  Y7, Y3, Y3
	ADDQ    $32, AX
	CMPQ    AX, CX
	JB      dloop

	// Horizontal sums: 8 lanes to 1 for each accumulator.
	VEXTRACTI128 $1, Y0, X4
	VPADDD       X4, X0, X0
	VEXTRACTI128 $1, Y1, X5
	VPADDD       X5, X1, X1
	VEXTRACTI128 $1, Y2, X6
	VPADDD       X6, X2, X2
	VEXTRACTI128 $1, Y3, X7
	VPADDD       X7, X3, X3
	VPHADDD      X1, X0, X0  // [a0+a1, a2+a3, b0+b1, b2+b3]
	VPHADDD      X3, X2, X2  // [c.., c.., d.., d..]
	VPHADDD      X2, X0, X0  // [a, b, c, d]
	VMOVDQU      X0, (DX)
	VZEROUPPER
	RET
