//go:build !purego

#include "textflag.h"
#include "rows8_amd64.h"

// maskTab: 8 lanes of all-ones then 8 lanes of zero. The mask for the first
// r lanes (0 < r < 8) is the 8 words starting at maskTab + (8-r)*4.
DATA maskTab<>+0(SB)/4, $0xffffffff
DATA maskTab<>+4(SB)/4, $0xffffffff
DATA maskTab<>+8(SB)/4, $0xffffffff
DATA maskTab<>+12(SB)/4, $0xffffffff
DATA maskTab<>+16(SB)/4, $0xffffffff
DATA maskTab<>+20(SB)/4, $0xffffffff
DATA maskTab<>+24(SB)/4, $0xffffffff
DATA maskTab<>+28(SB)/4, $0xffffffff
DATA maskTab<>+32(SB)/4, $0
DATA maskTab<>+36(SB)/4, $0
DATA maskTab<>+40(SB)/4, $0
DATA maskTab<>+44(SB)/4, $0
DATA maskTab<>+48(SB)/4, $0
DATA maskTab<>+52(SB)/4, $0
DATA maskTab<>+56(SB)/4, $0
DATA maskTab<>+60(SB)/4, $0
GLOBL maskTab<>(SB), RODATA|NOPTR, $64

// HSUM reduces the 8 lanes l0..l7 of Y (X is its low half) into the low
// float of X as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). T is a temporary.
#define HSUM(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS       T, X, X;  \
	VMOVHLPS     X, X, T;  \
	VADDPS       T, X, X;  \
	VMOVSHDUP    X, T;     \
	VADDSS       T, X, X

#include "hsum8_amd64.h"

// GB18PAIR(A, B, T0, T1, C0, C1): two rows' 8 bf16 weights at (A) and
// (B) (DX bytes on) widened into T0 and T1, times the input in Y8, added
// to the rows' accumulators C0 and C1.
#define GB18PAIR(A, B, T0, T1, C0, C1) \
	VPMOVZXWD   (A)(DX*1), T0; \
	VPMOVZXWD   (B)(DX*1), T1; \
	VPSLLD      $16, T0, T0; \
	VPSLLD      $16, T1, T1; \
	VFMADD231PS T0, Y8, C0; \
	VFMADD231PS T1, Y8, C1

// GB18BODY(TILE, LOOP, RET_, PF): gemv1x8BF16AVX2 (TILE, LOOP and RET_
// its labels) with the prefetch instruction PF.
#define GB18BODY(TILE, LOOP, RET_, PF) \
	MOVQ x+0(FP), SI; \
	MOVQ w+8(FP), AX; \
	MOVQ ldw+16(FP), R13; \
	SHLQ $1, R13; \
	ROWS8PTRS; \
	SHLQ $3, R13; \
	MOVQ k+24(FP), R12; \
	SHLQ $1, R12; \
	MOVQ y+40(FP), R14; \
	CMPQ ntiles+32(FP), $0; \
	JLE  RET_; \
TILE:; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	XORQ   DX, DX; \
	LEAQ   (AX)(R13*1), R15; \
LOOP:; \
	PF          (R15)(DX*8); \
	PF          64(R15)(DX*8); \
	VMOVUPS     (SI)(DX*2), Y8; \
	GB18PAIR(AX, BX, Y9, Y10, Y0, Y1); \
	GB18PAIR(CX, DI, Y11, Y12, Y2, Y3); \
	GB18PAIR(R8, R9, Y9, Y10, Y4, Y5); \
	GB18PAIR(R10, R11, Y11, Y12, Y6, Y7); \
	ADDQ        $16, DX; \
	CMPQ        DX, R12; \
	JB          LOOP; \
	HSUM8((R14)); \
	ADDQ $32, R14; \
	ROWS8NEXT; \
	DECQ ntiles+32(FP); \
	JNZ  TILE; \
RET_:; \
	VZEROUPPER; \
	RET

// func gemm4x3AVX2(x0, x1, x2, x3, w *float32, ldw, k, ntiles int, y0, y1, y2, y3 *float32)
//
// For t < ntiles, r < 4, c < 3: y_r[3t+c] = dot(x_r[0:k], w[(3t+c)*ldw:][0:k]).
// Per dot: 8 lane accumulators; lane l starts as x[8C+l]*w[8C+l] (the
// k%8 tail, C = k/8; 0 for lanes beyond the tail), then for chunks
// c = 0..C-1: acc_l = fma(x[8c+l], w[8c+l], acc_l); then HSUM.
TEXT ·gemm4x3AVX2(SB), NOSPLIT, $0-96
	MOVQ x0+0(FP), SI
	MOVQ x1+8(FP), DI
	MOVQ x2+16(FP), R8
	MOVQ x3+24(FP), R9
	MOVQ w+32(FP), AX
	MOVQ ldw+40(FP), R11
	SHLQ $2, R11
	LEAQ (AX)(R11*1), BX
	LEAQ (BX)(R11*1), CX
	LEAQ (R11)(R11*2), R11 // tile advance: 3*ldw bytes
	MOVQ k+48(FP), R10
	MOVQ R10, DX
	ANDQ $7, DX
	NEGQ DX
	ADDQ $8, DX
	LEAQ maskTab<>(SB), R14
	LEAQ (R14)(DX*4), R14  // tail mask address
	ANDQ $-8, R10
	SHLQ $2, R10           // main part in bytes
	MOVQ ntiles+56(FP), R12
	XORQ R13, R13          // output byte offset
	TESTQ R12, R12
	JLE  g43ret

g43tile:
	MOVQ k+48(FP), DX
	ANDQ $7, DX
	JZ   g43zero
	VMOVDQU    (R14), Y15
	VMASKMOVPS (AX)(R10*1), Y15, Y12
	VMASKMOVPS (BX)(R10*1), Y15, Y13
	VMASKMOVPS (CX)(R10*1), Y15, Y14
	VMASKMOVPS (SI)(R10*1), Y15, Y11
	VMULPS     Y11, Y12, Y0
	VMULPS     Y11, Y13, Y1
	VMULPS     Y11, Y14, Y2
	VMASKMOVPS (DI)(R10*1), Y15, Y11
	VMULPS     Y11, Y12, Y3
	VMULPS     Y11, Y13, Y4
	VMULPS     Y11, Y14, Y5
	VMASKMOVPS (R8)(R10*1), Y15, Y11
	VMULPS     Y11, Y12, Y6
	VMULPS     Y11, Y13, Y7
	VMULPS     Y11, Y14, Y8
	VMASKMOVPS (R9)(R10*1), Y15, Y11
	VMULPS     Y11, Y12, Y9
	VMULPS     Y11, Y13, Y10
	VMULPS     Y11, Y14, Y11
	JMP        g43main

