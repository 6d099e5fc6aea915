#version 450
// Causal GQA attention of one query row and head against the KV cache of
// its sequence: positions 0..min(pos[r], limit-1), softmax of the scaled
// scores (max-subtracted), the weighted sum of V. A workgroup per
// (row, head); the scores live in shared memory (MAXT positions).
// u: 0 heads, 1 kv heads, 2 hd, 3 q off, 4 q stride, 5 T, 6 W (cache row
// width), 7 limit, 8 scale bits, 9 out off, 10 out stride, 11 pos offset
// in idx, 12 seq offset in idx, 13 and 14 where in idx the k and v
// caches' offsets lie (the caller's binding moves them per step).
// b1 q, b2 k cache, b3 v cache, b4 out.
#extension GL_GOOGLE_include_directive : require
#include "fwd.glsl"
layout(local_size_x = 64) in;
#define MAXT 4096
shared float sc[MAXT];
shared float qv[512];
void main() {
	uint heads = pc.u[0], kvh = pc.u[1], hd = pc.u[2];
	uint r = gl_WorkGroupID.x / heads, h = gl_WorkGroupID.x % heads;
	uint kh = h / (heads / kvh);
	uint lane = gl_LocalInvocationID.x;
	int pos = idx[pc.u[11] + r], seq = idx[pc.u[12] + r];
	uint n = min(uint(pos) + 1u, pc.u[7]);
	uint qb = pc.u[3] + r * pc.u[4] + h * hd;
	for (uint j = lane; j < hd; j += 64u) qv[j] = b1[qb + j];
	barrier();
	uint cb = uint(seq) * pc.u[5] * pc.u[6] + kh * hd;
	float scale = pf(8);
	float mx = -3.402823466e38;
	for (uint t = lane; t < n; t += 64u) {
		uint kb = uint(idx[pc.u[13]]) + cb + t * pc.u[6];
		float s = 0.0;
		for (uint j = 0; j < hd; j++) s += qv[j] * b2[kb + j];
		s *= scale;
		sc[t] = s;
		mx = max(mx, s);
	}
	mx = wgMax(mx);
	float sum = 0.0;
	for (uint t = lane; t < n; t += 64u) {
		float e = exp(sc[t] - mx);
		sc[t] = e;
		sum += e;
	}
	sum = wgSum(sum); // its barriers also publish sc
	float inv = 1.0 / sum;
	uint ob = pc.u[9] + r * pc.u[10] + h * hd;
	for (uint j = lane; j < hd; j += 64u) {
		float o = 0.0;
		uint vb = uint(idx[pc.u[14]]) + cb + j;
		for (uint t = 0; t < n; t++) o += sc[t] * b3[vb + t * pc.u[6]];
		b4[ob + j] = o * inv;
	}
}
