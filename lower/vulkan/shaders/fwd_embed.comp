#version 450
// Embedding gather: out[r, :] = table[tokens[r] - r0, :] for the tokens
// whose row lies in this part of the table (a table over the binding cap
// comes in row parts, one dispatch each). A workgroup per row.
// u: 0 d, 1 r0, 2 part rows, 3 tokens offset in idx, 4 out offset,
// 5 out stride. b1 table part, b2 out.
#extension GL_GOOGLE_include_directive : require
#include "fwd.glsl"
layout(local_size_x = 64) in;
void main() {
	uint r = gl_WorkGroupID.x;
	int tok = idx[pc.u[3] + r] - int(pc.u[1]);
	if (tok < 0 || tok >= int(pc.u[2])) return;
	uint d = pc.u[0];
	for (uint j = gl_LocalInvocationID.x; j < d; j += 64u)
		b2[pc.u[4] + r * pc.u[5] + j] = b1[uint(tok) * d + j];
}
