//go:build !purego

#include "textflag.h"
#include "zero_amd64.h"

// The bf16 dot product kernels (AVX512_BF16), in MatMulTBF16Dot's
// canonical order: each output's 16 lanes take VDPBF16PS on the 32-value
// chunks in increasing order, then HSUMZ reduces the lanes.
//
// The Go assembler has no VDPBF16PS mnemonic: each one is its EVEX
// encoding (EVEX.512.F3.0F38.W0 52 /r, register operands only) in BYTEs,
// the instruction in the comment after it (Go operand order: src2, src1,
// dst); TestMatMulTBF16Dot checks the kernels against the portable code.

// HSUMZ(Z, Y, X, DST): DST (a float32 in memory) = the lanes of Z reduced
// as s8[i] = z[i] + z[i+8], s4[i] = s8[i] + s8[i+4], s2[i] = s4[i] +
// s4[i+2], s2[0] + s2[1] (Y and X: Z's lower halves). Clobbers X29, X30.
#define HSUMZ(Z, Y, DST) \
	VEXTRACTF32X8 $1, Z, Y29;     \
	VADDPS        Y29, Y, Y29;    \
	VEXTRACTF32X4 $1, Y29, X30;   \
	VADDPS        X30, X29, X29;  \
	VPERMILPS     $0x0E, X29, X30; \
	VADDPS        X30, X29, X29;  \
	VPERMILPS     $0x01, X29, X30; \
	VADDSS        X30, X29, X29;  \
	VMOVSS        X29, DST

// func bf16Dot1x8AVX512(x *uint16, w *uint16, ldw, k, ntiles int, y *float32)
//
// For t < ntiles, c < 8: y[8t+c] = dot(x[0:k], w[(8t+c)*ldw:][0:k]), k a
// positive multiple of 32, all bf16.
TEXT ·bf16Dot1x8AVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), AX
	MOVQ ldw+16(FP), BX
	SHLQ $1, BX               // ldw bytes
	LEAQ (BX)(BX*2), R9       // 3*ldw
	MOVQ y+40(FP), DX
	MOVQ ntiles+32(FP), DI
	CMPQ DI, $0
	JLE  bd18ret

bd18tile:
	LEAQ   (AX)(BX*4), R8     // column 4
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	MOVQ   k+24(FP), CX
	SHRQ   $5, CX             // chunks
	XORQ   R11, R11           // byte offset in the rows

bd18loop:
	VMOVDQU16  (SI)(R11*1), Z8
	VMOVDQU16  (AX)(R11*1), Z9
	BYTE $0x62; BYTE $0xd2; BYTE $0x3e; BYTE $0x48; BYTE $0x52; BYTE $0xc1 // VDPBF16PS Z9, Z8, Z0
	LEAQ       (AX)(BX*1), R10
	VMOVDQU16  (R10)(R11*1), Z9
	BYTE $0x62; BYTE $0xd2; BYTE $0x3e; BYTE $0x48; BYTE $0x52; BYTE $0xc9 // VDPBF16PS Z9, Z8, Z1
	LEAQ       (AX)(BX*2), R10
	VMOVDQU16  (R10)(R11*1), Z9
	BYTE $0x62; BYTE $0xd2; BYTE $0x3e; BYTE $0x48; BYTE $0x52; BYTE $0xd1 // VDPBF16PS Z9, Z8, Z2
	LEAQ       (AX)(R9*1), R10
	VMOVDQU16  (R10)(R11*1), Z9
	BYTE $0x62; BYTE $0xd2; BYTE $0x3e; BYTE $0x48; BYTE $0x52; BYTE $0xd9 // VDPBF16PS Z9, Z8, Z3
	VMOVDQU16  (R8)(R11*1), Z9
	BYTE $0x62; BYTE $0xd2; BYTE $0x3e; BYTE $0x48; BYTE $0x52; BYTE $0xe1 // VDPBF16PS Z9, Z8, Z4
	LEAQ       (R8)(BX*1), R10
	VMOVDQU16  (R10)(R11*1), Z9
	BYTE $0x62; BYTE $0xd2; BYTE $0x3e; BYTE $0x48; BYTE $0x52; BYTE $0xe9 // VDPBF16PS Z9, Z8, Z5
	LEAQ       (R8)(BX*2), R10
	VMOVDQU16  (R10)(R11*1), Z9
	BYTE $0x62; BYTE $0xd2; BYTE $0x3e; BYTE $0x48; BYTE $0x52; BYTE $0xf1 // VDPBF16PS Z9, Z8, Z6
	LEAQ       (R8)(R9*1), R10
	VMOVDQU16  (R10)(R11*1), Z9
	BYTE $0x62; BYTE $0xd2; BYTE $0x3e; BYTE $0x48; BYTE $0x52; BYTE $0xf9 // VDPBF16PS Z9, Z8, Z7
	ADDQ       $64, R11
	DECQ       CX
	JNZ        bd18loop

	HSUMZ(Z0, Y0, 0(DX))
	HSUMZ(Z1, Y1, 4(DX))
	HSUMZ(Z2, Y2, 8(DX))
	HSUMZ(Z3, Y3, 12(DX))
	HSUMZ(Z4, Y4, 16(DX))
	HSUMZ(Z5, Y5, 20(DX))
	HSUMZ(Z6, Y6, 24(DX))
	HSUMZ(Z7, Y7, 28(DX))

	LEAQ (R8)(BX*4), AX       // the next 8 columns
	ADDQ $32, DX
	DECQ DI
	JNZ  bd18tile

