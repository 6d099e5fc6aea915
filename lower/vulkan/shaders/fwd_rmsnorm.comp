#version 450
// RMSNorm of segments of length d (a whole row, or a head's slice for
// Qwen3's q/k norm): y = w * (x * 1/sqrt(mean(x^2) + eps)), optionally of
// x = a + b with the sum written too (add_rms_norm). A workgroup per
// segment. u: 0 d, 1 segments per row, 2 x off, 3 x stride, 4 b off,
// 5 b stride, 6 y off, 7 y stride, 8 sum off, 9 sum stride, 10 eps bits,
// 11 add flag. b1 x, b2 b, b3 w, b4 y, b5 sum.
#extension GL_GOOGLE_include_directive : require
#include "fwd.glsl"
layout(local_size_x = 64) in;
void main() {
	uint seg = gl_WorkGroupID.x, d = pc.u[0], per = pc.u[1];
	uint r = seg / per, h = seg % per;
	uint xb = pc.u[2] + r * pc.u[3] + h * d;
	uint bb = pc.u[4] + r * pc.u[5] + h * d;
	uint yb = pc.u[6] + r * pc.u[7] + h * d;
	uint sb = pc.u[8] + r * pc.u[9] + h * d;
	bool add = pc.u[11] != 0u;
	float ss = 0.0;
	for (uint j = gl_LocalInvocationID.x; j < d; j += 64u) {
		float v = b1[xb + j];
		if (add) {
			v += b2[bb + j];
			b5[sb + j] = v;
		}
		ss += v * v;
	}
	ss = wgSum(ss);
	float inv = 1.0 / sqrt(ss / float(d) + pf(10));
	for (uint j = gl_LocalInvocationID.x; j < d; j += 64u) {
		float v = b1[xb + j];
		if (add) v += b2[bb + j];
		b4[yb + j] = b3[j] * (v * inv);
	}
}
