#version 450
// q8_0 activation rows for the q8_0 / q4_0 matmuls, as gelo's Go
// quantizer (device/wire quantizeActBlock): per block of 32, amax from
// the bit patterns (a NaN or infinity zeroes the block, scale NaN),
// d = amax / 127, id = 1 / d (0 for d = 0; an overflowing id zeroes the
// block), q = round-half-away-from-zero(x * id), the divides correctly
// rounded (div). An invocation per block.
// u: 0 blocks, 1 blocks per row, 2 x off, 3 x stride.
// b1 x (f32), b2 quants (four int8 a word), b3 scales.
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Idx { int idx[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Q { uint xq[]; };
layout(std430, set = 0, binding = 3) writeonly buffer D { float xd[]; };
layout(push_constant) uniform Push { uint u[32]; } pc;

// div returns a / b (both positive and finite, b not 0) correctly
// rounded to nearest even, as the Go quantizer's float32 divide: Vulkan
// does not require a correctly rounded divide (nor a fused fma), so the
// quotient of the 24-bit significands is a bitwise long division.
float div(float a, float b) {
	uint ab = floatBitsToUint(a), bb = floatBitsToUint(b);
	if (ab == 0u) return 0.0;
	int ea = int((ab >> 23) & 0xffu), eb = int((bb >> 23) & 0xffu);
	uint ma = ab & 0x7fffffu, mb = bb & 0x7fffffu;
	// Subnormals are normalized: 24-bit significands, exponents below 1.
	if (ea == 0) {
		int sh = 23 - findMSB(ma);
		ma <<= uint(sh);
		ea = 1 - sh;
	} else {
		ma |= 0x800000u;
	}
	if (eb == 0) {
		int sh = 23 - findMSB(mb);
		mb <<= uint(sh);
		eb = 1 - sh;
	} else {
		mb |= 0x800000u;
	}
	// q = floor(ma * 2^26 / mb) in [2^25, 2^27): the integer digit
	// (ma / mb is in (1/2, 2)), then 26 fraction bits; r the remainder.
	uint q = ma >= mb ? 1u : 0u, r = ma - q * mb;
	for (int i = 0; i < 26; i++) {
		r <<= 1;
		q <<= 1;
		if (r >= mb) {
			r -= mb;
			q |= 1u;
		}
	}
	int drop = findMSB(q) - 23;
	uint keep = q >> uint(drop);
	uint rest = q & ((1u << uint(drop)) - 1u);
	uint half_ = 1u << uint(drop - 1);
	bool sticky = r != 0u;
	if (rest > half_ || (rest == half_ && (sticky || (keep & 1u) != 0u))) keep++;
	return ldexp(float(keep), ea - eb - 26 + drop);
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
