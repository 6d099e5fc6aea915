#version 450
// Mat-vec for few activation rows (m <= MAXM).
//
// f32 and bf16: each subgroup owns one weight row at a time, its lanes
// stride over the row's 32-bit words (bf16: two weights a word) and
// subgroupAdd reduces each activation row's partial sums.
//
// q8_0 and q4_0: each lane owns one weight row and walks its blocks in
// order, every lane reading the same activation block (a uniform load the
// subgroup shares), with exact int32 block sums and no contraction: the
// canonical order of gelo's Go kernels, so the products are theirs bit for
// bit.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;

#define MAXM 8

void main() {
	uint m = min(params.m, MAXM);
	uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	uint nwg = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
#if FMT <= 1
	uint lane = gl_SubgroupInvocationID;
	uint L = gl_SubgroupSize;
	for (uint row = wg * gl_NumSubgroups + gl_SubgroupID; row < pc.rows; row += nwg * gl_NumSubgroups) {
		float acc[MAXM];
		for (uint i = 0; i < MAXM; i++) acc[i] = 0.0;
#if FMT == 0
		uint base = row * pc.cols;
		for (uint c = lane; c < pc.cols; c += L) {
			float wv = w[base + c];
			for (uint i = 0; i < MAXM; i++) {
				if (i < m) acc[i] += wv * x[i * pc.cols + c];
			}
		}
#else
		uint wpr = (pc.cols + 1u) >> 1;
		uint base = row * wpr;
		for (uint c = lane; c < wpr; c += L) {
			uint v = w[base + c];
			float w0 = uintBitsToFloat(v << 16);
			float w1 = uintBitsToFloat(v & 0xffff0000u);
			uint k = c << 1;
			bool two = k + 1u < pc.cols;
			for (uint i = 0; i < MAXM; i++) {
				if (i < m) {
					acc[i] += w0 * x[i * pc.cols + k];
					if (two) acc[i] += w1 * x[i * pc.cols + k + 1u];
				}
			}
		}
#endif
		for (uint i = 0; i < MAXM; i++) {
			if (i < m) {
				float s = subgroupAdd(acc[i]);
				if (subgroupElect()) y[i * pc.ystride + pc.r0 + row] = s;
			}
		}
	}
#else
	uint nb = pc.cols >> 5;
	uint stride = nwg * gl_WorkGroupSize.x;
	for (uint row = wg * gl_WorkGroupSize.x + gl_LocalInvocationID.x; row < pc.rows; row += stride) {
		precise float acc[MAXM];
		for (uint i = 0; i < MAXM; i++) acc[i] = 0.0;
		uint hb = row * nb * BLOCK_HALVES;
		for (uint b = 0; b < nb; b++) {
			uint h = hb + b * BLOCK_HALVES;
			float dw = unpackHalf2x16(hw(h)).x;
			int isum[MAXM];
			for (uint i = 0; i < MAXM; i++) isum[i] = 0;
#if FMT == 2
			for (uint t = 0; t < 8u; t++) {
				uint wq = hw(h + 1u + 2u * t) | (hw(h + 2u + 2u * t) << 16);
				for (uint i = 0; i < MAXM; i++) {
					if (i < m) isum[i] += dot4(wq, xq[((i * pc.cols) >> 2) + b * 8u + t]);
				}
			}
#else
			for (uint t = 0; t < 4u; t++) {
				uint wq = hw(h + 1u + 2u * t) | (hw(h + 2u + 2u * t) << 16);
				// Nibbles biased by 8: low ones are weights 4t..4t+3, high
				// ones 16+4t..16+4t+3; (n-8)*x summed as n*x - 8*x.
				uint lo = wq & 0x0f0f0f0fu;
				uint hi = (wq >> 4) & 0x0f0f0f0fu;
				for (uint i = 0; i < MAXM; i++) {
					if (i < m) {
						uint base = ((i * pc.cols) >> 2) + b * 8u;
						uint xl = xq[base + t], xh = xq[base + 4u + t];
						isum[i] += dot4(lo, xl) + dot4(hi, xh) - 8 * (dot4(0x01010101u, xl) + dot4(0x01010101u, xh));
					}
				}
			}
#endif
			for (uint i = 0; i < MAXM; i++) {
				if (i < m) {
					precise float s = dw * xd[i * nb + b];
					acc[i] = acc[i] + float(isum[i]) * s;
				}
			}
		}
		for (uint i = 0; i < MAXM; i++) {
			if (i < m) y[i * pc.ystride + pc.r0 + row] = acc[i];
		}
	}
#endif
}
