//go:build !purego

#include "textflag.h"
#include "zero_amd64.h"

// Decode attention's weighted sums of V with AVX-512, for one or two query
// heads sharing a KV head: out_h[c] = a + sum_{s<t} p_h[s]*v[s*ldv+c], a =
// out_h[c] if acc else 0, per element a = fma(p_h[s], v_s[c], a) for s
// ascending: the order of wsumAVX2 and wsumGo, 16 columns a register
// instead of 8. Each V row is loaded (and widened, for a 16-bit cache)
// once for both heads. d is a multiple of 128: 8 registers of columns a
// head, a block of 128 columns at a time.

// The accumulators Z0..Z7 (head 0) and Z8..Z15 (head 1): zeroed, loaded
// from out0 (DI) and out1 (DX), stored back.
#define W512ZERO ZERO16

#define W512LOADACC \
	VMOVUPS (DI), Z0;     \
	VMOVUPS 64(DI), Z1;   \
	VMOVUPS 128(DI), Z2;  \
	VMOVUPS 192(DI), Z3;  \
	VMOVUPS 256(DI), Z4;  \
	VMOVUPS 320(DI), Z5;  \
	VMOVUPS 384(DI), Z6;  \
	VMOVUPS 448(DI), Z7;  \
	VMOVUPS (DX), Z8;     \
	VMOVUPS 64(DX), Z9;   \
	VMOVUPS 128(DX), Z10; \
	VMOVUPS 192(DX), Z11; \
	VMOVUPS 256(DX), Z12; \
	VMOVUPS 320(DX), Z13; \
	VMOVUPS 384(DX), Z14; \
	VMOVUPS 448(DX), Z15

#define W512STORE \
	VMOVUPS Z0, (DI);     \
	VMOVUPS Z1, 64(DI);   \
	VMOVUPS Z2, 128(DI);  \
	VMOVUPS Z3, 192(DI);  \
	VMOVUPS Z4, 256(DI);  \
	VMOVUPS Z5, 320(DI);  \
	VMOVUPS Z6, 384(DI);  \
	VMOVUPS Z7, 448(DI);  \
	VMOVUPS Z8, (DX);     \
	VMOVUPS Z9, 64(DX);   \
	VMOVUPS Z10, 128(DX); \
	VMOVUPS Z11, 192(DX); \
	VMOVUPS Z12, 256(DX); \
	VMOVUPS Z13, 320(DX); \
	VMOVUPS Z14, 384(DX); \
	VMOVUPS Z15, 448(DX)

// The V row's 128 columns at (BX) into Z18..Z25.
#define W512LOADF32 \
	VMOVUPS (BX), Z18;    \
	VMOVUPS 64(BX), Z19;  \
	VMOVUPS 128(BX), Z20; \
	VMOVUPS 192(BX), Z21; \
	VMOVUPS 256(BX), Z22; \
	VMOVUPS 320(BX), Z23; \
	VMOVUPS 384(BX), Z24; \
	VMOVUPS 448(BX), Z25

#define W512LOADF16 \
	VCVTPH2PS (BX), Z18;    \
	VCVTPH2PS 32(BX), Z19;  \
	VCVTPH2PS 64(BX), Z20;  \
	VCVTPH2PS 96(BX), Z21;  \
	VCVTPH2PS 128(BX), Z22; \
	VCVTPH2PS 160(BX), Z23; \
	VCVTPH2PS 192(BX), Z24; \
	VCVTPH2PS 224(BX), Z25

#define W512LOADBF16 \
	VPMOVZXWD (BX), Z18;    \
	VPMOVZXWD 32(BX), Z19;  \
	VPMOVZXWD 64(BX), Z20;  \
	VPMOVZXWD 96(BX), Z21;  \
	VPMOVZXWD 128(BX), Z22; \
	VPMOVZXWD 160(BX), Z23; \
	VPMOVZXWD 192(BX), Z24; \
	VPMOVZXWD 224(BX), Z25; \
	VPSLLD    $16, Z18, Z18; \
	VPSLLD    $16, Z19, Z19; \
	VPSLLD    $16, Z20, Z20; \
	VPSLLD    $16, Z21, Z21; \
	VPSLLD    $16, Z22, Z22; \
	VPSLLD    $16, Z23, Z23; \
	VPSLLD    $16, Z24, Z24; \
	VPSLLD    $16, Z25, Z25

// Z16 = p0[s], Z17 = p1[s]; both heads' accumulators take the row.
#define W512FMA \
	VBROADCASTSS (SI)(CX*4), Z16;  \
	VBROADCASTSS (R11)(CX*4), Z17; \
	VFMADD231PS  Z18, Z16, Z0;     \
	VFMADD231PS  Z19, Z16, Z1;     \
	VFMADD231PS  Z20, Z16, Z2;     \
	VFMADD231PS  Z21, Z16, Z3;     \
	VFMADD231PS  Z22, Z16, Z4;     \
	VFMADD231PS  Z23, Z16, Z5;     \
	VFMADD231PS  Z24, Z16, Z6;     \
	VFMADD231PS  Z25, Z16, Z7;     \
	VFMADD231PS  Z18, Z17, Z8;     \
	VFMADD231PS  Z19, Z17, Z9;     \
	VFMADD231PS  Z20, Z17, Z10;    \
	VFMADD231PS  Z21, Z17, Z11;    \
	VFMADD231PS  Z22, Z17, Z12;    \
	VFMADD231PS  Z23, Z17, Z13;    \
	VFMADD231PS  Z24, Z17, Z14;    \
	VFMADD231PS  Z25, Z17, Z15

