#version 450
// The lwe level's device product (package lwe, MulRef): ciphertext rows c
// of uint32 words by a resident int8 weight (FMT 5, common.glsl), modulo
// 2^32:
//
//	y[i, r0 + r] = sum_k int32(W_q[r, k]) * c[i, k]  mod 2^32.
//
// Each int8 value is sign-extended to 32 bits and every multiply-add is a
// 32-bit OpIMul/OpIAdd, which wraps: arithmetic mod 2^32, where the sum is
// exact, so any order, tiling or split gives the bits of the Go reference.
// The row scales are not read. KIND is the layout, as the Go side's kinds:
// 0 a subgroup per weight row over at most 8 ciphertext rows, its lanes
// striding over the row's words (matvec.comp's: few rows on a GPU; the
// order of the sum is free here, so subgroupAdd reduces it), 1 a lane per
// weight row over up to 8 ciphertext rows (rows.comp's: the CPU device's),
// 2 a 16 x 16 tile of y through shared memory (tiled.comp's: many rows on
// a GPU).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#if KIND == 0
layout(local_size_x = 64) in;

#define MAXM 8

void main() {
	uint m = min(params.m, MAXM);
	uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	uint nwg = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
	uint lane = gl_SubgroupInvocationID;
	uint L = gl_SubgroupSize;
	uint cols = pc.cols, c4 = cols >> 2;
	for (uint row = wg * gl_NumSubgroups + gl_SubgroupID; row < pc.rows; row += nwg * gl_NumSubgroups) {
		uint base = row * I8_WORDS(cols);
		uint acc[MAXM];
		[[unroll]] for (uint i = 0; i < MAXM; i++) acc[i] = 0u;
		for (uint j = lane; j < c4; j += L) {
			uint v = w[base + j];
			uint q0 = uint(bitfieldExtract(int(v), 0, 8)), q1 = uint(bitfieldExtract(int(v), 8, 8));
			uint q2 = uint(bitfieldExtract(int(v), 16, 8)), q3 = uint(bitfieldExtract(int(v), 24, 8));
			[[unroll]] for (uint i = 0; i < MAXM; i++) {
				if (i < m) {
					uint xb = i * cols + 4u * j;
					acc[i] += q0 * c[xb] + q1 * c[xb + 1u] + q2 * c[xb + 2u] + q3 * c[xb + 3u];
				}
			}
		}
		// The last word's values when cols is not a multiple of 4.
		for (uint k = (c4 << 2) + lane; k < cols; k += L) {
			uint q = uint(w8(base, k));
			[[unroll]] for (uint i = 0; i < MAXM; i++) {
				if (i < m) acc[i] += q * c[i * cols + k];
			}
		}
		[[unroll]] for (uint i = 0; i < MAXM; i++) {
			if (i < m) {
				uint s = subgroupAdd(acc[i]);
				if (subgroupElect()) y[i * pc.ystride + pc.r0 + row] = s;
			}
		}
	}
}

#elif KIND == 2
layout(local_size_x = 16, local_size_y = 16) in;

shared uint xs[16][33];
shared uint ws[16][33];

void main() {
	uint m = params.m, cols = pc.cols, rw = I8_WORDS(pc.cols);
	uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
	uint tid = ly * 16u + lx;
	uint rt = gl_WorkGroupID.x * 16u, it = gl_WorkGroupID.y * 16u;
	if (it >= m) return; // a tile past this call's rows (the whole group)
	uint acc = 0u;
	for (uint k0 = 0; k0 < cols; k0 += 32u) {
		for (uint e = tid; e < 512u; e += 256u) {
			uint rr = e >> 5, kk = e & 31u, k = k0 + kk;
			uint gi = it + rr, gr = rt + rr;
			xs[rr][kk] = (gi < m && k < cols) ? c[gi * cols + k] : 0u;
			ws[rr][kk] = (gr < pc.rows && k < cols) ? uint(w8(gr * rw, k)) : 0u;
		}
		barrier();
		[[unroll]] for (uint kk = 0; kk < 32u; kk++) acc += xs[ly][kk] * ws[lx][kk];
		barrier();
	}
	uint i = it + ly, r = rt + lx;
	if (i < m && r < pc.rows) y[i * pc.ystride + pc.r0 + r] = acc;
}

#elif KIND == 1
layout(local_size_x = 64) in;

#define MR 8

void main() {
	uint i0 = gl_WorkGroupID.z * MR;
	if (i0 >= params.m) return;
	uint mm = min(params.m - i0, MR);
	uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
	uint cols = pc.cols, c4 = cols >> 2;
	for (uint row = wg * gl_WorkGroupSize.x + gl_LocalInvocationID.x; row < pc.rows; row += stride) {
		uint base = row * I8_WORDS(cols);
		uint acc[MR];
		[[unroll]] for (uint i = 0; i < MR; i++) acc[i] = 0u;
		// Whole words of four values; every lane of a subgroup reads the
		// same ciphertext words (uniform loads).
		for (uint j = 0; j < c4; j++) {
			uint v = w[base + j];
			uint q0 = uint(bitfieldExtract(int(v), 0, 8)), q1 = uint(bitfieldExtract(int(v), 8, 8));
			uint q2 = uint(bitfieldExtract(int(v), 16, 8)), q3 = uint(bitfieldExtract(int(v), 24, 8));
			[[unroll]] for (uint i = 0; i < MR; i++) {
				if (i < mm) {
					uint xb = (i0 + i) * cols + 4u * j;
					acc[i] += q0 * c[xb] + q1 * c[xb + 1u] + q2 * c[xb + 2u] + q3 * c[xb + 3u];
				}
			}
		}
		// The last word's values when cols is not a multiple of 4.
		for (uint k = c4 << 2; k < cols; k++) {
			uint q = uint(w8(base, k));
			[[unroll]] for (uint i = 0; i < MR; i++) {
				if (i < mm) acc[i] += q * c[(i0 + i) * cols + k];
			}
		}
		[[unroll]] for (uint i = 0; i < MR; i++) {
			if (i < mm) y[(i0 + i) * pc.ystride + pc.r0 + row] = acc[i];
		}
	}
}
#else
#error "KIND is 0 (matvec), 1 (rows) or 2 (tiled)"
#endif
