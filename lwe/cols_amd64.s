//go:build !purego

#include "textflag.h"

// func addCols4AVX2(dst *uint32, n8 int, base *uint32, stride int, idx *int32, sgn *uint32, k4 int)
//
// The pads' signed column sums, four columns a pass: for each group g < k4
// of columns c_j = base + idx[4g+j] * stride bytes with signs s_j (0 or
// all ones), for i < n8 (a positive multiple of 8):
//
//	dst[i] += (c_0[i] ^ s_0) + (c_1[i] ^ s_1) + (c_2[i] ^ s_2) + (c_3[i] ^ s_3) - (s_0 + s_1 + s_2 + s_3)
//
// mod 2^32: (x ^ s) - s is x or -x without a branch (VPXOR, VPADDD,
// VPSUBD). The addresses read depend on idx, not the instructions run.
TEXT ·addCols4AVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ n8+8(FP), CX
	SHLQ $2, CX            // bytes of dst
	MOVQ base+16(FP), R9
	MOVQ stride+24(FP), R10 // bytes between columns
	MOVQ idx+32(FP), R13
	MOVQ sgn+40(FP), R12
	MOVQ k4+48(FP), R11

group:
	MOVLQSX 0(R13), BX
	IMULQ   R10, BX
	ADDQ    R9, BX
	MOVLQSX 4(R13), DX
	IMULQ   R10, DX
	ADDQ    R9, DX
	MOVLQSX 8(R13), SI
	IMULQ   R10, SI
	ADDQ    R9, SI
	MOVLQSX 12(R13), R8
	IMULQ   R10, R8
	ADDQ    R9, R8
	VPBROADCASTD 0(R12), Y12
	VPBROADCASTD 4(R12), Y13
	VPBROADCASTD 8(R12), Y14
	VPBROADCASTD 12(R12), Y15
	MOVL 0(R12), AX
	ADDL 4(R12), AX
	ADDL 8(R12), AX
	ADDL 12(R12), AX
	MOVQ AX, X11
	VPBROADCASTD X11, Y11  // s_0 + s_1 + s_2 + s_3 mod 2^32
	XORQ AX, AX            // byte offset into dst and each column

loop:
	VMOVDQU (BX)(AX*1), Y0
	VMOVDQU (DX)(AX*1), Y1
	VMOVDQU (SI)(AX*1), Y2
	VMOVDQU (R8)(AX*1), Y3
	VPXOR   Y12, Y0, Y0
	VPXOR   Y13, Y1, Y1
	VPXOR   Y14, Y2, Y2
	VPXOR   Y15, Y3, Y3
	VPADDD  Y1, Y0, Y0
	VPADDD  Y3, Y2, Y2
	VPADDD  Y2, Y0, Y0
	VPADDD  (DI)(AX*1), Y0, Y0
	VPSUBD  Y11, Y0, Y0
	VMOVDQU Y0, (DI)(AX*1)
	ADDQ    $32, AX
	CMPQ    AX, CX
	JB      loop

	ADDQ $16, R13
	ADDQ $16, R12
	DECQ R11
	JNZ  group

	VZEROUPPER
	RET