// The ...L2 kernels (picked by cpuid.L2Prefetch) prefetch the lines of
// the row 8 KiB ahead (32 rows of a 16-bit 128-wide head, 16 of an f32
// one) into L2: the rows of a chunk are contiguous, and the hardware
// prefetcher alone left the V pass well below a plain read on the Intel
// Xeon kind (a T = 8192 f16 head, one core, 64-row chunks, GB/s without /
// with: from L3 12.3-14.4 / 25.5-26.2, from DRAM 10.6-10.8 / 14.1-14.2;
// T0 at 8 KiB read 23-24 / 9.5, T1 at 4 KiB 23.7 / 14.8; f32 from L3
// 22.6 / 28.1 with T0). The others prefetch nothing, as measured on the
// AMD EPYC kinds (W512NOPF).
#define W512NOPF

#define W512PF16 \
	PREFETCHT1 8192(BX); \
	PREFETCHT1 8256(BX); \
	PREFETCHT1 8320(BX); \
	PREFETCHT1 8384(BX)

#define W512PF32 \
	W512PF16;            \
	PREFETCHT1 8448(BX); \
	PREFETCHT1 8512(BX); \
	PREFETCHT1 8576(BX); \
	PREFETCHT1 8640(BX)

// W512BODY(BLK, LD, GO, LOOP, LOAD, PF, ESH): the kernel (BLK..LOOP its
// labels); PF prefetches ahead of the row LOAD reads; ESH = log2 of the
// element size.
#define W512BODY(BLK, LD, GO, LOOP, LOAD, PF, ESH) \
	MOVQ out0+0(FP), DI;  \
	MOVQ out1+8(FP), DX;  \
	MOVQ p0+16(FP), SI;   \
	MOVQ p1+24(FP), R11;  \
	MOVQ v+32(FP), AX;    \
	MOVQ ldv+40(FP), R8;  \
	SHLQ $ESH, R8;        \
	MOVQ t+48(FP), R9;    \
	MOVQ d+56(FP), R10;   \
BLK:;               \
	CMPQ acc+64(FP), $0;  \
	JNE  LD;      \
	W512ZERO;             \
	JMP  GO;        \
LD:;              \
	W512LOADACC;          \
GO:;                \
	MOVQ AX, BX;          \
	XORQ CX, CX;          \
LOOP:;              \
	LOAD;                 \
	PF;                   \
	W512FMA;              \
	ADDQ R8, BX;          \
	INCQ CX;              \
	CMPQ CX, R9;          \
	JB   LOOP;      \
	W512STORE;            \
	ADDQ $512, DI;        \
	ADDQ $512, DX;        \
	ADDQ $(128<<ESH), AX; \
	SUBQ $128, R10;       \
	JNZ  BLK;       \
	VZEROUPPER;           \
	RET

// func wsum2F32AVX512(out0, out1, p0, p1 *float32, v *float32, ldv, t, d, acc int)
TEXT ·wsum2F32AVX512(SB), NOSPLIT, $0-72
	W512BODY(wf32blk, wf32ld, wf32go, wf32loop, W512LOADF32, W512NOPF, 2)

// func wsum2F16AVX512(out0, out1, p0, p1 *float32, v *uint16, ldv, t, d, acc int)
TEXT ·wsum2F16AVX512(SB), NOSPLIT, $0-72
	W512BODY(wf16blk, wf16ld, wf16go, wf16loop, W512LOADF16, W512NOPF, 1)

// func wsum2BF16AVX512(out0, out1, p0, p1 *float32, v *uint16, ldv, t, d, acc int)
TEXT ·wsum2BF16AVX512(SB), NOSPLIT, $0-72
	W512BODY(wbfblk, wbfld, wbfgo, wbfloop, W512LOADBF16, W512NOPF, 1)

// func wsum2F32AVX512L2(out0, out1, p0, p1 *float32, v *float32, ldv, t, d, acc int)
TEXT ·wsum2F32AVX512L2(SB), NOSPLIT, $0-72
	W512BODY(wf32blk2, wf32ld2, wf32go2, wf32loop2, W512LOADF32, W512PF32, 2)

// func wsum2F16AVX512L2(out0, out1, p0, p1 *float32, v *uint16, ldv, t, d, acc int)
TEXT ·wsum2F16AVX512L2(SB), NOSPLIT, $0-72
	W512BODY(wf16blk2, wf16ld2, wf16go2, wf16loop2, W512LOADF16, W512PF16, 1)

// func wsum2BF16AVX512L2(out0, out1, p0, p1 *float32, v *uint16, ldv, t, d, acc int)
TEXT ·wsum2BF16AVX512L2(SB), NOSPLIT, $0-72
	W512BODY(wbfblk2, wbfld2, wbfgo2, wbfloop2, W512LOADBF16, W512PF16, 1)
