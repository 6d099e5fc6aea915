//go:build !purego

#include "textflag.h"
#include "hsum8_amd64.h"
#include "rows8_amd64.h"

// Decode attention's scores for two query heads sharing a 16-bit KV head,
// with AVX-512: the keys of each row are loaded and widened once for both.
// A register holds the same 8-key chunk of two rows, [row 2p | row 2p+1],
// widened by one conversion (16 distinct keys), and each head's chunk of
// q, broadcast to both halves, multiplies it: one FMA advances a head's 8
// lane accumulators of two rows. Per (head, row, lane) that is the FMA
// chain of gemv1x8F16AVX2 (or BF16's), chunks in order, and the same
// HSUM8 tree per row: each head's bits are the one-head kernel's. (An
// earlier layout, [head 0 | head 1] a register and each row's chunk
// broadcast to both halves, converted every key twice: on one core of
// the AMD EPYC kind it read a cold T = 8192 head at 26-34 GB/s against
// 38-43 for this one and 41-49 for a plain read, BenchmarkDecodeScores.)
// Each pass prefetches two lines of the tile four ahead (a tile of 8 rows
// of a 128-wide head is 2 KiB, so 8 KiB ahead: one tile ahead left the
// scores at 70 % of a plain read of the cache on the AMD EPYC kind, four
// reach it), with NTA (tuned there; T0 ran within 7 % of it) or, in the
// ...L2 kernels that cpuid.L2Prefetch picks, with T1: on the Intel Xeon
// kind NTA fetched next to nothing (a T = 8192 head, one core, GB/s for
// NTA / none / T0 / T1 / a plain read: from L3, 7.5 / 8.0 / 23.9 / 22.6 /
// 19.2; from DRAM, 7.4 / 10.4 / 9.3 / 11.2 / 12.3).

// G2PF16PAIR(RA, RB, X, Y, Z): Z = the key chunks at (RA)(DX*1) (low
// half) and (RB)(DX*1) (high half), 8 f16 values each, widened: one
// conversion for 16 distinct keys.
#define G2PF16PAIR(RA, RB, X, Y, Z) \
	VMOVDQU32    (RA)(DX*1), X;        \
	VINSERTI32X4 $1, (RB)(DX*1), Y, Y; \
	VCVTPH2PS    Y, Z

// G2PBODY(TILE, LOOP, DONE, PAIR, PF): the kernel (gemv2x8F16AVX512
// below), its labels, the widening of a row pair (G2PF16PAIR or
// G2PBF16PAIR) and the prefetch instruction.
// At the end of a tile each head's halves go to Y0..Y7 in row order (the
// high halves first, before the registers they come from are overwritten)
// for its HSUM8.
#define G2PBODY(TILE, LOOP, DONE, PAIR, PF) \
	MOVQ            x0+0(FP), SI;        \
	MOVQ            x1+8(FP), R14;       \
	MOVQ            w+16(FP), AX;        \
	MOVQ            ldw+24(FP), R13;     \
	SHLQ            $1, R13;             \
	ROWS8PTRS; \
	SHLQ            $3, R13;             \
	MOVQ            k+32(FP), R12;       \
	SHLQ            $1, R12;             \
	CMPQ            ntiles+40(FP), $0;   \
	JLE             DONE;                \
TILE:;                                       \
	VPXORD          Z0, Z0, Z0;          \
	VPXORD          Z1, Z1, Z1;          \
	VPXORD          Z2, Z2, Z2;          \
	VPXORD          Z3, Z3, Z3;          \
	VPXORD          Z20, Z20, Z20;       \
	VPXORD          Z21, Z21, Z21;       \
	VPXORD          Z22, Z22, Z22;       \
	VPXORD          Z23, Z23, Z23;       \
	XORQ            DX, DX;              \
	LEAQ            (AX)(R13*4), R15;    \
