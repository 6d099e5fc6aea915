// Package wire holds the payload formats that cross the device boundary in a
// quantized plan: GGUF-compatible block-quantized weights (Q8_0 and Q4_0,
// byte-for-byte the llama.cpp/ggml layouts) and q8_0 activation rows. Every
// device backend reads them and the TEE writes them, so they live here,
// below the kernels (lower/cpu/quant) and above nothing but the standard
// library and one float16 leaf package.
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
package wire