bd18ret:
	VZEROUPPER
	RET

// func bf16Dot4x6AVX512(x *uint16, ldx int, w *uint16, ldw, k, ntiles int, y *float32, ldy int)
//
// For t < ntiles, r < 4, c < 6: y[r*ldy + 6t+c] = dot(x[r*ldx:][0:k],
// w[(6t+c)*ldw:][0:k]), k a positive multiple of 32, all bf16.
// Accumulator of (r, c): Z(6r+c).
TEXT ·bf16Dot4x6AVX512(SB), NOSPLIT, $0-64
	MOVQ  ldx+8(FP), R12
	SHLQ  $1, R12             // ldx bytes
	MOVQ  w+16(FP), AX
	MOVQ  ldw+24(FP), BX
	SHLQ  $1, BX              // ldw bytes
	LEAQ  (BX)(BX*2), R9      // 3*ldw
	MOVQ  y+48(FP), DX
	MOVQ  ldy+56(FP), DI
	SHLQ  $2, DI              // ldy bytes
	CMPQ  ntiles+40(FP), $0
	JLE   bd46ret
	MOVQ  ntiles+40(FP), R15

bd46tile:
	MOVQ   x+0(FP), SI
	LEAQ   (SI)(R12*1), R13   // row 1
	LEAQ   (R13)(R12*1), R14  // row 2
	LEAQ   (R14)(R12*1), R10  // row 3
	MOVQ   AX, R11            // column 0, advanced per chunk
	ZERO24
	MOVQ   k+32(FP), CX
	SHRQ   $5, CX             // chunks

