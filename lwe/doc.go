// Package lwe is the integer arithmetic of the `lwe` protection level
// (issue 50): an additive lattice mask over Z_q, q = 2^32, under which an
// untrusted device multiplies a secret activation row by a public int8
// weight matrix. It holds the quantized weights, the public matrix A, the
// hint H, the per-row pads, the encode and decode of a row, the device's
// product (reference forms) and the TEE's Freivalds check of a
// device-supplied hint. Compiler, backends and harness wire it in; this
// package knows nothing of them.
//
// # Orientation (used everywhere in this package)
//
// Weights are in the Hugging Face Linear layout: W is [d_out, d_in] and
// y = W x. The integer matrix is W_q [d_out, d_in], row j = w_j. Then
//
//	A    d_in x lambda, uniform mod 2^32, from a public seed
//	s    lambda entries, ternary, exactly h nonzeros (secret, per row)
//	e    d_in entries, centred binomial CBD(2) (secret, per row)
//	c  = A s + e + Delta x_q             (d_in words: what crosses)
//	y  = W_q c                            (d_out words: the device's result)
//	H  = W_q A                            (d_out x lambda: public hint)
//	u  = H s                              (d_out words: the TEE's pad for y)
//	v  = centre(y - u) = W_q (Delta x_q + e)  (exact, when no product wraps)
//
// all mod 2^32. The issue writes H = W_q^T A: the same matrix, with W
// stored [d_in, d_out]. Matrices whose columns are summed are stored
// transposed, so that a column is contiguous: Public holds A^T (row k =
// column a_k of A, d_in words) and Hint holds H^T (row k = column
// h_k = W_q a_k of H, d_out words). H^T is exactly what the device returns
// when A's columns are sent to it as a batch of lambda rows, so a
// device-computed hint needs no transpose.
//
// # Pads and their costs
//
// A pad is (m = A s + e, u = H s) for one row: h column additions of A
// (d_in h word additions) and of each hint (d_out h), from the pseudorandom
// stream of its counter (PadGen). It does not depend on the data, so a Pool
// fills pads ahead of time. Fill makes one pad and reads h whole columns
// of each public matrix: 4 h (d_in + d_out) bytes a row from memory, the
// row's cost. FillBatch makes the pads of consecutive counters together
// (the same words): once the batch reads at least 6 lambda columns
// (rows h >= 6 lambda, 308 rows at lambda 4096, h 80), it tiles the output
// words, copies each tile of A^T and of each H^T once into sub-tiles that
// stay in L2 (lambda slices of 64 words, 1 MiB), and adds every row's h
// signed slices from there, so each public matrix leaves memory once per
// batch (a prefill's n rows, a pool's bulk) and the rows cost additions
// from L2 only. The column sums run in AVX2 (addColumnsAt: four columns a
// pass; addTileAt: 64 words in registers over all h columns), in
// portable Go without it (the same words). Encode is x_q = round(x / step),
// c = m + Delta x_q: O(d_in). Decode is v = centre(y - u) and
// y_j = v_j step s_w[j] / Delta: O(d_out). The hint costs d_out d_in lambda
// multiply-adds in the TEE (ComputeHint) or, computed by the device,
// reps (lambda (d_in + d_out) + d_in d_out) to check (VerifyHint), the
// lambda d_in of A r shared by every matrix of one width (VerifyHints).
//
// # No wrap
//
// v is recovered exactly when |v_j| < 2^31 for every j. By Cauchy-Schwarz
// |v_j| <= |w_j|_2 (Delta |x_q|_2 + |e|_2) and |e|_2 <= 2 sqrt(d_in), so
// Encoder picks per row the smallest step for which this bound stays below
// 2^31 for every rounding of x / step and every e (see Encoder). What this
// leaves: |x_q|_2 ~= 2^31 / (Delta max_j |w_j|_2), i.e.
// log2(|x_q|_2) = 31 - log2(Delta) - log2(max_j |w_j|_2) bits over the
// whole row, and log2(|x_q|_2 / sqrt(d_in)) bits per coordinate at the
// row's rms (EffectiveBits). For 64 Gaussian rows quantized to int8
// (max_j |w_j|_2 ~= 40-44 sqrt(d_in)) and Delta = 16 that is 15.7 / 9.7
// bits at d_in = 4096 and 16.6 / 11.6 at d_in = 1024 (TestEffectiveBits);
// the worst case, every weight +-127, leaves 14.0 / 8.0 at d_in = 4096.
// Heavier-tailed weight rows (a larger max against the same rms) leave
// more. An activation outlier spends the budget: one coordinate at 1000x
// the rms at d_in = 4096 makes |x|_2 16x larger and costs 4 bits at the
// rms (q8_0's blocks of 32 confine an outlier to its block).
//
// # The noise that decode keeps
//
// Decode does not remove W_q e: the TEE knows e, but W_q e is a full
// d_out x d_in product, the work the device is there to do. So
//
//	y_j = s_w[j] step (w_j . x_q) + s_w[j] step (w_j . e) / Delta,
//
// an exact integer pipeline plus additive noise (w_j . e) / Delta in units
// of s_w[j] step. With e_i independent, mean 0, variance 1 (CBD(2)), the
// noise has mean 0 and standard deviation |w_j|_2 / Delta, and is at most
// 2 |w_j|_1 / Delta. The rounding of x to x_q already adds
// w_j . (x_q - x/step), standard deviation |w_j|_2 / sqrt(12) and at most
// |w_j|_1 / 2: at Delta = 16 the lattice noise is 0.22x the activation
// rounding's standard deviation and 0.25x its worst case (NoiseBound,
// TestDecodeNoise).
//
// # Security notes that are not arithmetic
//
// The scheme's hardness (LWE with a sparse ternary secret, one A per engine
// start) is estimated elsewhere (issue 50). This package keeps pads secret
// and single-use: Encode refuses a pad whose m was used, Decode one whose u
// was, and both wipe what they consumed. The column additions read A and H
// (or FillBatch's packed tiles of them) at the secret support of s, so a
// cache-timing observer inside the host could learn the support; the sign
// of each term is applied without a branch, the instructions run depend on
// h, lambda and the batch's shape only (the tiling's choice included), the
// check of the column indices accumulates without a branch, the
// membership test of the sampler scans all h positions. FillBatch wipes
// every row's support and signs, and its streams, before it returns.
package lwe
