// Bindings of gelo's whole-forward shaders (fwd_*.comp): binding 0 holds
// the step's index inputs (tokens, pos, seq as int32, written by the host
// before each replay), bindings 1-7 the operands. Every operand is bound
// whole; where a value starts and its row stride are push constants, so a
// view (a column slice, the last row, a cache slot) costs no copy.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(std430, set = 0, binding = 0) readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 1) buffer B1 { float b1[]; };
layout(std430, set = 0, binding = 2) buffer B2 { float b2[]; };
layout(std430, set = 0, binding = 3) buffer B3 { float b3[]; };
layout(std430, set = 0, binding = 4) buffer B4 { float b4[]; };
layout(std430, set = 0, binding = 5) buffer B5 { float b5[]; };

// Static per recording: shapes, offsets and strides (meaning per shader).
layout(push_constant) uniform Push { uint u[32]; } pc;

float pf(uint i) { return uintBitsToFloat(pc.u[i]); }

shared float red[64];

// wgSum returns the sum of v over the 64 lanes of the workgroup (every
// lane gets it); all lanes must call it.
float wgSum(float v) {
	float s = subgroupAdd(v);
	if (subgroupElect()) red[gl_SubgroupID] = s;
	barrier();
	float t = 0.0;
	for (uint i = 0; i < gl_NumSubgroups; i++) t += red[i];
	barrier();
	return t;
}

float wgMax(float v) {
	float s = subgroupMax(v);
	if (subgroupElect()) red[gl_SubgroupID] = s;
	barrier();
	float t = red[0];
	for (uint i = 1; i < gl_NumSubgroups; i++) t = max(t, red[i]);
	barrier();
	return t;
}
