//go:build !purego

#include "textflag.h"

// Kernels on wire.Interleaved8 groups: 8 weight rows whose block b is the
// 8 fp16 scales (16 bytes) then 32-byte vectors each holding a 4-byte
// piece of every row (row r in dword lane r). One VPMADDUBSW/VPMADDWD per
// piece leaves each row's partial sums in its own lane, so the exact block
// sum isum needs only vertical adds, and the float part is the canonical
// per-lane order (VMULPS/VADDPS, no FMA): acc = acc + float(isum) * (dw * dx).
// A group streams from one place (the hardware prefetcher follows it; one
// software prefetch 1 KiB ahead per block).

DATA il8NibMask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA il8NibMask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA il8NibMask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA il8NibMask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL il8NibMask<>(SB), RODATA|NOPTR, $32

// IL8Q8PIECE(P, X, ACC): ACC += the 8 rows' int32 sums of piece P (bytes
// 4P..4P+3 of the activation block at X) of the q8_0 group block at AX.
// Y15 = int16 ones. Clobbers Y1, Y2.
#define IL8Q8PIECE(P, X, ACC) \
	VPBROADCASTD P*4(X), Y1;   \
	VMOVDQU      16+P*32(AX), Y2; \
	VPSIGNB      Y2, Y1, Y1;     \
	VPABSB       Y2, Y2;         \
	VPMADDUBSW   Y1, Y2, Y2;     \
	VPMADDWD     Y15, Y2, Y2;    \
	VPADDD       Y2, ACC, ACC

// IL8SCALE(DX, ACC, ISUM): ACC += float(ISUM) * (fp16 scales at AX * DX).
// Clobbers Y5, Y6.
#define IL8SCALE(DX, ACC, ISUM) \
	VCVTPH2PS    (AX), Y5;     \
	VBROADCASTSS DX, Y6;       \
	VMULPS       Y6, Y5, Y5;   \
	VCVTDQ2PS    ISUM, ISUM;   \
	VMULPS       Y5, ISUM, ISUM; \
	VADDPS       ISUM, ACC, ACC

// func q8mv8ILAVX2(x *int8, dx *float32, w *byte, nb int, y *float32)
//
// y[r] = dot(x, row r) for the 8 rows of the q8_0 Interleaved8 group at w
// (nb >= 1 blocks of 272 bytes).
TEXT ·q8mv8ILAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ w+16(FP), AX
	MOVQ nb+24(FP), CX
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // int16 ones
	VXORPS   Y14, Y14, Y14 // acc

q8mv8ILloop:
	PREFETCHT0 1024(AX)
	PREFETCHT0 1088(AX)
	PREFETCHT0 1152(AX)
	PREFETCHT0 1216(AX)
	PREFETCHT0 1280(AX)
	VPXOR      Y0, Y0, Y0
	VPXOR      Y3, Y3, Y3
	IL8Q8PIECE(0, SI, Y0)
	IL8Q8PIECE(1, SI, Y3)
	IL8Q8PIECE(2, SI, Y0)
	IL8Q8PIECE(3, SI, Y3)
	IL8Q8PIECE(4, SI, Y0)
	IL8Q8PIECE(5, SI, Y3)
	IL8Q8PIECE(6, SI, Y0)
	IL8Q8PIECE(7, SI, Y3)
	VPADDD     Y3, Y0, Y0
	IL8SCALE((DI), Y14, Y0)
	ADDQ       $32, SI
	ADDQ       $4, DI
	ADDQ       $272, AX
	DECQ       CX
	JNZ        q8mv8ILloop

	MOVQ    y+32(FP), DX
	VMOVUPS Y14, (DX)
	VZEROUPPER
	RET

