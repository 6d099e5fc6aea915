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
	VMOVD AX, X11          // VEX: a legacy-SSE move would stall on the dirty upper halves
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

// func addTile64PfAVX2(dst *uint32, base *uint32, stride int, idx *int32, sgn *uint32, h int, pf int)
//
// The signed sum of h columns over one 64-word chunk, held in eight
// registers: for i < 64,
//
//	dst[i] += sum_k (c_k[i] ^ s_k) - sum_k s_k    (c_k = base + idx[k] * stride bytes)
//
// mod 2^32 (h >= 1). dst is read once, at the end, so a miss on it
// overlaps the column loads; each column is one 256-byte run. For packed
// tiles, where the runs come from L2. For every column it reads it also
// prefetches the run pf bytes further on (the same column's run in a later
// sub-tile: row-by-row pads over tiles read short runs whose addresses the
// hardware prefetchers cannot follow); pf = 0 prefetches the run it reads,
// a no-op.
TEXT ·addTile64PfAVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ base+8(FP), R9
	MOVQ stride+16(FP), R10
	MOVQ idx+24(FP), R13
	MOVQ sgn+32(FP), R12
	MOVQ h+40(FP), R11
	MOVQ pf+48(FP), R8
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	XORL  DX, DX

pcol:
	MOVLQSX      (R13), BX
	IMULQ        R10, BX
	ADDQ         R9, BX
	PREFETCHT0   0(BX)(R8*1)
	PREFETCHT0   64(BX)(R8*1)
	PREFETCHT0   128(BX)(R8*1)
	PREFETCHT0   192(BX)(R8*1)
	VPBROADCASTD (R12), Y8
	ADDL         (R12), DX
	VPXOR        0(BX), Y8, Y9
	VPADDD       Y9, Y0, Y0
	VPXOR        32(BX), Y8, Y10
	VPADDD       Y10, Y1, Y1
	VPXOR        64(BX), Y8, Y11
	VPADDD       Y11, Y2, Y2
	VPXOR        96(BX), Y8, Y12
	VPADDD       Y12, Y3, Y3
	VPXOR        128(BX), Y8, Y9
	VPADDD       Y9, Y4, Y4
	VPXOR        160(BX), Y8, Y10
	VPADDD       Y10, Y5, Y5
	VPXOR        192(BX), Y8, Y11
	VPADDD       Y11, Y6, Y6
	VPXOR        224(BX), Y8, Y12
	VPADDD       Y12, Y7, Y7
	ADDQ         $4, R13
	ADDQ         $4, R12
	DECQ         R11
	JNZ          pcol

	VMOVD        DX, X8
	VPBROADCASTD X8, Y8
	VPADDD       0(DI), Y0, Y0
	VPADDD       32(DI), Y1, Y1
	VPADDD       64(DI), Y2, Y2
	VPADDD       96(DI), Y3, Y3
	VPADDD       128(DI), Y4, Y4
	VPADDD       160(DI), Y5, Y5
	VPADDD       192(DI), Y6, Y6
	VPADDD       224(DI), Y7, Y7
	VPSUBD       Y8, Y0, Y0
	VPSUBD       Y8, Y1, Y1
	VPSUBD       Y8, Y2, Y2
	VPSUBD       Y8, Y3, Y3
	VPSUBD       Y8, Y4, Y4
	VPSUBD       Y8, Y5, Y5
	VPSUBD       Y8, Y6, Y6
	VPSUBD       Y8, Y7, Y7
	VMOVDQU      Y0, 0(DI)
	VMOVDQU      Y1, 32(DI)
	VMOVDQU      Y2, 64(DI)
	VMOVDQU      Y3, 96(DI)
	VMOVDQU      Y4, 128(DI)
	VMOVDQU      Y5, 160(DI)
	VMOVDQU      Y6, 192(DI)
	VMOVDQU      Y7, 224(DI)
	VZEROUPPER
	RET

// func addTile64AVX512(dst *uint32, base *uint32, stride int, idx *int32, sgn *uint32, h int, next *uint32)
//
// addTile64PfAVX2 (pf = 0) in four 512-bit registers: half the loads and
// additions an output chunk, so a sub-tile's slices stream from L2 at its
// bandwidth. It first prefetches the 256 bytes at next (the next row's
// output chunk in a batch, each row's in another pad, cold: its misses
// would wait at the end; dst itself when there is none).
TEXT ·addTile64AVX512(SB), NOSPLIT, $0-56
	MOVQ next+48(FP), AX
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	MOVQ dst+0(FP), DI
	MOVQ base+8(FP), R9
	MOVQ stride+16(FP), R10
	MOVQ idx+24(FP), R13
	MOVQ sgn+32(FP), R12
	MOVQ h+40(FP), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORL   DX, DX

zcol:
	MOVLQSX      (R13), BX
	IMULQ        R10, BX
	ADDQ         R9, BX
	VPBROADCASTD (R12), Z8
	ADDL         (R12), DX
	VPXORD       0(BX), Z8, Z9
	VPADDD       Z9, Z0, Z0
	VPXORD       64(BX), Z8, Z10
	VPADDD       Z10, Z1, Z1
	VPXORD       128(BX), Z8, Z11
	VPADDD       Z11, Z2, Z2
	VPXORD       192(BX), Z8, Z12
	VPADDD       Z12, Z3, Z3
	ADDQ         $4, R13
	ADDQ         $4, R12
	DECQ         R11
	JNZ          zcol

	VPBROADCASTD DX, Z8
	VPADDD       0(DI), Z0, Z0
	VPADDD       64(DI), Z1, Z1
	VPADDD       128(DI), Z2, Z2
	VPADDD       192(DI), Z3, Z3
	VPSUBD       Z8, Z0, Z0
	VPSUBD       Z8, Z1, Z1
	VPSUBD       Z8, Z2, Z2
	VPSUBD       Z8, Z3, Z3
	VMOVDQU32    Z0, 0(DI)
	VMOVDQU32    Z1, 64(DI)
	VMOVDQU32    Z2, 128(DI)
	VMOVDQU32    Z3, 192(DI)
	VZEROUPPER
	RET