g43zero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

g43main:
	XORQ DX, DX
	CMPQ DX, R10
	JAE  g43done

g43loop:
	VMOVUPS     (AX)(DX*1), Y12
	VMOVUPS     (BX)(DX*1), Y13
	VMOVUPS     (CX)(DX*1), Y14
	VMOVUPS     (SI)(DX*1), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y1
	VFMADD231PS Y15, Y14, Y2
	VMOVUPS     (DI)(DX*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y5
	VMOVUPS     (R8)(DX*1), Y15
	VFMADD231PS Y15, Y12, Y6
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS     (R9)(DX*1), Y15
	VFMADD231PS Y15, Y12, Y9
	VFMADD231PS Y15, Y13, Y10
	VFMADD231PS Y15, Y14, Y11
	ADDQ        $32, DX
	CMPQ        DX, R10
	JB          g43loop

g43done:
	MOVQ y0+64(FP), DX
	HSUM(Y0, X0, X12)
	VMOVSS X0, (DX)(R13*1)
	HSUM(Y1, X1, X12)
	VMOVSS X1, 4(DX)(R13*1)
	HSUM(Y2, X2, X12)
	VMOVSS X2, 8(DX)(R13*1)
	MOVQ   y1+72(FP), DX
	HSUM(Y3, X3, X12)
	VMOVSS X3, (DX)(R13*1)
	HSUM(Y4, X4, X12)
	VMOVSS X4, 4(DX)(R13*1)
	HSUM(Y5, X5, X12)
	VMOVSS X5, 8(DX)(R13*1)
	MOVQ   y2+80(FP), DX
	HSUM(Y6, X6, X12)
	VMOVSS X6, (DX)(R13*1)
	HSUM(Y7, X7, X12)
	VMOVSS X7, 4(DX)(R13*1)
	HSUM(Y8, X8, X12)
	VMOVSS X8, 8(DX)(R13*1)
	MOVQ   y3+88(FP), DX
	HSUM(Y9, X9, X12)
	VMOVSS X9, (DX)(R13*1)
	HSUM(Y10, X10, X12)
	VMOVSS X10, 4(DX)(R13*1)
	HSUM(Y11, X11, X12)
	VMOVSS X11, 8(DX)(R13*1)

	ADDQ $12, R13
	ADDQ R11, AX
	ADDQ R11, BX
	ADDQ R11, CX
	DECQ R12
	JNZ  g43tile

g43ret:
	VZEROUPPER
	RET

// func gemv1x8AVX2(x, w *float32, ldw, k, ntiles int, y *float32)
//
// For t < ntiles, c < 8: y[8t+c] = dot(x[0:k], w[(8t+c)*ldw:][0:k]), same
// per-dot order as gemm4x3AVX2.
TEXT ·gemv1x8AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), AX
	MOVQ ldw+16(FP), R13
	SHLQ $2, R13
	ROWS8PTRS
	SHLQ $3, R13           // tile advance: 8*ldw bytes
	MOVQ k+24(FP), R12
	MOVQ R12, DX
	ANDQ $7, DX
	NEGQ DX
	ADDQ $8, DX
	LEAQ maskTab<>(SB), R14
	VMOVDQU (R14)(DX*4), Y15 // tail mask
	ANDQ $-8, R12
	SHLQ $2, R12           // main part in bytes
	MOVQ y+40(FP), R14
	CMPQ ntiles+32(FP), $0
	JLE  g18ret

g18tile:
	MOVQ k+24(FP), DX
	ANDQ $7, DX
	JZ   g18zero
	VMASKMOVPS (SI)(R12*1), Y15, Y8
	VMASKMOVPS (AX)(R12*1), Y15, Y0
	VMASKMOVPS (BX)(R12*1), Y15, Y1
	VMASKMOVPS (CX)(R12*1), Y15, Y2
	VMASKMOVPS (DI)(R12*1), Y15, Y3
	VMASKMOVPS (R8)(R12*1), Y15, Y4
	VMASKMOVPS (R9)(R12*1), Y15, Y5
	VMASKMOVPS (R10)(R12*1), Y15, Y6
	VMASKMOVPS (R11)(R12*1), Y15, Y7
	VMULPS     Y8, Y0, Y0
	VMULPS     Y8, Y1, Y1
	VMULPS     Y8, Y2, Y2
	VMULPS     Y8, Y3, Y3
	VMULPS     Y8, Y4, Y4
	VMULPS     Y8, Y5, Y5
	VMULPS     Y8, Y6, Y6
	VMULPS     Y8, Y7, Y7
	JMP        g18main

g18zero:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

g18main:
	XORQ DX, DX
	CMPQ DX, R12
	JAE  g18done

g18loop:
	VMOVUPS     (SI)(DX*1), Y8
	VFMADD231PS (AX)(DX*1), Y8, Y0
	VFMADD231PS (BX)(DX*1), Y8, Y1
	VFMADD231PS (CX)(DX*1), Y8, Y2
	VFMADD231PS (DI)(DX*1), Y8, Y3
	VFMADD231PS (R8)(DX*1), Y8, Y4
	VFMADD231PS (R9)(DX*1), Y8, Y5
	VFMADD231PS (R10)(DX*1), Y8, Y6
	VFMADD231PS (R11)(DX*1), Y8, Y7
	ADDQ        $32, DX
	CMPQ        DX, R12
	JB          g18loop

g18done:
	HSUM8((R14))

	ADDQ $32, R14
	ROWS8NEXT
	DECQ ntiles+32(FP)
	JNZ  g18tile

g18ret:
	VZEROUPPER
	RET

// func dotAVX2(x, w *float32, k int) float32
//
// dot(x[0:k], w[0:k]) in the same order as gemm4x3AVX2.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), AX
	MOVQ k+16(FP), R12
	MOVQ R12, DX
	ANDQ $7, DX
	ANDQ $-8, R12
	SHLQ $2, R12
	TESTQ DX, DX
	JZ   d1zero
	NEGQ DX
	ADDQ $8, DX
	LEAQ maskTab<>(SB), R14
	VMOVDQU    (R14)(DX*4), Y15
	VMASKMOVPS (SI)(R12*1), Y15, Y8
	VMASKMOVPS (AX)(R12*1), Y15, Y0
	VMULPS     Y8, Y0, Y0
	JMP        d1main