// IL8Q4PIECE(P, X, ACC): ACC (int16) += the 8 rows' pair sums of piece P of
// the q4_0 group block at AX: its low nibbles (elements 4P..4P+3) times
// the activations at X + 4P, its high nibbles (16+4P..) times X + 16 + 4P.
// Y13 = nibble mask. Clobbers Y1..Y4. Exact: at most 8 such adds per
// block, each pair <= 2*15*128, so |ACC| < 2^15.
#define IL8Q4PIECE(P, X, ACC) \
	VMOVDQU      16+P*32(AX), Y2; \
	VPSRLW       $4, Y2, Y3;     \
	VPAND        Y13, Y2, Y2;    \
	VPAND        Y13, Y3, Y3;    \
	VPBROADCASTD P*4(X), Y1;   \
	VPBROADCASTD 16+P*4(X), Y4; \
	VPMADDUBSW   Y1, Y2, Y2;     \
	VPMADDUBSW   Y4, Y3, Y3;     \
	VPADDW       Y2, ACC, ACC;   \
	VPADDW       Y3, ACC, ACC

// func q4mv8ILAVX2(x *int8, dx *float32, sx *int32, w *byte, nb int, y *float32)
//
// y[r] = dot(x, row r) for the 8 rows of the q4_0 Interleaved8 group at w
// (nb >= 1 blocks of 144 bytes): isum = sum(nibble * x) - 8 * sx[b].
TEXT ·q4mv8ILAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ sx+16(FP), R11
	MOVQ w+24(FP), AX
	MOVQ nb+32(FP), CX
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15 // int16 ones
	VXORPS   Y14, Y14, Y14 // acc
	VMOVDQU  il8NibMask<>(SB), Y13

q4mv8ILloop:
	PREFETCHT0 1024(AX)
	PREFETCHT0 1088(AX)
	PREFETCHT0 1152(AX)
	VPXOR      Y0, Y0, Y0
	VPXOR      Y7, Y7, Y7
	IL8Q4PIECE(0, SI, Y0)
	IL8Q4PIECE(1, SI, Y7)
	IL8Q4PIECE(2, SI, Y0)
	IL8Q4PIECE(3, SI, Y7)
	VPADDW       Y7, Y0, Y0
	VPMADDWD     Y15, Y0, Y0
	VPBROADCASTD (R11), Y1
	VPSLLD       $3, Y1, Y1
	VPSUBD       Y1, Y0, Y0
	IL8SCALE((DI), Y14, Y0)
	ADDQ         $32, SI
	ADDQ         $4, DI
	ADDQ         $4, R11
	ADDQ         $144, AX
	DECQ         CX
	JNZ          q4mv8ILloop

	MOVQ    y+40(FP), DX
	VMOVUPS Y14, (DX)
	VZEROUPPER
	RET

// The 4-row GEMM kernels on Interleaved8 groups: 8 weight rows by 4
// activation rows per call, each piece loaded (and, for q4_0, split into
// nibbles; for q8_0, its absolute value taken) once for the 4 rows, the
// float accumulators in Y8..Y11. Activation row r at SI + r*BX (R9 =
// 3*BX), its scales (and q4_0 sums) at r*R11 past theirs (R12 = 3*R11).

// IL8Q8ROWF(P, XR, ACC) / IL8Q8ROW: the q8_0 piece P (Y4, |Y4| in Y5)
// times activation row XR's dword P: ACC (int32) = / += its sums.
#define IL8Q8ROWF(P, XR, ACC) \
	VPBROADCASTD P*4 XR, Y6;   \
	VPSIGNB      Y4, Y6, Y6;   \
	VPMADDUBSW   Y6, Y5, Y6;   \
	VPMADDWD     Y15, Y6, ACC

#define IL8Q8ROW(P, XR, ACC) \
	VPBROADCASTD P*4 XR, Y6;   \
	VPSIGNB      Y4, Y6, Y6;   \
	VPMADDUBSW   Y6, Y5, Y6;   \
	VPMADDWD     Y15, Y6, Y6;  \
	VPADDD       Y6, ACC, ACC

#define IL8Q8PIECE4(P, ROW) \
	VMOVDQU 16+P*32(AX), Y4;   \
	VPABSB  Y4, Y5;            \
	ROW(P, (SI), Y0);          \
	ROW(P, (SI)(BX*1), Y1);    \
	ROW(P, (SI)(BX*2), Y2);    \
	ROW(P, (SI)(R9*1), Y3)

