//go:build !purego

#include "textflag.h"

// func f32ToF16F16C(dst *uint16, src *float32, n int)
//
// dst[i] = src[i] rounded to binary16, to nearest with ties to even (the
// immediate's rounding, not MXCSR's), for i < n, n a multiple of 8:
// VCVTPS2PH, the rounding safetensors.F32ToF16 specifies (TestF32ToF16F16C).
TEXT ·f32ToF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VMOVDQU   X1, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       loop

done:
	VZEROUPPER
	RET
