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

DATA bf16c<>+0(SB)/4, $0x7fffffff
DATA bf16c<>+4(SB)/4, $0x7f800000
DATA bf16c<>+8(SB)/4, $0x00007fff
DATA bf16c<>+12(SB)/4, $0x00000001
DATA bf16c<>+16(SB)/4, $0x00000040
GLOBL bf16c<>(SB), RODATA|NOPTR, $20

// func f32ToBF16AVX2(dst *uint16, src *float32, n int)
//
// dst[i] = safetensors.F32ToBF16(src[i]) for i < n, n a multiple of 8, in
// integer lanes: b + 0x7fff + (b>>16)&1, the high half (nearest, ties to
// even), or for a NaN (b&0x7fffffff > 0x7f800000) b>>16 | 0x40 (quiet, its
// sign and top payload bits), then packed to 16 bits (TestF32ToBF16AVX2).
TEXT ·f32ToBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   bdone
	VPBROADCASTD bf16c<>+0(SB), Y8  // abs mask
	VPBROADCASTD bf16c<>+4(SB), Y9  // +Inf
	VPBROADCASTD bf16c<>+8(SB), Y10 // 0x7fff
	VPBROADCASTD bf16c<>+12(SB), Y11 // 1
	VPBROADCASTD bf16c<>+16(SB), Y12 // quiet bit

bloop:
	VMOVDQU  (SI), Y0
	VPAND    Y8, Y0, Y1
	VPCMPGTD Y9, Y1, Y1       // NaN lanes
	VPSRLD   $16, Y0, Y2      // b>>16
	VPAND    Y11, Y2, Y3
	VPADDD   Y10, Y3, Y3
	VPADDD   Y0, Y3, Y3
	VPSRLD   $16, Y3, Y3      // rounded
	VPOR     Y12, Y2, Y2      // the NaN's bits
	VPBLENDVB Y1, Y2, Y3, Y3
	VEXTRACTI128 $1, Y3, X4
	VPACKUSDW X4, X3, X3
	VMOVDQU  X3, (DI)
	ADDQ     $32, SI
	ADDQ     $16, DI
	DECQ     CX
	JNZ      bloop

bdone:
	VZEROUPPER
	RET
