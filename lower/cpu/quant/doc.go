// Package quant is the CPU backend's deterministic, allocation-free
// product of block-quantized weights with q8_0 activations. The block
// layouts themselves (wire.Matrix, wire.Activations) are in gelo/device/wire.
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
//
// Q4_K weights (block_q4_K: 256-value super-blocks of 8 sub-blocks of 32,
// each with a 6-bit scale sc and min m under the super-block's fp16 d and
// dmin) multiply the same q8_0 activations, one activation block per
// sub-block, so the order is the one above with a sub-block for a block:
//
//	d1 = fl32(d * sc), m1 = fl32(dmin * m)       // the dequantizer's
//	isum = sum_t q[t] * qx[t]                     // exact: q in 0..15
//	acc = fl32(acc + fl32(fl32(float32(isum) * fl32(d1*dx)) - fl32(float32(sx) * fl32(m1*dx))))
//
// with sx the activation block's quant sum (sum_t (d1 q_t - m1) x_t, split
// into its two exact integer sums). The AVX2 kernel runs 8 weight rows as
// 8 lanes: per super-block it transposes the rows' 16-byte headers so each
// dword lane holds one row's d, dmin and packed scales, unpacks the scales
// in the lanes and keeps the 16 per-lane d1 and m1 in its frame; the
// sub-block sums take the Q4_0 reduction tree. Products with m >= 2 run
// 2x8 tiles (two activation rows through one unpacking of the 8 rows'
// headers, the second row's weights from L1), each lane in the same order.
//
// A Q4_K matrix the CPU keeps for itself is reordered at load into
// wire.Interleaved8 on every AVX2 machine: per super-block of a group of
// 8 weight rows, the rows' header dwords as 4 vectors (one lane a row, no
// transpose) and the quant bytes as 32-byte vectors of 4-byte pieces.
// Its kernel (q4kmm8ILAVX2, decode and GEMMs alike) unpacks the 8 rows'
// d1 and m1 once per super-block, splits each piece into nibbles once for
// 4 activation rows, and one VPMADDUBSW per piece and activation dword
// leaves each row's partial sums in its own lane, so no reduction tree
// runs; the float part is the per-lane order above. The row-major kernel
// stays for a GGUF file's own blocks.
// Where the AVX-512 VNNI kernels run it goes into wire.Interleaved16
// instead: per super-block, the 16 rows' header dwords as 4 vectors (one
// lane a row, so no transpose) and the quant bytes as 64-byte vectors of
// 4-byte pieces. The GEMM kernel (q4kmm16ILAVX512) unpacks the 16 rows'
// d1 and m1 once per super-block into its frame, splits each pair of
// sub-blocks' 8 pieces into nibbles once, and for every activation row
// takes the exact sub-block sums by VPDPBUSD (the nibbles are unsigned;
// the min is the sx term) and the float part per lane in the order above.
// Decode has its own (q4kmv16ILAVX512): the same arithmetic for one row
// with nothing in the frame, the high nibbles masked in place (one
// instruction) and each sub-block's sum split over four accumulators
// (exact integers, so no bit changes) to shorten the VPDPBUSD chains.
//
// A Q8_0 or Q4_0 matrix the CPU keeps for itself is reordered at load
// (LayoutFor says into what): wire.Interleaved8 with AVX2 only, per
// group of 8 weight rows and block, the 8 fp16 scales, then 32-byte
// vectors each holding a 4-byte piece of every row. One VPMADDUBSW and
// VPMADDWD per piece (Q4_0: the low and high nibbles of a piece times two
// broadcast 4-byte pieces of the activation block, the int16 pair sums
// added over the block, then one VPMADDWD) leave each row's exact partial
// sum in its own dword lane, so isum needs no horizontal reduction, one
// VCVTPH2PS reads the 8 scales, and a group streams from one place instead
// of 8 strided rows. The float part is the same per-lane order, so
// interleaved products are bit-identical to row-major ones. Decode runs one
// activation row per group call, GEMMs four (the weight piece loaded, and
// split or made absolute, once for the four; the last 1-3 rows one at a
// time). With the
// AVX-512 VNNI kernels the groups are of 16 rows
// (wire.Interleaved16): a 64-byte vector of pieces is exactly the
// transposed tile the row-major VNNI GEMM builds in registers, so decode
// (one VPDPBUSD per piece and activation dword) and GEMMs (up to 16
// activation rows per group call) read it as it lies.
//
// Where the process may use Intel AMX tiles (cpuid.AMX), the Q8_0, Q4_0
// and Q4_K GEMMs on Interleaved16 take whole 16-row chunks of the
// activations through the tiles instead (amx_amd64.s): a block's 16 x 16
// exact integer sums come from one TDPBSSD (an Interleaved16 Q8_0 block
// is its B operand as it lies; Q4_0 and Q4_K nibbles are unpacked into
// one first), and the float part is the per-lane order above, so the bits
// are the VNNI kernels'. The rows past the last whole chunk, and decode,
// stay on those.
//
// Elsewhere (or with the purego build tag) the portable Go kernels run.
package quant
