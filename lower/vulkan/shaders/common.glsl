// Bindings and weight access shared by gelo's matmul shaders. FMT picks
// the resident weight's format: 0 f32, 1 bf16 (two a 32-bit word), 2 q8_0,
// 3 q4_0 (GGUF blocks, read as 16-bit halves of 32-bit words, so no 16-bit
// storage feature is needed), 4 int8 (wire.Int8 rows as Device stores
// them: the int8 values four a word, the last word zero-padded, then the
// row's float32 scale: I8_WORDS(cols) words a row) by f32 rows, 5 the same
// int8 weight by rows of uint32 words, modulo 2^32 (the lwe level's
// product; the scale is not read). y[i, r0 + r] = x[i, :] . W[r, :] for
// the rows of one weight part (weights over the binding cap come in parts).

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

// Static per recording: this part's shape and where its rows land in y.
layout(push_constant) uniform Shape {
	uint rows;    // weight rows in this part
	uint cols;    // weight cols (= activation cols)
	uint r0;      // first output column of this part
	uint ystride; // output row stride (the weight's total rows)
} pc;

// Per step: the activation rows of this call, written by the host before
// each replay (never recorded).
layout(std430, set = 0, binding = 0) readonly buffer Params { uint m; } params;

#if FMT == 0
layout(std430, set = 0, binding = 1) readonly buffer Weight { float w[]; };
#else
layout(std430, set = 0, binding = 1) readonly buffer Weight { uint w[]; };
#endif

#if FMT <= 1 || FMT == 4
layout(std430, set = 0, binding = 2) readonly buffer Act { float x[]; };
#elif FMT == 5
// Ciphertext rows: uint32 words, one per column.
layout(std430, set = 0, binding = 2) readonly buffer Act { uint c[]; };
#else
// q8_0 activation rows: int8 quants, four a word, and one scale a block.
layout(std430, set = 0, binding = 2) readonly buffer Act { uint xq[]; };
layout(std430, set = 0, binding = 3) readonly buffer ActScale { float xd[]; };
#endif

#if FMT == 5
layout(std430, set = 0, binding = 4) writeonly buffer Out { uint y[]; };
#else
layout(std430, set = 0, binding = 4) writeonly buffer Out { float y[]; };
#endif

#if FMT != 0
// hw returns 16-bit half h of the weight buffer.
uint hw(uint h) { return (w[h >> 1] >> ((h & 1u) << 4)) & 0xffffu; }
#endif

// Halves per block: q8_0 is an fp16 scale and 32 int8 (17 halves), q4_0
// an fp16 scale and 16 bytes of nibbles (9 halves).
#if FMT == 2
const uint BLOCK_HALVES = 17u;
#elif FMT == 3
const uint BLOCK_HALVES = 9u;
#endif

// dot4 is the exact integer dot product of two words of four int8.
int dot4(uint a, uint b) {
	return bitfieldExtract(int(a), 0, 8) * bitfieldExtract(int(b), 0, 8) +
		bitfieldExtract(int(a), 8, 8) * bitfieldExtract(int(b), 8, 8) +
		bitfieldExtract(int(a), 16, 8) * bitfieldExtract(int(b), 16, 8) +
		bitfieldExtract(int(a), 24, 8) * bitfieldExtract(int(b), 24, 8);
}

#if FMT >= 4
// I8_WORDS is the words of one stored int8 row: its values four a word,
// then its scale.
#define I8_WORDS(cols) ((((cols) + 3u) >> 2) + 1u)

// w8 returns int8 value k of the row whose first word is base,
// sign-extended.
int w8(uint base, uint k) { return bitfieldExtract(int(w[base + (k >> 2)]), int(8u * (k & 3u)), 8); }
#endif
