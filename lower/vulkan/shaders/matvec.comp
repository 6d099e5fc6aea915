#version 450
// Mat-vec for few activation rows (m <= MAXM), f32 and bf16, the GPU
// layout: each subgroup owns one weight row at a time, its lanes stride
// over the row's 32-bit words (bf16: two weights a word, so coalesced
// loads) and subgroupAdd reduces each activation row's partial sums.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

#if FMT > 1
#error "matvec.comp is f32 and bf16 only; rows.comp serves q8_0 and q4_0"
#endif

layout(local_size_x = 64) in;

#define MAXM 8

void main() {
	uint m = min(params.m, MAXM);
	uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
	uint nwg = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
	uint lane = gl_SubgroupInvocationID;
	uint L = gl_SubgroupSize;
	for (uint row = wg * gl_NumSubgroups + gl_SubgroupID; row < pc.rows; row += nwg * gl_NumSubgroups) {
		float acc[MAXM];
		[[unroll]] for (uint i = 0; i < MAXM; i++) acc[i] = 0.0;
#if FMT == 0
		uint base = row * pc.cols;
		for (uint c = lane; c < pc.cols; c += L) {
			float wv = w[base + c];
			[[unroll]] for (uint i = 0; i < MAXM; i++) {
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
			[[unroll]] for (uint i = 0; i < MAXM; i++) {
				if (i < m) {
					acc[i] += w0 * x[i * pc.cols + k];
					if (two) acc[i] += w1 * x[i * pc.cols + k + 1u];
				}
			}
		}
#endif
		[[unroll]] for (uint i = 0; i < MAXM; i++) {
			if (i < m) {
				float s = subgroupAdd(acc[i]);
				if (subgroupElect()) y[i * pc.ystride + pc.r0 + row] = s;
			}
		}
	}
}
