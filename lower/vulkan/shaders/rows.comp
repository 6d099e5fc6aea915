#version 450
// A lane per weight row: each lane walks its row in order and every lane
// of a subgroup reads the same activation word (a uniform load), so the
// only per-lane loads are the weight's, 16 bytes (f32, bf16) or a block's
// 32-bit words (q8_0: 9, q4_0: 5) at a time, each used for up to 8
// activation rows (the z group picks which 8). On a CPU device (lavapipe)
// a per-lane load is a scalar loop, so this is the fast layout there, for
// any row count.
//
// q8_0, q4_0 and int8 keep the canonical order of gelo's Go kernels (exact int32
// block sums, acc += isum * (dw * dx) block by block, no contraction): the
// products are theirs bit for bit.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x = 64) in;

#define MR 8

#if FMT == 0
layout(std430, set = 0, binding = 1) readonly buffer Weight4 { vec4 w4[]; };
#elif FMT == 1
layout(std430, set = 0, binding = 1) readonly buffer Weight4 { uvec4 w4[]; };
#endif

void main() {
	uint i0 = gl_WorkGroupID.z * MR;
	if (i0 >= params.m) return;
	uint mm = min(params.m - i0, MR);
	uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
	uint cols = pc.cols;
	for (uint row = wg * gl_WorkGroupSize.x + gl_LocalInvocationID.x; row < pc.rows; row += stride) {
#if FMT == 4
		// int8 by f32 rows in the canonical order of gelo's Go int8
		// kernel (dotInt8), so the products are its bits: eight lanes,
		// lane l summing in order the products of the columns l mod 8 of
		// the whole 8-column groups, each product rounded before it is
		// added; the lanes summed ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7));
		// the tail columns added one by one; then times the row's scale.
		// One activation row at a time (the weight row is re-read from
		// cache), so a lane holds 8 accumulators, not 8 x MR.
		uint base = row * I8_WORDS(cols);
		uint k8 = cols & ~7u;
		float sw = uintBitsToFloat(w[base + I8_WORDS(cols) - 1u]);
		for (uint i = 0; i < mm; i++) {
			uint xb = (i0 + i) * cols;
			precise float a[8];
			[[unroll]] for (uint l = 0; l < 8u; l++) a[l] = 0.0;
			for (uint k = 0; k < k8; k += 8u) {
				uint v0 = w[base + (k >> 2)], v1 = w[base + (k >> 2) + 1u];
				[[unroll]] for (uint l = 0; l < 4u; l++) {
					precise float p0 = float(bitfieldExtract(int(v0), int(8u * l), 8)) * x[xb + k + l];
					precise float p1 = float(bitfieldExtract(int(v1), int(8u * l), 8)) * x[xb + k + 4u + l];
					a[l] = a[l] + p0;
					a[4u + l] = a[4u + l] + p1;
				}
			}
			precise float s = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
			for (uint k = k8; k < cols; k++) {
				precise float p = float(w8(base, k)) * x[xb + k];
				s = s + p;
			}
			precise float v = sw * s;
			y[(i0 + i) * pc.ystride + pc.r0 + row] = v;
		}
#elif FMT <= 1
		float acc[MR];
		[[unroll]] for (uint i = 0; i < MR; i++) acc[i] = 0.0;
#if FMT == 0
		if ((cols & 3u) == 0u) {
			uint c4 = cols >> 2;
			uint base = row * c4;
			for (uint j = 0; j < c4; j++) {
				vec4 wv = w4[base + j];
				[[unroll]] for (uint i = 0; i < MR; i++) {
					if (i < mm) {
						uint xb = (i0 + i) * cols + 4u * j;
						acc[i] += dot(wv, vec4(x[xb], x[xb + 1u], x[xb + 2u], x[xb + 3u]));
					}
				}
			}
		} else {
			uint base = row * cols;
			for (uint k = 0; k < cols; k++) {
				float wv = w[base + k];
				[[unroll]] for (uint i = 0; i < MR; i++) {
					if (i < mm) acc[i] += wv * x[(i0 + i) * cols + k];
				}
			}
		}
#else
		if ((cols & 7u) == 0u) {
			uint c8 = cols >> 3;
			uint base = row * c8;
			for (uint j = 0; j < c8; j++) {
				uvec4 v = w4[base + j];
				vec4 lo = vec4(uintBitsToFloat(v.x << 16), uintBitsToFloat(v.x & 0xffff0000u),
					uintBitsToFloat(v.y << 16), uintBitsToFloat(v.y & 0xffff0000u));
				vec4 hi = vec4(uintBitsToFloat(v.z << 16), uintBitsToFloat(v.z & 0xffff0000u),
					uintBitsToFloat(v.w << 16), uintBitsToFloat(v.w & 0xffff0000u));
				[[unroll]] for (uint i = 0; i < MR; i++) {
					if (i < mm) {
						uint xb = (i0 + i) * cols + 8u * j;
						acc[i] += dot(lo, vec4(x[xb], x[xb + 1u], x[xb + 2u], x[xb + 3u])) +
							dot(hi, vec4(x[xb + 4u], x[xb + 5u], x[xb + 6u], x[xb + 7u]));
					}
				}
			}
		} else {
			uint wpr = (cols + 1u) >> 1;
			uint base = row * wpr;
			for (uint c = 0; c < wpr; c++) {
				uint v = w[base + c];
				float w0 = uintBitsToFloat(v << 16), w1 = uintBitsToFloat(v & 0xffff0000u);
				uint k = c << 1;
				bool two = k + 1u < cols;
				[[unroll]] for (uint i = 0; i < MR; i++) {
					if (i < mm) {
						acc[i] += w0 * x[(i0 + i) * cols + k];
						if (two) acc[i] += w1 * x[(i0 + i) * cols + k + 1u];
					}
				}
			}
		}
#endif
		[[unroll]] for (uint i = 0; i < MR; i++) {
			if (i < mm) y[(i0 + i) * pc.ystride + pc.r0 + row] = acc[i];
		}
#else
		uint nb = cols >> 5;
		precise float acc[MR];
		[[unroll]] for (uint i = 0; i < MR; i++) acc[i] = 0.0;
		for (uint b = 0; b < nb; b++) {
			// The block starts at 16-bit half h: read the 32-bit words
			// that hold it; an odd h puts the scale in the high half of
			// the first word and the quants word-aligned after it.
			uint h = (row * nb + b) * BLOCK_HALVES;
			uint wi = h >> 1;
			bool odd = (h & 1u) != 0u;
#if FMT == 2
			const uint NW = 9u, NQ = 8u;
#else
			const uint NW = 5u, NQ = 4u;
#endif
			uint ws[NW];
			[[unroll]] for (uint t = 0; t < NW; t++) ws[t] = w[wi + t];
			float dw = unpackHalf2x16(odd ? ws[0] >> 16 : ws[0] & 0xffffu).x;
			uint q[NQ];
			[[unroll]] for (uint t = 0; t < NQ; t++) q[t] = odd ? ws[t + 1u] : (ws[t] >> 16) | (ws[t + 1u] << 16);
			[[unroll]] for (uint i = 0; i < MR; i++) {
				if (i < mm) {
					uint base = (((i0 + i) * cols) >> 2) + b * 8u;
					int isum = 0;
#if FMT == 2
					[[unroll]] for (uint t = 0; t < 8u; t++) isum += dot4(q[t], xq[base + t]);
#else
					// Nibbles biased by 8: low ones are weights 4t..4t+3,
					// high ones 16+4t..16+4t+3; (n-8)*x summed as n*x - 8*x.
					[[unroll]] for (uint t = 0; t < 4u; t++) {
						uint xl = xq[base + t], xh = xq[base + 4u + t];
						isum += dot4(q[t] & 0x0f0f0f0fu, xl) + dot4((q[t] >> 4) & 0x0f0f0f0fu, xh) -
							8 * (dot4(0x01010101u, xl) + dot4(0x01010101u, xh));
					}
#endif
					precise float s = dw * xd[(i0 + i) * nb + b];
					acc[i] = acc[i] + float(isum) * s;
				}
			}
		}
		[[unroll]] for (uint i = 0; i < MR; i++) {
			if (i < mm) y[(i0 + i) * pc.ystride + pc.r0 + row] = acc[i];
		}
#endif
	}
}
