#version 450
// Tiled matmul for many activation rows: each 16x16 workgroup computes a
// 16 x 16 tile of y, staging 32 columns of x and W at a time through
// shared memory. Under q8_0 and q4_0 the 32 columns are one block: an
// exact int32 block sum, then acc += isum * (dw * dx) without contraction,
// block by block: the canonical order of gelo's Go kernels. Under int8
// (f32 rows) the order is the Go int8 kernel's (rows.comp).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x = 16, local_size_y = 16) in;

#if FMT <= 1 || FMT == 4
shared float xs[16][33];
shared float ws[16][33];
#else
shared int xs[16][33];
shared int ws[16][33];
shared float xds[16];
shared float wds[16];
#endif

#if FMT == 0
float wat(uint r, uint k) { return w[r * pc.cols + k]; }
#elif FMT == 1
float wat(uint r, uint k) { return uintBitsToFloat(hw(r * (((pc.cols + 1u) >> 1) << 1) + k) << 16); }
#elif FMT == 4
float wat(uint r, uint k) { return float(w8(r * I8_WORDS(pc.cols), k)); }
#endif

void main() {
	uint m = params.m;
	uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
	uint tid = ly * 16u + lx;
	uint rt = gl_WorkGroupID.x * 16u, it = gl_WorkGroupID.y * 16u;
	if (it >= m) return; // a tile past this call's rows (the whole group)
#if FMT == 4
	// int8 by f32 rows in dotInt8's order (rows.comp): the tiles feed
	// each thread's eight lanes over the whole 8-column groups; the tail
	// columns and the scale come after the lane sum.
	uint k8 = pc.cols & ~7u;
	precise float a[8];
	[[unroll]] for (uint l = 0; l < 8u; l++) a[l] = 0.0;
	for (uint k0 = 0; k0 < k8; k0 += 32u) {
		for (uint e = tid; e < 512u; e += 256u) {
			uint rr = e >> 5, kk = e & 31u, k = k0 + kk;
			uint gi = it + rr, gr = rt + rr;
			xs[rr][kk] = (gi < m && k < k8) ? x[gi * pc.cols + k] : 0.0;
			ws[rr][kk] = (gr < pc.rows && k < k8) ? wat(gr, k) : 0.0;
		}
		barrier();
		[[unroll]] for (uint kk = 0; kk < 32u; kk++) {
			if (k0 + kk < k8) {
				precise float p = xs[ly][kk] * ws[lx][kk];
				a[kk & 7u] = a[kk & 7u] + p;
			}
		}
		barrier();
	}
	float acc = 0.0;
	if (it + ly < m && rt + lx < pc.rows) {
		uint xb = (it + ly) * pc.cols, base = (rt + lx) * I8_WORDS(pc.cols);
		precise float s = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
		for (uint k = k8; k < pc.cols; k++) {
			precise float p = float(w8(base, k)) * x[xb + k];
			s = s + p;
		}
		precise float v = uintBitsToFloat(w[base + I8_WORDS(pc.cols) - 1u]) * s;
		acc = v;
	}
#elif FMT <= 1
	float acc = 0.0;
	for (uint k0 = 0; k0 < pc.cols; k0 += 32u) {
		for (uint e = tid; e < 512u; e += 256u) {
			uint rr = e >> 5, kk = e & 31u, k = k0 + kk;
			uint gi = it + rr, gr = rt + rr;
			xs[rr][kk] = (gi < m && k < pc.cols) ? x[gi * pc.cols + k] : 0.0;
			ws[rr][kk] = (gr < pc.rows && k < pc.cols) ? wat(gr, k) : 0.0;
		}
		barrier();
		[[unroll]] for (uint kk = 0; kk < 32u; kk++) acc += xs[ly][kk] * ws[lx][kk];
		barrier();
	}
#else
	precise float acc = 0.0;
	uint nb = pc.cols >> 5;
	for (uint b = 0; b < nb; b++) {
		if (tid < 128u) {
			uint rr = tid >> 3, t = tid & 7u, gi = it + rr;
			uint v = gi < m ? xq[((gi * pc.cols) >> 2) + b * 8u + t] : 0u;
			[[unroll]] for (uint j = 0; j < 4u; j++) xs[rr][4u * t + j] = bitfieldExtract(int(v), int(8u * j), 8);
			if (tid < 16u) {
				uint g = it + tid;
				xds[tid] = g < m ? xd[g * nb + b] : 0.0;
			}
		} else {
			uint u = tid - 128u, rr = u >> 3, t = u & 7u, gr = rt + rr;
			uint h = (gr * nb + b) * BLOCK_HALVES;
#if FMT == 2
			uint v = gr < pc.rows ? (hw(h + 1u + 2u * t) | (hw(h + 2u + 2u * t) << 16)) : 0u;
			[[unroll]] for (uint j = 0; j < 4u; j++) ws[rr][4u * t + j] = bitfieldExtract(int(v), int(8u * j), 8);
#else
			uint v = gr < pc.rows ? hw(h + 1u + t) : 0x8888u;
			ws[rr][2u * t] = int(v & 15u) - 8;
			ws[rr][2u * t + 1u] = int((v >> 8) & 15u) - 8;
			ws[rr][2u * t + 16u] = int((v >> 4) & 15u) - 8;
			ws[rr][2u * t + 17u] = int((v >> 12) & 15u) - 8;
#endif
			if (u < 16u) {
				uint g = rt + u;
				wds[u] = g < pc.rows ? unpackHalf2x16(hw((g * nb + b) * BLOCK_HALVES)).x : 0.0;
			}
		}
		barrier();
		int isum = 0;
		[[unroll]] for (uint kk = 0; kk < 32u; kk++) isum += xs[ly][kk] * ws[lx][kk];
		precise float s = wds[lx] * xds[ly];
		acc = acc + float(isum) * s;
		barrier();
	}
#endif
	uint i = it + ly, r = rt + lx;
	if (i < m && r < pc.rows) y[i * pc.ystride + pc.r0 + r] = acc;
}