LOOP:;                                       \
	PF              (R15)(DX*8);         \
	PF              64(R15)(DX*8);       \
	VBROADCASTF32X8 (SI)(DX*2), Z24;     \
	VBROADCASTF32X8 (R14)(DX*2), Z25;    \
	PAIR(AX,        BX, X16, Y16, Z16);  \
	PAIR(CX,        DI, X17, Y17, Z17);  \
	PAIR(R8,        R9, X18, Y18, Z18);  \
	PAIR(R10,       R11, X19, Y19, Z19); \
	VFMADD231PS     Z16, Z24, Z0;        \
	VFMADD231PS     Z16, Z25, Z20;       \
	VFMADD231PS     Z17, Z24, Z1;        \
	VFMADD231PS     Z17, Z25, Z21;       \
	VFMADD231PS     Z18, Z24, Z2;        \
	VFMADD231PS     Z18, Z25, Z22;       \
	VFMADD231PS     Z19, Z24, Z3;        \
	VFMADD231PS     Z19, Z25, Z23;       \
	ADDQ            $16, DX;             \
	CMPQ            DX, R12;             \
	JB              LOOP;                \
	VEXTRACTF32X8   $1, Z3, Y7;          \
	VMOVAPS         Y3, Y6;              \
	VEXTRACTF32X8   $1, Z2, Y5;          \
	VMOVAPS         Y2, Y4;              \
	VEXTRACTF32X8   $1, Z1, Y3;          \
	VMOVAPS         Y1, Y2;              \
	VEXTRACTF32X8   $1, Z0, Y1;          \
	MOVQ            y0+48(FP), R15;      \
	HSUM8((R15));                        \
	VMOVAPS         Y20, Y0;             \
	VEXTRACTF32X8   $1, Z20, Y1;         \
	VMOVAPS         Y21, Y2;             \
	VEXTRACTF32X8   $1, Z21, Y3;         \
	VMOVAPS         Y22, Y4;             \
	VEXTRACTF32X8   $1, Z22, Y5;         \
	VMOVAPS         Y23, Y6;             \
	VEXTRACTF32X8   $1, Z23, Y7;         \
	MOVQ            y1+56(FP), R15;      \
	HSUM8((R15));                        \
	ADDQ            $32, y0+48(FP);      \
	ADDQ            $32, y1+56(FP);      \
	ROWS8NEXT; \
	DECQ            ntiles+40(FP);       \
	JNZ             TILE;                \
DONE:;                                       \
	VZEROUPPER;                          \
	RET

// func gemv2x8F16AVX512(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)
//
// For t < ntiles, r < 8: y_h[8t+r] = dot(x_h[0:k], w[(8t+r)*ldw:][0:k]) for
// h = 0, 1, f16 keys, k a multiple of 8: each head's bits those of
// gemv1x8F16AVX2 on x_h. Accumulators Z0..Z3 (head 0) and Z20..Z23 (head
// 1, which HSUM8 leaves alone), rows 2p and 2p+1 in the halves of the
// p-th; q chunks in Z24 (head 0) and Z25 (head 1).
TEXT ·gemv2x8F16AVX512(SB), NOSPLIT, $0-64
	G2PBODY(g2pftile, g2pfloop, g2pfret, G2PF16PAIR, PREFETCHNTA)

// func gemv2x8F16AVX512L2(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)
//
// gemv2x8F16AVX512 prefetching with T1.
TEXT ·gemv2x8F16AVX512L2(SB), NOSPLIT, $0-64
	G2PBODY(g2pf2tile, g2pf2loop, g2pf2ret, G2PF16PAIR, PREFETCHT1)

// G2PBF16PAIR: G2PF16PAIR on bf16 keys (zero-extended to dwords, shifted
// into the high halves).
#define G2PBF16PAIR(RA, RB, X, Y, Z) \
	VMOVDQU32    (RA)(DX*1), X;        \
	VINSERTI32X4 $1, (RB)(DX*1), Y, Y; \
	VPMOVZXWD    Y, Z;                 \
	VPSLLD       $16, Z, Z

// func gemv2x8BF16AVX512(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)
//
// gemv2x8F16AVX512 on bf16 keys (gemv1x8BF16AVX2's bits per head).
TEXT ·gemv2x8BF16AVX512(SB), NOSPLIT, $0-64
	G2PBODY(g2pbtile, g2pbloop, g2pbret, G2PBF16PAIR, PREFETCHNTA)

// func gemv2x8BF16AVX512L2(x0, x1 *float32, w *uint16, ldw, k, ntiles int, y0, y1 *float32)
//
// gemv2x8BF16AVX512 prefetching with T1.
TEXT ·gemv2x8BF16AVX512L2(SB), NOSPLIT, $0-64
	G2PBODY(g2pb2tile, g2pb2loop, g2pb2ret, G2PBF16PAIR, PREFETCHT1)