bd46loop:
	VMOVDQU16 (SI), Z24
	VMOVDQU16 (R13), Z25
	VMOVDQU16 (R14), Z26
	VMOVDQU16 (R10), Z27
	LEAQ      (R11)(BX*4), R8 // column 4
	VMOVDQU16 (R11), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xc4 // VDPBF16PS Z28, Z24, Z0
	BYTE $0x62; BYTE $0x92; BYTE $0x36; BYTE $0x40; BYTE $0x52; BYTE $0xf4 // VDPBF16PS Z28, Z25, Z6
	BYTE $0x62; BYTE $0x12; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xe4 // VDPBF16PS Z28, Z26, Z12
	BYTE $0x62; BYTE $0x82; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xd4 // VDPBF16PS Z28, Z27, Z18
	VMOVDQU16 (R11)(BX*1), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xcc // VDPBF16PS Z28, Z24, Z1
	BYTE $0x62; BYTE $0x92; BYTE $0x36; BYTE $0x40; BYTE $0x52; BYTE $0xfc // VDPBF16PS Z28, Z25, Z7
	BYTE $0x62; BYTE $0x12; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xec // VDPBF16PS Z28, Z26, Z13
	BYTE $0x62; BYTE $0x82; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xdc // VDPBF16PS Z28, Z27, Z19
	VMOVDQU16 (R11)(BX*2), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xd4 // VDPBF16PS Z28, Z24, Z2
	BYTE $0x62; BYTE $0x12; BYTE $0x36; BYTE $0x40; BYTE $0x52; BYTE $0xc4 // VDPBF16PS Z28, Z25, Z8
	BYTE $0x62; BYTE $0x12; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xf4 // VDPBF16PS Z28, Z26, Z14
	BYTE $0x62; BYTE $0x82; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xe4 // VDPBF16PS Z28, Z27, Z20
	VMOVDQU16 (R11)(R9*1), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xdc // VDPBF16PS Z28, Z24, Z3
	BYTE $0x62; BYTE $0x12; BYTE $0x36; BYTE $0x40; BYTE $0x52; BYTE $0xcc // VDPBF16PS Z28, Z25, Z9
	BYTE $0x62; BYTE $0x12; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xfc // VDPBF16PS Z28, Z26, Z15
	BYTE $0x62; BYTE $0x82; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xec // VDPBF16PS Z28, Z27, Z21
	VMOVDQU16 (R8), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xe4 // VDPBF16PS Z28, Z24, Z4
	BYTE $0x62; BYTE $0x12; BYTE $0x36; BYTE $0x40; BYTE $0x52; BYTE $0xd4 // VDPBF16PS Z28, Z25, Z10
	BYTE $0x62; BYTE $0x82; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xc4 // VDPBF16PS Z28, Z26, Z16
	BYTE $0x62; BYTE $0x82; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xf4 // VDPBF16PS Z28, Z27, Z22
	VMOVDQU16 (R8)(BX*1), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xec // VDPBF16PS Z28, Z24, Z5
	BYTE $0x62; BYTE $0x12; BYTE $0x36; BYTE $0x40; BYTE $0x52; BYTE $0xdc // VDPBF16PS Z28, Z25, Z11
	BYTE $0x62; BYTE $0x82; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xcc // VDPBF16PS Z28, Z26, Z17
	BYTE $0x62; BYTE $0x82; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xfc // VDPBF16PS Z28, Z27, Z23
	ADDQ      $64, SI
	ADDQ      $64, R13
	ADDQ      $64, R14
	ADDQ      $64, R10
	ADDQ      $64, R11
	DECQ      CX
	JNZ       bd46loop

	LEAQ  (DX)(DI*1), R13     // output row 1
	LEAQ  (R13)(DI*1), R14    // row 2
	LEAQ  (R14)(DI*1), R10    // row 3
	HSUMZ(Z0, Y0, 0(DX))
	HSUMZ(Z1, Y1, 4(DX))
	HSUMZ(Z2, Y2, 8(DX))
	HSUMZ(Z3, Y3, 12(DX))
	HSUMZ(Z4, Y4, 16(DX))
	HSUMZ(Z5, Y5, 20(DX))
	HSUMZ(Z6, Y6, 0(R13))
	HSUMZ(Z7, Y7, 4(R13))
	HSUMZ(Z8, Y8, 8(R13))
	HSUMZ(Z9, Y9, 12(R13))
	HSUMZ(Z10, Y10, 16(R13))
	HSUMZ(Z11, Y11, 20(R13))
	HSUMZ(Z12, Y12, 0(R14))
	HSUMZ(Z13, Y13, 4(R14))
	HSUMZ(Z14, Y14, 8(R14))
	HSUMZ(Z15, Y15, 12(R14))
	HSUMZ(Z16, Y16, 16(R14))
	HSUMZ(Z17, Y17, 20(R14))
	HSUMZ(Z18, Y18, 0(R10))
	HSUMZ(Z19, Y19, 4(R10))
	HSUMZ(Z20, Y20, 8(R10))
	HSUMZ(Z21, Y21, 12(R10))
	HSUMZ(Z22, Y22, 16(R10))
	HSUMZ(Z23, Y23, 20(R10))

	LEAQ (AX)(BX*4), AX
	LEAQ (AX)(BX*2), AX       // the next 6 columns
	ADDQ $24, DX
	DECQ R15
	JNZ  bd46tile

bd46ret:
	VZEROUPPER
	RET

// func bf16DotLoopAVX512(iters int)
//
// iters iterations of 12 VDPBF16PS on 12 independent accumulators (768
// flops: 32 pair products and their sums an instruction), in registers:
// the bf16 dot product's peak (MeasurePeakBF16DotGFLOPS). On the Intel
// Xeon kind it issued 1.9 G instructions a second a core against 7.5 G
// for the same loop of FMAs (the same with 24 chains: a throughput, not a
// latency), so its 32 multiply-adds an instruction give half the FMAs'
// (bf16dot is slower than the exact path there).
TEXT ·bf16DotLoopAVX512(SB), NOSPLIT, $0-8
	MOVQ   iters+0(FP), CX
	ZERO12
	VPXORD Z24, Z24, Z24
	VPXORD Z28, Z28, Z28
	TESTQ  CX, CX
	JLE    bdlret

bdlloop:
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xc4 // VDPBF16PS Z28, Z24, Z0
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xcc // VDPBF16PS Z28, Z24, Z1
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xd4 // VDPBF16PS Z28, Z24, Z2
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xdc // VDPBF16PS Z28, Z24, Z3
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xe4 // VDPBF16PS Z28, Z24, Z4
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xec // VDPBF16PS Z28, Z24, Z5
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xf4 // VDPBF16PS Z28, Z24, Z6
	BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xfc // VDPBF16PS Z28, Z24, Z7
	BYTE $0x62; BYTE $0x12; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xc4 // VDPBF16PS Z28, Z24, Z8
	BYTE $0x62; BYTE $0x12; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xcc // VDPBF16PS Z28, Z24, Z9
	BYTE $0x62; BYTE $0x12; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xd4 // VDPBF16PS Z28, Z24, Z10
	BYTE $0x62; BYTE $0x12; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xdc // VDPBF16PS Z28, Z24, Z11
	DECQ CX
	JNZ  bdlloop

bdlret:
	VZEROUPPER
	RET
