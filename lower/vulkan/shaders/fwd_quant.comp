#version 450
// q8_0 activation rows for the q8_0 / q4_0 matmuls, as gelo's Go
// quantizer (device/wire quantizeActBlock): per block of 32, amax from
// the bit patterns (a NaN or infinity zeroes the block, scale NaN),
// d = amax / 127, id = 1 / d (0 for d = 0; an overflowing id zeroes the
// block), q = round-half-away-from-zero(x * id). The divisions are
// refined with an FMA step, since Vulkan does not require a correctly
// rounded divide. An invocation per block.
// u: 0 blocks, 1 blocks per row, 2 x off, 3 x stride.
// b1 x (f32), b2 quants (four int8 a word), b3 scales.
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Q { uint xq[]; };
layout(std430, set = 0, binding = 3) writeonly buffer D { float xd[]; };
layout(push_constant) uniform Push { uint u[32]; } pc;

// div returns a / b rounded as an exact divide would be (one Newton step
// on the reciprocal's quotient; exact for the values it sees here).
float div(float a, float b) {
	precise float r = 1.0 / b;
	precise float q = a * r;
	precise float e = fma(-q, b, a);
	return fma(e, r, q);
}

void main() {
	uint blk = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
	if (blk >= pc.u[0]) return;
	uint row = blk / pc.u[1], b = blk % pc.u[1];
	uint xb = pc.u[2] + row * pc.u[3] + b * 32u;
	uint mbits = 0u;
	for (uint j = 0; j < 32u; j++) mbits = max(mbits, floatBitsToUint(x[xb + j]) & 0x7fffffffu);
	float d = 0.0;
	bool zero = false;
	if (mbits >= 0x7f800000u) {
		d = uintBitsToFloat(0x7fc00000u);
		zero = true;
	} else {
		d = div(uintBitsToFloat(mbits), 127.0);
	}
	float id = 0.0;
	if (!zero && d != 0.0) {
		id = div(1.0, d);
		if (isinf(id)) zero = true;
	}
	for (uint w = 0; w < 8u; w++) {
		uint word = 0u;
		for (uint t = 0; t < 4u; t++) {
			int r = 0;
			if (!zero) {
				precise float v = x[xb + 4u * w + t] * id;
				float a = abs(v), fl = floor(a);
				r = int(fl) + (a - fl >= 0.5 ? 1 : 0);
				if (v < 0.0) r = -r;
			}
			word |= (uint(r) & 0xffu) << (8u * t);
		}
		xq[blk * 8u + w] = word;
	}
	xd[blk] = d;
}
