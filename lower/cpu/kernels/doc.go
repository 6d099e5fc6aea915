// Package kernels holds the CPU kernels of a Qwen3 decoder block, in pure Go
// plus Go assembly (amd64 AVX2+FMA, and AVX-512 for the GEMM tiles): matrix
// products, RMSNorm, QK-norm, RoPE, causal GQA attention against a KV cache,
// KV append, embedding gather and the elementwise ops.
//
// # Contexts and allocation
//
// Kernels are methods on a *Ctx, which owns a persistent pool of workers
// (started once by NewCtx, stopped by Close) and all scratch memory. Work is
// handed to the pool through jobs preallocated inside the Ctx, so steady
// state calls allocate nothing. A Ctx serves one caller at a time.
//
// # Determinism
//
// Results are bit-identical whatever the number of workers or GOMAXPROCS:
// no reduction is ever split across workers; every output element is
// computed by one task in a fixed order, and the work split only decides
// which elements a task owns. Beyond that, the matrix product uses ONE
// evaluation order for every dot product, whatever the kernel (matvec,
// 4x3 AVX2 tile, 6x8 AVX-512 tile, scalar), the tile position, m, or the
// split: row i of an m-row product is bit-identical to the 1-row product of
// row i. Prefill and decode, batched and serial decode, therefore agree
// exactly.
//
// # The canonical dot product
//
// For x, w of length k, with C = k/8 (integer division) and r = k%8, all in
// float32:
//
//  1. Eight lane accumulators a[0..7]. Tail first: a[l] = x[8C+l]*w[8C+l]
//     (one rounded product) for l < r, and a[l] = +0 for l >= r.
//  2. For chunks c = 0, 1, ..., C-1 in order, for every lane l:
//     a[l] = fma(x[8c+l], w[8c+l], a[l]) (fused, one rounding).
//  3. Horizontal sum: ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7)).
//  4. MatMulT then adds the bias: y = dot + bias[j] (one rounding).
//
// The assembly kernels implement exactly this (the AVX-512 tile keeps two such
// 8-lane dot products in one 16-lane register; tests compare against an
// exact software FMA). MatMulTBF16 (bf16 weights) evaluates the same order
// on the exactly widened weights, so it is bit-identical to MatMulT on them. The portable Go fallback (other architectures,
// -tags purego, or a CPU without AVX2/FMA) follows the same lane structure
// with `a[l] += x*w`, which the Go compiler fuses into an FMA only where it
// chooses to (arm64, or amd64 built with GOAMD64=v3); elsewhere the product
// is rounded separately. Fallback results are therefore close to, and not
// guaranteed bit-identical with, the assembly: a plan and its replay must
// run the same build on the same kind of machine to match bit for bit.
// Everything else in the package avoids fusion explicitly (float32(a*b)
// conversions), so it does not depend on the compiler's choice.
//
// # Other orders
//
// RMSNorm accumulates the sum of squares in float64 in index order; RoPE
// tables are computed in float64 and rounded once; expf (softmax, SiLU) is
// a fixed sequence of float32 operations with no FMA (the vector version is
// bit-identical to the scalar one); attention's softmax sum is a float64
// sum over 4 interleaved partials and its weighted V sum is a fused
// multiply-add per position in ascending position order. See each kernel.
package kernels