// IL8SCALE4: Y8..Y11 += float(Y0..Y3) * (the block's fp16 scales * the
// rows' dx). Clobbers Y12, Y13.
#define IL8SCALE4 \
	VCVTPH2PS    (AX), Y12;         \
	VBROADCASTSS (DI), Y13;         \
	VMULPS       Y13, Y12, Y13;     \
	VCVTDQ2PS    Y0, Y0;            \
	VMULPS       Y13, Y0, Y0;       \
	VADDPS       Y0, Y8, Y8;        \
	VBROADCASTSS (DI)(R11*1), Y13;  \
	VMULPS       Y13, Y12, Y13;     \
	VCVTDQ2PS    Y1, Y1;            \
	VMULPS       Y13, Y1, Y1;       \
	VADDPS       Y1, Y9, Y9;        \
	VBROADCASTSS (DI)(R11*2), Y13;  \
	VMULPS       Y13, Y12, Y13;     \
	VCVTDQ2PS    Y2, Y2;            \
	VMULPS       Y13, Y2, Y2;       \
	VADDPS       Y2, Y10, Y10;      \
	VBROADCASTSS (DI)(R12*1), Y13;  \
	VMULPS       Y13, Y12, Y13;     \
	VCVTDQ2PS    Y3, Y3;            \
	VMULPS       Y13, Y3, Y3;       \
	VADDPS       Y3, Y11, Y11

// IL8STORE4: the 4 rows' outputs to y (DX) with stride 4*ldy (R8).
#define IL8STORE4 \
	VMOVUPS Y8, (DX);           \
	ADDQ    R8, DX;             \
	VMOVUPS Y9, (DX);           \
	ADDQ    R8, DX;             \
	VMOVUPS Y10, (DX);          \
	ADDQ    R8, DX;             \
	VMOVUPS Y11, (DX)

// func q8mm48ILAVX2(x *int8, dx *float32, w *byte, nb int, y *float32, ldy int)
//
// For r < 4, c < 8: y[r*ldy + c] = dot(activation row r, row c of the q8_0
// Interleaved8 group at w); activation row r at x + 32*nb*r, its scales at
// dx + nb*r.
TEXT ·q8mm48ILAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ w+16(FP), AX
	MOVQ nb+24(FP), CX
	MOVQ CX, BX
	SHLQ $5, BX                // 32*nb: the next activation row
	LEAQ (BX)(BX*2), R9
	LEAQ (CX*4), R11           // 4*nb: its scales
	LEAQ (R11)(R11*2), R12
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15     // int16 ones
	VXORPS   Y8, Y8, Y8
	VXORPS   Y9, Y9, Y9
	VXORPS   Y10, Y10, Y10
	VXORPS   Y11, Y11, Y11

q8mm48ILloop:
	PREFETCHT0 1024(AX)
	PREFETCHT0 1088(AX)
	PREFETCHT0 1152(AX)
	PREFETCHT0 1216(AX)
	PREFETCHT0 1280(AX)
	IL8Q8PIECE4(0, IL8Q8ROWF)
	IL8Q8PIECE4(1, IL8Q8ROW)
	IL8Q8PIECE4(2, IL8Q8ROW)
	IL8Q8PIECE4(3, IL8Q8ROW)
	IL8Q8PIECE4(4, IL8Q8ROW)
	IL8Q8PIECE4(5, IL8Q8ROW)
	IL8Q8PIECE4(6, IL8Q8ROW)
	IL8Q8PIECE4(7, IL8Q8ROW)
	IL8SCALE4
	ADDQ $32, SI
	ADDQ $4, DI
	ADDQ $272, AX
	DECQ CX
	JNZ  q8mm48ILloop

	MOVQ y+32(FP), DX
	MOVQ ldy+40(FP), R8
	SHLQ $2, R8
	IL8STORE4
	VZEROUPPER
	RET