d1zero:
	VXORPS Y0, Y0, Y0

d1main:
	XORQ DX, DX
	CMPQ DX, R12
	JAE  d1done

d1loop:
	VMOVUPS     (SI)(DX*1), Y8
	VFMADD231PS (AX)(DX*1), Y8, Y0
	ADDQ        $32, DX
	CMPQ        DX, R12
	JB          d1loop

d1done:
	HSUM(Y0, X0, X9)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func wsumAVX2(out, p, v *float32, ldv, t, d, acc int)
//
// out[c] = a + sum over s < t of p[s]*v[s*ldv+c], for c < d, with a = 0 if
// acc == 0 and a = out[c] on entry otherwise. Per element the order is
// fixed: for s = 0..t-1: a = fma(p[s], v[s*ldv+c], a).
TEXT ·wsumAVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), AX
	MOVQ ldv+24(FP), R8
	SHLQ $2, R8
	MOVQ t+32(FP), R9
	MOVQ d+40(FP), R10

ws64:
	CMPQ   R10, $64
	JB     ws8
	CMPQ   acc+48(FP), $0
	JNE    ws64load
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	JMP    ws64go

ws64load:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7

ws64go:
	MOVQ   AX, BX
	XORQ   CX, CX
	TESTQ  R9, R9
	JZ     ws64st

ws64loop:
	PREFETCHT0   256(BX)         // the next block's four lines of this row (read by the next pass)
	PREFETCHT0   320(BX)
	PREFETCHT0   384(BX)
	PREFETCHT0   448(BX)
	VBROADCASTSS (SI)(CX*4), Y8
	VFMADD231PS  (BX), Y8, Y0
	VFMADD231PS  32(BX), Y8, Y1
	VFMADD231PS  64(BX), Y8, Y2
	VFMADD231PS  96(BX), Y8, Y3
	VFMADD231PS  128(BX), Y8, Y4
	VFMADD231PS  160(BX), Y8, Y5
	VFMADD231PS  192(BX), Y8, Y6
	VFMADD231PS  224(BX), Y8, Y7
	ADDQ         R8, BX
	INCQ         CX
	CMPQ         CX, R9
	JB           ws64loop

ws64st:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ    $256, AX
	ADDQ    $256, DI
	SUBQ    $64, R10
	JMP     ws64

ws8:
	CMPQ   R10, $8
	JB     wstail
	VXORPS Y0, Y0, Y0
	CMPQ   acc+48(FP), $0
	JE     ws8go
	VMOVUPS (DI), Y0

ws8go:
	MOVQ   AX, BX
	XORQ   CX, CX
	TESTQ  R9, R9
	JZ     ws8st

ws8loop:
	VBROADCASTSS (SI)(CX*4), Y8
	VFMADD231PS  (BX), Y8, Y0
	ADDQ         R8, BX
	INCQ         CX
	CMPQ         CX, R9
	JB           ws8loop

ws8st:
	VMOVUPS Y0, (DI)
	ADDQ    $32, AX
	ADDQ    $32, DI
	SUBQ    $8, R10
	JMP     ws8

wstail:
	TESTQ  R10, R10
	JZ     wsret
	MOVQ   $8, DX
	SUBQ   R10, DX
	LEAQ   maskTab<>(SB), R11
	VMOVDQU (R11)(DX*4), Y15
	VXORPS Y0, Y0, Y0
	CMPQ   acc+48(FP), $0
	JE     wstailgo
	VMASKMOVPS (DI), Y15, Y0

wstailgo:
	MOVQ   AX, BX
	XORQ   CX, CX
	TESTQ  R9, R9
	JZ     wstailst

wstailloop:
	VBROADCASTSS (SI)(CX*4), Y8
	VMASKMOVPS   (BX), Y15, Y9
	VFMADD231PS  Y9, Y8, Y0
	ADDQ         R8, BX
	INCQ         CX
	CMPQ         CX, R9
	JB           wstailloop

wstailst:
	VMASKMOVPS Y0, Y15, (DI)

wsret:
	VZEROUPPER
	RET

