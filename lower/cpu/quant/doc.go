// Package quant implements GGUF-compatible block-quantized weights (Q8_0 and
// Q4_0, byte-for-byte the llama.cpp/ggml layouts) and a deterministic,
// allocation-free quantized matrix product for the CPU backend.
//
// # Block formats (ggml-common.h)
//
// Both formats cut a row into blocks of QK = 32 consecutive values and store
// one IEEE binary16 scale d (little endian) in front of the block's quants.
//
//	block_q8_0 { ggml_half d; int8_t  qs[32]; }  // 34 bytes, x = d * qs[j]
//	block_q4_0 { ggml_half d; uint8_t qs[16]; }  // 18 bytes, x = d * (q - 8)
//
// In a Q4_0 block, element j (0 <= j < 16) is the LOW nibble of qs[j] and
// element j+16 is the HIGH nibble of qs[j].
//
// Quantization follows ggml's reference quantizers (quantize_row_q8_0_ref,
// quantize_row_q4_0_ref) operation for operation, in float32:
//
//	Q8_0: amax = max_j |x_j|;  d = amax / 127;  id = d != 0 ? 1/d : 0
//	      qs[j] = roundf(x_j * id)            (round half away from zero)
//	      stored scale: fp16(d)               (round to nearest even)
//	Q4_0: max = the x_j of largest |x_j| (the FIRST such j on ties, the
//	      reference's strict `amax < fabsf(v)` test); d = max / -8
//	      id = d != 0 ? 1/d : 0
//	      q_j = min(15, (int8_t)(x_j * id + 8.5f))   (truncation toward 0)
//	      stored scale: fp16(d)
//
// Note that the quants are computed with the float32 d, not with the fp16
// value actually stored (exactly as the reference does), and that an all-zero
// Q4_0 block stores d = -0 (fp16 0x8000) with every nibble 8, since the
// reference divides max = 0 by -8.
//
// Dequantization (dequantize_row_q8_0 / dequantize_row_q4_0) is one float32
// product per element: y_j = float(qs[j]) * fp16_to_fp32(d), and for Q4_0
// y_j = float(q_j - 8) * fp16_to_fp32(d).
//
// # Activations
//
// The right-hand side of a product (the decode/prefill input x, m rows of k
// float32) is quantized per row into blocks of 32 with the SAME rule as
// Q8_0 weights (d = amax/127, id = 1/d, q = roundf(x*id)), except that the
// scale stays float32 (ggml rounds it to fp16 in its q8_0 activation
// blocks; float32 loses nothing and cannot overflow). Quants are stored as
// one contiguous int8 row per input row, scales as one float32 per block,
// and the integer sum of each block's quants is kept too (ggml's q8_1 "s"
// idea) so that the Q4_0 kernels can multiply the unsigned nibbles directly
// and subtract 8*sum afterwards. A block holding a NaN or an infinity gets a
// NaN scale and zero quants, so every output that reads it is NaN.
//
// # The product and its canonical order
//
// MatMulQ computes y[m,n] = x[m,k] · W[n,k]^T (+ bias). For output (i, j),
// with nb = k/32 blocks, it is defined EXACTLY as
//
//	acc = +0
//	for b = 0 .. nb-1:                       // increasing block order
//	    isum = sum_t qw[j,b,t] * qx[i,b,t]   // exact int32 (Q4_0: qw = nibble-8)
//	    s    = fl32(fp16_to_fp32(dw[j,b]) * dx[i,b])
//	    acc  = fl32(acc + fl32(float32(isum) * s))
//	y[i,j] = bias == nil ? acc : fl32(acc + bias[j])
//
// where fl32 is one float32 rounding (no fused multiply-add anywhere). The
// integer block sum is exact (|isum| <= 32*128*127 < 2^24, so float32(isum)
// is exact too), hence the AVX2 assembly and the portable Go code are
// bit-identical, and every y[i,j] is computed entirely by one worker, in
// this order, whatever m, the tile it falls in, the work split or the number
// of workers: row i of a product is bit-identical to the m=1 product of row
// i alone. Steady-state calls allocate nothing.
//
// On amd64 with AVX2 and F16C the hot loops are assembly: the int8
// products use VPMADDUBSW/VPMADDWD (Q8_0 with ggml's sign trick: |w| times
// sign(x, w); Q4_0 with the unsigned nibbles times x, minus 8 times the
// activation block sum), eight outputs share one vector whose lanes are
// reduced per block with a horizontal-add tree, so each lane follows the
// scalar order above. Decode (m = 1) runs 8 weight rows per kernel call and
// prefetches the next 8; m >= 2 runs 2x4 tiles. With AVX512F/BW/VL and
// AVX512_VNNI, m >= 2 runs instead tiles of 16 weight rows (one zmm lane
// per output column) by up to 16 activation rows: each block of the 16
// weight rows is transposed in registers into 4-byte groups of unsigned
// bytes (Q8_0: biased to w+128; Q4_0: the nibbles split into a low-nibble
// half, elements 0-15, and a high-nibble half, elements 16-31), VPDPBUSD
// with the broadcast int8 activations accumulates the exact per-column sums
// in the lanes, and subtracting 128 (Q8_0) or 8 (Q4_0) times the activation
// block sum leaves the exact isum, so no horizontal reduction is needed and
// the float part is the same per-lane order.
// Elsewhere (or with the purego build tag) the portable Go kernels run.
package quant
