#version 450
// Per head: an optional RMSNorm of the head's slice (Qwen3's q/k norm),
// an optional RoPE rotation at the row's position (HF rotate_half, the
// float64-computed tables), written to a plain output or to the KV cache
// slot (seq[r], pos[r]) — the fused norm_rope / norm_rope_append ops, and
// with both flags off the V append. A workgroup per (row, head).
// u: 0 heads, 1 hd, 2 x off, 3 x stride, 4 flags (1 norm, 2 rope,
// 4 cache), 5 eps bits, 6 out off, 7 out stride (cache: row width W),
// 8 T (cache capacity), 9 pos offset in idx, 10 seq offset in idx,
// 11 where in idx the cache's offset lies (the caller's binding moves it
// per step, so it is read, not recorded).
// b1 x, b2 norm weight, b3 cos, b4 sin, b5 out.
#extension GL_GOOGLE_include_directive : require
#include "fwd.glsl"
layout(local_size_x = 64) in;
shared float hv[512];
void main() {
	uint heads = pc.u[0], hd = pc.u[1], flags = pc.u[4];
	uint r = gl_WorkGroupID.x / heads, h = gl_WorkGroupID.x % heads;
	uint xb = pc.u[2] + r * pc.u[3] + h * hd;
	int pos = idx[pc.u[9] + r];
	float ss = 0.0;
	for (uint j = gl_LocalInvocationID.x; j < hd; j += 64u) {
		float v = b1[xb + j];
		hv[j] = v;
		ss += v * v;
	}
	ss = wgSum(ss); // its barriers also publish hv
	if ((flags & 1u) != 0u) {
		float inv = 1.0 / sqrt(ss / float(hd) + pf(5));
		for (uint j = gl_LocalInvocationID.x; j < hd; j += 64u) hv[j] = b2[j] * (hv[j] * inv);
		barrier();
	}
	uint ob;
	if ((flags & 4u) != 0u) {
		int seq = idx[pc.u[10] + r];
		ob = pc.u[6] + uint(idx[pc.u[11]]) + (uint(seq) * pc.u[8] + uint(pos)) * pc.u[7] + h * hd;
	} else {
		ob = pc.u[6] + r * pc.u[7] + h * hd;
	}
	uint half_ = hd / 2u;
	for (uint j = gl_LocalInvocationID.x; j < hd; j += 64u) {
		float o = hv[j];
		if ((flags & 2u) != 0u) {
			uint k = j < half_ ? j : j - half_;
			float c = b3[uint(pos) * half_ + k], s = b4[uint(pos) * half_ + k];
			o = j < half_ ? hv[j] * c - hv[j + half_] * s : hv[j] * c + hv[j - half_] * s;
		}
		b5[ob + j] = o;
	}
}