// IL8Q4ROWF(P, XR, ACC) / IL8Q4ROW: the q4_0 piece P's low (Y4) and high
// (Y5) nibbles times activation row XR's dwords P and 4+P: ACC (int16) =
// / += their pair sums (at most 8 adds a block: exact, as IL8Q4PIECE).
#define IL8Q4ROWF(P, XR, ACC) \
	VPBROADCASTD P*4 XR, ACC;     \
	VPMADDUBSW   ACC, Y4, ACC;    \
	VPBROADCASTD 16+P*4 XR, Y7;   \
	VPMADDUBSW   Y7, Y5, Y7;      \
	VPADDW       Y7, ACC, ACC

#define IL8Q4ROW(P, XR, ACC) \
	VPBROADCASTD P*4 XR, Y6;      \
	VPMADDUBSW   Y6, Y4, Y6;      \
	VPADDW       Y6, ACC, ACC;    \
	VPBROADCASTD 16+P*4 XR, Y7;   \
	VPMADDUBSW   Y7, Y5, Y7;      \
	VPADDW       Y7, ACC, ACC

#define IL8Q4PIECE4(P, ROW) \
	VMOVDQU 16+P*32(AX), Y4;   \
	VPSRLW  $4, Y4, Y5;        \
	VPAND   Y14, Y4, Y4;       \
	VPAND   Y14, Y5, Y5;       \
	ROW(P, (SI), Y0);          \
	ROW(P, (SI)(BX*1), Y1);    \
	ROW(P, (SI)(BX*2), Y2);    \
	ROW(P, (SI)(R9*1), Y3)

// IL8Q4ISUM(ACC, SXR): ACC = its int16 pair sums widened, minus 8 times
// the activation block sum at SXR. Clobbers Y6.
#define IL8Q4ISUM(ACC, SXR) \
	VPMADDWD     Y15, ACC, ACC; \
	VPBROADCASTD SXR, Y6;       \
	VPSLLD       $3, Y6, Y6;    \
	VPSUBD       Y6, ACC, ACC

// func q4mm48ILAVX2(x *int8, dx *float32, sx *int32, w *byte, nb int, y *float32, ldy int)
//
// q8mm48ILAVX2 for a q4_0 Interleaved8 group (isum = sum(nibble * x) - 8 *
// sx; activation row r's sums at sx + nb*r).
TEXT ·q4mm48ILAVX2(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ dx+8(FP), DI
	MOVQ sx+16(FP), R10
	MOVQ w+24(FP), AX
	MOVQ nb+32(FP), CX
	MOVQ CX, BX
	SHLQ $5, BX                // 32*nb: the next activation row
	LEAQ (BX)(BX*2), R9
	LEAQ (CX*4), R11           // 4*nb: its scales and sums
	LEAQ (R11)(R11*2), R12
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15     // int16 ones
	VMOVDQU  il8NibMask<>(SB), Y14
	VXORPS   Y8, Y8, Y8
	VXORPS   Y9, Y9, Y9
	VXORPS   Y10, Y10, Y10
	VXORPS   Y11, Y11, Y11

q4mm48ILloop:
	PREFETCHT0 1024(AX)
	PREFETCHT0 1088(AX)
	PREFETCHT0 1152(AX)
	IL8Q4PIECE4(0, IL8Q4ROWF)
	IL8Q4PIECE4(1, IL8Q4ROW)
	IL8Q4PIECE4(2, IL8Q4ROW)
	IL8Q4PIECE4(3, IL8Q4ROW)
	IL8Q4ISUM(Y0, (R10))
	IL8Q4ISUM(Y1, (R10)(R11*1))
	IL8Q4ISUM(Y2, (R10)(R11*2))
	IL8Q4ISUM(Y3, (R10)(R12*1))
	IL8SCALE4
	ADDQ $32, SI
	ADDQ $4, DI
	ADDQ $4, R10
	ADDQ $144, AX
	DECQ CX
	JNZ  q4mm48ILloop

	MOVQ y+40(FP), DX
	MOVQ ldy+48(FP), R8
	SHLQ $2, R8
	IL8STORE4
	VZEROUPPER
	RET