// func fmaLoopAVX2(iters int)
//
// A register-only loop of 12 independent 8-wide FMAs per iteration
// (192 flops per iteration), for MeasurePeakGFLOPS.
TEXT ·fmaLoopAVX2(SB), NOSPLIT, $0-8
	MOVQ   iters+0(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	TESTQ  CX, CX
	JLE    fmaret

fmaloop:
	VFMADD231PS Y12, Y13, Y0
	VFMADD231PS Y12, Y13, Y1
	VFMADD231PS Y12, Y13, Y2
	VFMADD231PS Y12, Y13, Y3
	VFMADD231PS Y12, Y13, Y4
	VFMADD231PS Y12, Y13, Y5
	VFMADD231PS Y12, Y13, Y6
	VFMADD231PS Y12, Y13, Y7
	VFMADD231PS Y12, Y13, Y8
	VFMADD231PS Y12, Y13, Y9
	VFMADD231PS Y12, Y13, Y10
	VFMADD231PS Y12, Y13, Y11
	DECQ        CX
	JNZ         fmaloop

fmaret:
	VZEROUPPER
	RET

// func sumAVX2(p *float32, n int) float32
//
// Sum of p[0:n], n a multiple of 64, with 8 vector accumulators (used only
// to measure read bandwidth).
TEXT ·sumAVX2(SB), NOSPLIT, $0-20
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	SHLQ   $2, CX
	ADDQ   SI, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	CMPQ   SI, CX
	JAE    sumdone

sumloop:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	VADDPS 128(SI), Y4, Y4
	VADDPS 160(SI), Y5, Y5
	VADDPS 192(SI), Y6, Y6
	VADDPS 224(SI), Y7, Y7
	ADDQ   $256, SI
	CMPQ   SI, CX
	JB     sumloop

sumdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y5, Y4, Y4
	VADDPS Y7, Y6, Y6
	VADDPS Y2, Y0, Y0
	VADDPS Y6, Y4, Y4
	VADDPS Y4, Y0, Y0
	HSUM(Y0, X0, X9)
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// Constants of the vector expf, 8 lanes each (see expf in elementwise.go).

DATA expLog2e<>+0(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+4(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+8(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+12(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+16(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+20(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+24(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL expLog2e<>(SB), RODATA|NOPTR, $32

DATA expMagic<>+0(SB)/4, $0x4b400000
DATA expMagic<>+4(SB)/4, $0x4b400000
DATA expMagic<>+8(SB)/4, $0x4b400000
DATA expMagic<>+12(SB)/4, $0x4b400000
DATA expMagic<>+16(SB)/4, $0x4b400000
DATA expMagic<>+20(SB)/4, $0x4b400000
DATA expMagic<>+24(SB)/4, $0x4b400000
DATA expMagic<>+28(SB)/4, $0x4b400000
GLOBL expMagic<>(SB), RODATA|NOPTR, $32

DATA expC1<>+0(SB)/4, $0x3f318000
DATA expC1<>+4(SB)/4, $0x3f318000
DATA expC1<>+8(SB)/4, $0x3f318000
DATA expC1<>+12(SB)/4, $0x3f318000
DATA expC1<>+16(SB)/4, $0x3f318000
DATA expC1<>+20(SB)/4, $0x3f318000
DATA expC1<>+24(SB)/4, $0x3f318000
DATA expC1<>+28(SB)/4, $0x3f318000
GLOBL expC1<>(SB), RODATA|NOPTR, $32

DATA expC2<>+0(SB)/4, $0xb95e8083
DATA expC2<>+4(SB)/4, $0xb95e8083
DATA expC2<>+8(SB)/4, $0xb95e8083
DATA expC2<>+12(SB)/4, $0xb95e8083
DATA expC2<>+16(SB)/4, $0xb95e8083
DATA expC2<>+20(SB)/4, $0xb95e8083
DATA expC2<>+24(SB)/4, $0xb95e8083
DATA expC2<>+28(SB)/4, $0xb95e8083
GLOBL expC2<>(SB), RODATA|NOPTR, $32

DATA expP0<>+0(SB)/4, $0x39506967
DATA expP0<>+4(SB)/4, $0x39506967
DATA expP0<>+8(SB)/4, $0x39506967
DATA expP0<>+12(SB)/4, $0x39506967
DATA expP0<>+16(SB)/4, $0x39506967
DATA expP0<>+20(SB)/4, $0x39506967
DATA expP0<>+24(SB)/4, $0x39506967
DATA expP0<>+28(SB)/4, $0x39506967
GLOBL expP0<>(SB), RODATA|NOPTR, $32

DATA expP1<>+0(SB)/4, $0x3ab743ce
DATA expP1<>+4(SB)/4, $0x3ab743ce
DATA expP1<>+8(SB)/4, $0x3ab743ce
DATA expP1<>+12(SB)/4, $0x3ab743ce
DATA expP1<>+16(SB)/4, $0x3ab743ce
DATA expP1<>+20(SB)/4, $0x3ab743ce
DATA expP1<>+24(SB)/4, $0x3ab743ce
DATA expP1<>+28(SB)/4, $0x3ab743ce
GLOBL expP1<>(SB), RODATA|NOPTR, $32

DATA expP2<>+0(SB)/4, $0x3c088908
DATA expP2<>+4(SB)/4, $0x3c088908
DATA expP2<>+8(SB)/4, $0x3c088908
DATA expP2<>+12(SB)/4, $0x3c088908
DATA expP2<>+16(SB)/4, $0x3c088908
DATA expP2<>+20(SB)/4, $0x3c088908
DATA expP2<>+24(SB)/4, $0x3c088908
DATA expP2<>+28(SB)/4, $0x3c088908
GLOBL expP2<>(SB), RODATA|NOPTR, $32

DATA expP3<>+0(SB)/4, $0x3d2aa9c1
DATA expP3<>+4(SB)/4, $0x3d2aa9c1
DATA expP3<>+8(SB)/4, $0x3d2aa9c1
DATA expP3<>+12(SB)/4, $0x3d2aa9c1
DATA expP3<>+16(SB)/4, $0x3d2aa9c1
DATA expP3<>+20(SB)/4, $0x3d2aa9c1
DATA expP3<>+24(SB)/4, $0x3d2aa9c1
DATA expP3<>+28(SB)/4, $0x3d2aa9c1
GLOBL expP3<>(SB), RODATA|NOPTR, $32

DATA expP4<>+0(SB)/4, $0x3e2aaaaa
DATA expP4<>+4(SB)/4, $0x3e2aaaaa
DATA expP4<>+8(SB)/4, $0x3e2aaaaa
DATA expP4<>+12(SB)/4, $0x3e2aaaaa
DATA expP4<>+16(SB)/4, $0x3e2aaaaa
DATA expP4<>+20(SB)/4, $0x3e2aaaaa
DATA expP4<>+24(SB)/4, $0x3e2aaaaa
DATA expP4<>+28(SB)/4, $0x3e2aaaaa
GLOBL expP4<>(SB), RODATA|NOPTR, $32

DATA expP5<>+0(SB)/4, $0x3f000000
DATA expP5<>+4(SB)/4, $0x3f000000
DATA expP5<>+8(SB)/4, $0x3f000000
DATA expP5<>+12(SB)/4, $0x3f000000
DATA expP5<>+16(SB)/4, $0x3f000000
DATA expP5<>+20(SB)/4, $0x3f000000
DATA expP5<>+24(SB)/4, $0x3f000000
DATA expP5<>+28(SB)/4, $0x3f000000
GLOBL expP5<>(SB), RODATA|NOPTR, $32

DATA expOne<>+0(SB)/4, $0x3f800000
DATA expOne<>+4(SB)/4, $0x3f800000
DATA expOne<>+8(SB)/4, $0x3f800000
DATA expOne<>+12(SB)/4, $0x3f800000
DATA expOne<>+16(SB)/4, $0x3f800000
DATA expOne<>+20(SB)/4, $0x3f800000
DATA expOne<>+24(SB)/4, $0x3f800000
DATA expOne<>+28(SB)/4, $0x3f800000
GLOBL expOne<>(SB), RODATA|NOPTR, $32

DATA expHi<>+0(SB)/4, $0x42b17217
DATA expHi<>+4(SB)/4, $0x42b17217
DATA expHi<>+8(SB)/4, $0x42b17217
DATA expHi<>+12(SB)/4, $0x42b17217
DATA expHi<>+16(SB)/4, $0x42b17217
DATA expHi<>+20(SB)/4, $0x42b17217
DATA expHi<>+24(SB)/4, $0x42b17217
DATA expHi<>+28(SB)/4, $0x42b17217
GLOBL expHi<>(SB), RODATA|NOPTR, $32

DATA expLo<>+0(SB)/4, $0xc2aeac4f
DATA expLo<>+4(SB)/4, $0xc2aeac4f
DATA expLo<>+8(SB)/4, $0xc2aeac4f
DATA expLo<>+12(SB)/4, $0xc2aeac4f
DATA expLo<>+16(SB)/4, $0xc2aeac4f
DATA expLo<>+20(SB)/4, $0xc2aeac4f
DATA expLo<>+24(SB)/4, $0xc2aeac4f
DATA expLo<>+28(SB)/4, $0xc2aeac4f
GLOBL expLo<>(SB), RODATA|NOPTR, $32

DATA expInf<>+0(SB)/4, $0x7f800000
DATA expInf<>+4(SB)/4, $0x7f800000
DATA expInf<>+8(SB)/4, $0x7f800000
DATA expInf<>+12(SB)/4, $0x7f800000
DATA expInf<>+16(SB)/4, $0x7f800000
DATA expInf<>+20(SB)/4, $0x7f800000
DATA expInf<>+24(SB)/4, $0x7f800000
DATA expInf<>+28(SB)/4, $0x7f800000
GLOBL expInf<>(SB), RODATA|NOPTR, $32

DATA expBias<>+0(SB)/4, $0x7f
DATA expBias<>+4(SB)/4, $0x7f
DATA expBias<>+8(SB)/4, $0x7f
DATA expBias<>+12(SB)/4, $0x7f
DATA expBias<>+16(SB)/4, $0x7f
DATA expBias<>+20(SB)/4, $0x7f
DATA expBias<>+24(SB)/4, $0x7f
DATA expBias<>+28(SB)/4, $0x7f
GLOBL expBias<>(SB), RODATA|NOPTR, $32

DATA signMask<>+0(SB)/4, $0x80000000
DATA signMask<>+4(SB)/4, $0x80000000
DATA signMask<>+8(SB)/4, $0x80000000
DATA signMask<>+12(SB)/4, $0x80000000
DATA signMask<>+16(SB)/4, $0x80000000
DATA signMask<>+20(SB)/4, $0x80000000
DATA signMask<>+24(SB)/4, $0x80000000
DATA signMask<>+28(SB)/4, $0x80000000
GLOBL signMask<>(SB), RODATA|NOPTR, $32

DATA negInf<>+0(SB)/4, $0xff800000
DATA negInf<>+4(SB)/4, $0xff800000
DATA negInf<>+8(SB)/4, $0xff800000
DATA negInf<>+12(SB)/4, $0xff800000
DATA negInf<>+16(SB)/4, $0xff800000
DATA negInf<>+20(SB)/4, $0xff800000
DATA negInf<>+24(SB)/4, $0xff800000
DATA negInf<>+28(SB)/4, $0xff800000
GLOBL negInf<>(SB), RODATA|NOPTR, $32

// EXPF sets R = expf(X) lane by lane, with exactly the float32 operations
// of the Go expf (no FMA), so both give the same bits. T1..T3 are
// temporaries; X is preserved.
#define EXPF(X, R, T1, T2, T3) \
	VMULPS     expLog2e<>(SB), X, T1; \
	VADDPS     expMagic<>(SB), T1, T1; \
	VSUBPS     expMagic<>(SB), T1, T1; \
	VMULPS     expC1<>(SB), T1, T2; \
	VSUBPS     T2, X, T2; \
	VMULPS     expC2<>(SB), T1, T3; \
	VSUBPS     T3, T2, T2; \
	VMULPS     T2, T2, T3; \
	VMULPS     expP0<>(SB), T2, R; \
	VADDPS     expP1<>(SB), R, R; \
	VMULPS     T2, R, R; \
	VADDPS     expP2<>(SB), R, R; \
	VMULPS     T2, R, R; \
	VADDPS     expP3<>(SB), R, R; \
	VMULPS     T2, R, R; \
	VADDPS     expP4<>(SB), R, R; \
	VMULPS     T2, R, R; \
	VADDPS     expP5<>(SB), R, R; \
	VMULPS     T3, R, R; \
	VADDPS     T2, R, R; \
	VADDPS     expOne<>(SB), R, R; \
	VCVTTPS2DQ T1, T1; \
	VPSRAD     $1, T1, T2; \
	VPSUBD     T2, T1, T1; \
	VPADDD     expBias<>(SB), T2, T2; \
	VPSLLD     $23, T2, T2; \
	VPADDD     expBias<>(SB), T1, T1; \
	VPSLLD     $23, T1, T1; \
	VMULPS     T2, R, R; \
	VMULPS     T1, R, R; \
	VCMPPS     $5, expHi<>(SB), X, T1; \
	VBLENDVPS  T1, expInf<>(SB), R, R; \
	VCMPPS     $1, expLo<>(SB), X, T1; \
	VANDNPS    R, T1, R; \
	VCMPPS     $3, X, X, T1; \
	VBLENDVPS  T1, X, R, R

// EXPSUM8: the 8 values at (SI) less m (Y14) through EXPF, stored back,
// and added as float64 to the partial sums in Y12 (elements 0-3, then
// 4-7: each to partial i%4 in i order).
#define EXPSUM8 \
	VMOVUPS      (SI), Y0; \
	VSUBPS       Y14, Y0, Y0; \
	EXPF(Y0, Y1, Y2, Y3, Y4); \
	VMOVUPS      Y1, (SI); \
	VCVTPS2PD    X1, Y2; \
	VADDPD       Y2, Y12, Y12; \
	VEXTRACTF128 $1, Y1, X3; \
	VCVTPS2PD    X3, Y3; \
	VADDPD       Y3, Y12, Y12

// func expSumAVX2(s *float32, n int, m float32, sums *[4]float64)
//
// For i < n (a multiple of 8): s[i] = expf(s[i] - m); sums[l] = the float64
// sum of s[i] over i = l mod 4, in i order.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-32
	MOVQ         s+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Y14
	VXORPD       Y12, Y12, Y12
	SHLQ         $2, CX
	ADDQ         SI, CX
	CMPQ         SI, CX
	JAE          esdone

esloop:
	EXPSUM8
	ADDQ         $32, SI
	CMPQ         SI, CX
	JB           esloop

esdone:
	MOVQ    sums+24(FP), DI
	VMOVUPD Y12, (DI)
	VZEROUPPER
	RET

// EXPF512(X, R, T1, T2, T3): EXPF on 16 lanes, the same operations in
// the same order (the constants broadcast from their first lane) up to the
// scaling, the special cases by mask registers K1-K3 instead of blends.
// The scaling by 2^n is one VSCALEFPS where EXPF multiplies by 2^(n>>1)
// and 2^(n-(n>>1)): for |x| within the bounds, n is in [-126, 128] and the
// product by 2^(n>>1) is exact, so both round e*2^n once, to the same bits
// (all 2^32 float32 inputs match Go's expf: TestExpfExhaustive, behind
// the exhaustive build tag; TestVectorExpMatchesGo checks the bounds and
// a sample in every run).
#define EXPF512(X, R, T1, T2, T3) \
	VMULPS.BCST  expLog2e<>(SB), X, T1; \
	VADDPS.BCST  expMagic<>(SB), T1, T1; \
	VSUBPS.BCST  expMagic<>(SB), T1, T1; \
	VMULPS.BCST  expC1<>(SB), T1, T2; \
	VSUBPS       T2, X, T2; \
	VMULPS.BCST  expC2<>(SB), T1, T3; \
	VSUBPS       T3, T2, T2; \
	VMULPS       T2, T2, T3; \
	VMULPS.BCST  expP0<>(SB), T2, R; \
	VADDPS.BCST  expP1<>(SB), R, R; \
	VMULPS       T2, R, R; \
	VADDPS.BCST  expP2<>(SB), R, R; \
	VMULPS       T2, R, R; \
	VADDPS.BCST  expP3<>(SB), R, R; \
	VMULPS       T2, R, R; \
	VADDPS.BCST  expP4<>(SB), R, R; \
	VMULPS       T2, R, R; \
	VADDPS.BCST  expP5<>(SB), R, R; \
	VMULPS       T3, R, R; \
	VADDPS       T2, R, R; \
	VADDPS.BCST  expOne<>(SB), R, R; \
	VSCALEFPS    T1, R, R; \
	VCMPPS.BCST  $5, expHi<>(SB), X, K1; \
	VBROADCASTSS expInf<>(SB), K1, R; \
	VCMPPS.BCST  $1, expLo<>(SB), X, K2; \
	VPXORD       R, R, K2, R; \
	VCMPPS       $3, X, X, K3; \
	VMOVAPS      X, K3, R

// func expSumAVX512(s *float32, n int, m float32, sums *[4]float64)
//
// expSumAVX2 with 16 lanes a step (the last 8 of an n = 8 mod 16 by the
// AVX2 step): the same values, and the same four float64 partial sums,
// each element added to partial i%4 in i order.
TEXT ·expSumAVX512(SB), NOSPLIT, $0-32
	MOVQ         s+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Z14
	VXORPD       Y12, Y12, Y12
	SHLQ         $2, CX
	ADDQ         SI, CX
	LEAQ         -60(CX), DX

es512loop:
	CMPQ          SI, DX
	JAE           es512tail
	VMOVUPS       (SI), Z0
	VSUBPS        Z14, Z0, Z0
	EXPF512(Z0, Z1, Z2, Z3, Z4)
	VMOVUPS       Z1, (SI)
	VCVTPS2PD     X1, Y2
	VADDPD        Y2, Y12, Y12
	VEXTRACTF32X4 $1, Z1, X3
	VCVTPS2PD     X3, Y3
	VADDPD        Y3, Y12, Y12
	VEXTRACTF32X4 $2, Z1, X3
	VCVTPS2PD     X3, Y3
	VADDPD        Y3, Y12, Y12
	VEXTRACTF32X4 $3, Z1, X3
	VCVTPS2PD     X3, Y3
	VADDPD        Y3, Y12, Y12
	ADDQ          $64, SI
	JMP           es512loop

es512tail:
	CMPQ         SI, CX
	JAE          es512done
	EXPSUM8

es512done:
	MOVQ    sums+24(FP), DI
	VMOVUPD Y12, (DI)
	VZEROUPPER
	RET

// func scaleMaxAVX2(s *float32, n int, scale float32) float32
//
// For i < n (a multiple of 8): s[i] *= scale; returns the maximum of the
// new values and -Inf (NaNs are ignored, as in the Go loop).
TEXT ·scaleMaxAVX2(SB), NOSPLIT, $0-28
	MOVQ         s+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS scale+16(FP), Y14
	VMOVUPS      negInf<>(SB), Y12
	SHLQ         $2, CX
	ADDQ         SI, CX
	CMPQ         SI, CX
	JAE          smdone

smloop:
	VMULPS  (SI), Y14, Y0
	VMOVUPS Y0, (SI)
	VMAXPS  Y12, Y0, Y12
	ADDQ    $32, SI
	CMPQ    SI, CX
	JB      smloop

smdone:
	VEXTRACTF128 $1, Y12, X13
	VMAXPS       X12, X13, X12
	VMOVHLPS     X12, X12, X13
	VMAXPS       X12, X13, X12
	VMOVSHDUP    X12, X13
	VMAXSS       X12, X13, X12
	VMOVSS       X12, ret+24(FP)
	VZEROUPPER
	RET

// func scaleAVX2(s *float32, n int, f float32)
//
// s[i] *= f for i < n (a multiple of 8).
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ         s+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS f+16(FP), Y14
	SHLQ         $2, CX
	ADDQ         SI, CX
	CMPQ         SI, CX
	JAE          scdone

scloop:
	VMULPS  (SI), Y14, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	CMPQ    SI, CX
	JB      scloop

scdone:
	VZEROUPPER
	RET

// func siluAVX2(y, x, u *float32, n int)
//
// For i < n (a multiple of 8): y[i] = x[i] / (1 + expf(-x[i])), times u[i]
// when u is not nil (SwiGLU).
TEXT ·siluAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ AX, AX
	SHLQ $2, CX
	CMPQ AX, CX
	JAE  sidone

siloop:
	VMOVUPS (SI)(AX*1), Y5
	VXORPS  signMask<>(SB), Y5, Y0
	EXPF(Y0, Y1, Y2, Y3, Y4)
	VADDPS  expOne<>(SB), Y1, Y1
	VDIVPS  Y1, Y5, Y1
	TESTQ   DX, DX
	JZ      sistore
	VMULPS  (DX)(AX*1), Y1, Y1

sistore:
	VMOVUPS Y1, (DI)(AX*1)
	ADDQ    $32, AX
	CMPQ    AX, CX
	JB      siloop

sidone:
	VZEROUPPER
	RET


// func widenBF16AVX2(dst *float32, src *uint16, n int)
//
// dst[i] = float32 with upper half src[i], for i < n (n a multiple of 8).
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHLQ $1, CX            // bytes of src
	XORQ DX, DX
	MOVQ CX, BX
	ANDQ $-32, BX          // bytes in pairs of 8-element groups
	JZ   wbone

wbpair:
	VPMOVZXWD (SI)(DX*1), Y0
	VPMOVZXWD 16(SI)(DX*1), Y1
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VMOVUPS   Y0, (DI)(DX*2)
	VMOVUPS   Y1, 32(DI)(DX*2)
	ADDQ      $32, DX
	CMPQ      DX, BX
	JB        wbpair

wbone:
	CMPQ DX, CX
	JAE  wbret
	VPMOVZXWD (SI)(DX*1), Y0
	VPSLLD    $16, Y0, Y0
	VMOVUPS   Y0, (DI)(DX*2)

wbret:
	VZEROUPPER
	RET

// func gemv1x8BF16AVX2(x *float32, w *uint16, ldw, k, ntiles int, y *float32)
//
// gemv1x8AVX2 with bf16 weights widened in registers, k a multiple of 8:
// for t < ntiles, c < 8: y[8t+c] = dot(x[0:k], widen(w[(8t+c)*ldw:][0:k]))
// in the canonical order (no tail: lanes start at +0, one fused
// multiply-add per chunk, then the same horizontal sum). While a tile
// runs, the next one (8*ldw contiguous weights when ldw == k) is
// prefetched, two lines an iteration: without it the short rows of a
// bf16 tile (2 KiB at k = 1024) leave the hardware prefetchers behind and
// the kernel reached about 70 % of the f32 kernel's bandwidth, with it
// about 85 % (on the AMD EPYC kinds, with NTA). R15 is only used in the
// loop, never across a global access.
TEXT ·gemv1x8BF16AVX2(SB), NOSPLIT, $0-48
	GB18BODY(gb18tile, gb18loop, gb18ret, PREFETCHNTA)

// func gemv1x8BF16AVX2L2(x *float32, w *uint16, ldw, k, ntiles int, y *float32)
//
// gemv1x8BF16AVX2 prefetching the next tile with T1 (cpuid.L2Prefetch
// picks it): on the Intel Xeon kind NTA fetched next to nothing, and a
// decode step's bf16 matrices (the 28 layers, 2 cores, BenchmarkDecodeLayers)
// streamed at 10.3-11.7 GB/s with NTA, 18.9-19.9 with T0, 20.6-22.3 with
// T1 (T1 two or four tiles ahead 19.4-21.8), against a bare read of
// 21.2-25.6.
TEXT ·gemv1x8BF16AVX2L2(SB), NOSPLIT, $0-48
	GB18BODY(gb18tile2, gb18loop2, gb18ret2, PREFETCHT1)

// func widenF16AVX2(dst *float32, src *uint16, n int)
//
// dst[i] = the float32 value of the binary16 src[i], for i < n (n a
// multiple of 8): VCVTPH2PS, exact.
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHLQ $1, CX            // bytes of src
	XORQ DX, DX
	MOVQ CX, BX
	ANDQ $-32, BX          // bytes in pairs of 8-element groups
	JZ   whone

whpair:
	VCVTPH2PS (SI)(DX*1), Y0
	VCVTPH2PS 16(SI)(DX*1), Y1
	VMOVUPS   Y0, (DI)(DX*2)
	VMOVUPS   Y1, 32(DI)(DX*2)
	ADDQ      $32, DX
	CMPQ      DX, BX
	JB        whpair

whone:
	CMPQ DX, CX
	JAE  whret
	VCVTPH2PS (SI)(DX*1), Y0
	VMOVUPS   Y0, (DI)(DX*2)

whret:
	VZEROUPPER
	RET

// func gemv1x8F16AVX2(x *float32, w *uint16, ldw, k, ntiles int, y *float32)
//
// gemv1x8BF16AVX2 on f16 values (an f16 KV cache's keys), widened in
// registers by VCVTPH2PS (exact): the same canonical order, k a multiple
// of 8, the next tile prefetched.
TEXT ·gemv1x8F16AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), AX
	MOVQ ldw+16(FP), R13
	SHLQ $1, R13
	ROWS8PTRS
	SHLQ $3, R13           // tile advance: 8*ldw weights, in bytes
	MOVQ k+24(FP), R12
	SHLQ $1, R12           // weight bytes per row
	MOVQ y+40(FP), R14
	CMPQ ntiles+32(FP), $0
	JLE  gh18ret

gh18tile:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   DX, DX
	LEAQ   (AX)(R13*1), R15 // the next tile, read ahead two lines an iteration

gh18loop:
	PREFETCHNTA (R15)(DX*8)
	PREFETCHNTA 64(R15)(DX*8)
	VMOVUPS     (SI)(DX*2), Y8
	VCVTPH2PS   (AX)(DX*1), Y9
	VCVTPH2PS   (BX)(DX*1), Y10
	VFMADD231PS Y9, Y8, Y0
	VFMADD231PS Y10, Y8, Y1
	VCVTPH2PS   (CX)(DX*1), Y11
	VCVTPH2PS   (DI)(DX*1), Y12
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y12, Y8, Y3
	VCVTPH2PS   (R8)(DX*1), Y9
	VCVTPH2PS   (R9)(DX*1), Y10
	VFMADD231PS Y9, Y8, Y4
	VFMADD231PS Y10, Y8, Y5
	VCVTPH2PS   (R10)(DX*1), Y11
	VCVTPH2PS   (R11)(DX*1), Y12
	VFMADD231PS Y11, Y8, Y6
	VFMADD231PS Y12, Y8, Y7
	ADDQ        $16, DX
	CMPQ        DX, R12
	JB          gh18loop

	HSUM8((R14))

	ADDQ $32, R14
	ROWS8NEXT
	DECQ ntiles+32(FP)
	JNZ  gh18tile

gh18ret:
	VZEROUPPER
	RET

// func wsumF16AVX2(out, p *float32, v *uint16, ldv, t, d, acc int)
//
// wsumAVX2 on f16 values (an f16 KV cache's V rows) widened in registers
// by VCVTPH2PS (exact), d a multiple of 8 (no masked tail): the same fused
// multiply-add per position in ascending order for every element.
TEXT ·wsumF16AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), AX
	MOVQ ldv+24(FP), R8
	SHLQ $1, R8            // 16-bit rows
	MOVQ t+32(FP), R9
	MOVQ d+40(FP), R10

wh64:
	CMPQ   R10, $64
	JB     wh8
	CMPQ   acc+48(FP), $0
	JNE    wh64load
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	JMP    wh64go

wh64load:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7

wh64go:
	MOVQ  AX, BX
	XORQ  CX, CX
	TESTQ R9, R9
	JZ    wh64st

wh64loop:
	PREFETCHT0   128(BX)         // the next block's two lines of this row (read by the next pass)
	PREFETCHT0   192(BX)
	VBROADCASTSS (SI)(CX*4), Y8
	VCVTPH2PS    (BX), Y9
	VCVTPH2PS    16(BX), Y10
	VFMADD231PS  Y9, Y8, Y0
	VFMADD231PS  Y10, Y8, Y1
	VCVTPH2PS    32(BX), Y9
	VCVTPH2PS    48(BX), Y10
	VFMADD231PS  Y9, Y8, Y2
	VFMADD231PS  Y10, Y8, Y3
	VCVTPH2PS    64(BX), Y9
	VCVTPH2PS    80(BX), Y10
	VFMADD231PS  Y9, Y8, Y4
	VFMADD231PS  Y10, Y8, Y5
	VCVTPH2PS    96(BX), Y9
	VCVTPH2PS    112(BX), Y10
	VFMADD231PS  Y9, Y8, Y6
	VFMADD231PS  Y10, Y8, Y7
	ADDQ         R8, BX
	INCQ         CX
	CMPQ         CX, R9
	JB           wh64loop

wh64st:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ    $128, AX
	ADDQ    $256, DI
	SUBQ    $64, R10
	JMP     wh64

wh8:
	CMPQ   R10, $8
	JB     whret
	VXORPS Y0, Y0, Y0
	CMPQ   acc+48(FP), $0
	JE     wh8go
	VMOVUPS (DI), Y0

wh8go:
	MOVQ  AX, BX
	XORQ  CX, CX
	TESTQ R9, R9
	JZ    wh8st

wh8loop:
	VBROADCASTSS (SI)(CX*4), Y8
	VCVTPH2PS    (BX), Y9
	VFMADD231PS  Y9, Y8, Y0
	ADDQ         R8, BX
	INCQ         CX
	CMPQ         CX, R9
	JB           wh8loop

wh8st:
	VMOVUPS Y0, (DI)
	ADDQ    $16, AX
	ADDQ    $32, DI
	SUBQ    $8, R10
	JMP     wh8

whret:
	VZEROUPPER
	RET

// func wsumBF16AVX2(out, p *float32, v *uint16, ldv, t, d, acc int)
//
// wsumF16AVX2 on bf16 values (widened by a zero-extend and a shift).
TEXT ·wsumBF16AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), AX
	MOVQ ldv+24(FP), R8
	SHLQ $1, R8            // 16-bit rows
	MOVQ t+32(FP), R9
	MOVQ d+40(FP), R10

wb64:
	CMPQ   R10, $64
	JB     wb8
	CMPQ   acc+48(FP), $0
	JNE    wb64load
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	JMP    wb64go

wb64load:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7

wb64go:
	MOVQ  AX, BX
	XORQ  CX, CX
	TESTQ R9, R9
	JZ    wb64st

wb64loop:
	PREFETCHT0   128(BX)         // as in wh64loop
	PREFETCHT0   192(BX)
	VBROADCASTSS (SI)(CX*4), Y8
	VPMOVZXWD    (BX), Y9
	VPSLLD       $16, Y9, Y9
	VPMOVZXWD    16(BX), Y10
	VPSLLD       $16, Y10, Y10
	VFMADD231PS  Y9, Y8, Y0
	VFMADD231PS  Y10, Y8, Y1
	VPMOVZXWD    32(BX), Y9
	VPSLLD       $16, Y9, Y9
	VPMOVZXWD    48(BX), Y10
	VPSLLD       $16, Y10, Y10
	VFMADD231PS  Y9, Y8, Y2
	VFMADD231PS  Y10, Y8, Y3
	VPMOVZXWD    64(BX), Y9
	VPSLLD       $16, Y9, Y9
	VPMOVZXWD    80(BX), Y10
	VPSLLD       $16, Y10, Y10
	VFMADD231PS  Y9, Y8, Y4
	VFMADD231PS  Y10, Y8, Y5
	VPMOVZXWD    96(BX), Y9
	VPSLLD       $16, Y9, Y9
	VPMOVZXWD    112(BX), Y10
	VPSLLD       $16, Y10, Y10
	VFMADD231PS  Y9, Y8, Y6
	VFMADD231PS  Y10, Y8, Y7
	ADDQ         R8, BX
	INCQ         CX
	CMPQ         CX, R9
	JB           wb64loop

wb64st:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ    $128, AX
	ADDQ    $256, DI
	SUBQ    $64, R10
	JMP     wb64

wb8:
	CMPQ   R10, $8
	JB     wbret
	VXORPS Y0, Y0, Y0
	CMPQ   acc+48(FP), $0
	JE     wb8go
	VMOVUPS (DI), Y0

wb8go:
	MOVQ  AX, BX
	XORQ  CX, CX
	TESTQ R9, R9
	JZ    wb8st

wb8loop:
	VBROADCASTSS (SI)(CX*4), Y8
	VPMOVZXWD    (BX), Y9
	VPSLLD       $16, Y9, Y9
	VFMADD231PS  Y9, Y8, Y0
	ADDQ         R8, BX
	INCQ         CX
	CMPQ         CX, R9
	JB           wb8loop

wb8st:
	VMOVUPS Y0, (DI)
	ADDQ    $16, AX
	ADDQ    $32, DI
	SUBQ    $8, R10
	JMP     wb8

wbret:
	VZEROUPPER
	RET
