#version 450
// Elementwise ops over [rows, cols] views: 0 add, 1 mul, 2 silu,
// 3 swiglu of one [rows, 2 cols] input (gate | up), 4 swiglu of two,
// 5 copy, 6 add a broadcast row (bias). silu(x) = x / (1 + exp(-x)).
// u: 0 op, 1 rows, 2 cols, 3 a off, 4 a stride, 5 b off, 6 b stride,
// 7 out off, 8 out stride. b1 a, b2 b, b3 out.
#extension GL_GOOGLE_include_directive : require
#include "fwd.glsl"
layout(local_size_x = 64) in;
float silu(float x) { return x / (1.0 + exp(-x)); }
void main() {
	uint op = pc.u[0], rows = pc.u[1], cols = pc.u[2];
	uint n = rows * cols;
	uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * 64u;
	for (uint e = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationID.x; e < n; e += stride) {
		uint r = e / cols, c = e % cols;
		float a = b1[pc.u[3] + r * pc.u[4] + c];
		float o;
		switch (op) {
		case 0u: o = a + b2[pc.u[5] + r * pc.u[6] + c]; break;
		case 1u: o = a * b2[pc.u[5] + r * pc.u[6] + c]; break;
		case 2u: o = silu(a); break;
		case 3u: o = silu(a) * b1[pc.u[3] + r * pc.u[4] + cols + c]; break;
		case 4u: o = silu(a) * b2[pc.u[5] + r * pc.u[6] + c]; break;
		case 6u: o = a + b2[pc.u[5] + c]; break;
		default: o = a; break;
		}
		b3[pc.u[7] + r * pc.u[8] + c] = o;
	}
}
