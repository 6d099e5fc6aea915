// K16CONSTS sets the masks K16HEAD and the kernels use: Z25 = 0x0f,
// Z26 = 0x3f and Z27 = 0x03 in every byte, Z28 = 0xff in every dword
// (clobbers R10).
#define K16CONSTS \
	MOVL $0x0f, R10;         \
	VPBROADCASTB R10, Z25;   \
	MOVL $0x3f, R10;         \
	VPBROADCASTB R10, Z26;   \
	MOVL $0x03, R10;         \
	VPBROADCASTB R10, Z27;   \
	MOVL $0xff, R10;         \
	VPBROADCASTD R10, Z28

// K16HEAD, shared by the Q4_K Interleaved16 kernels (dotq4k16_amd64.s,
// dotq4kmv16_amd64.s): the super-block header at AX, the 16 rows' header
// dwords as 4 vectors, unpacked in the lanes: Z4 = d, Z5 = dmin (from
// fp16), Z6 = sc_0..3 and Z7 = m_0..3 (one byte each per dword), Z8 =
// sc_4..7 and Z10 = m_4..7. Needs Z25 = 0x0f, Z26 = 0x3f and Z27 = 0x03
// in every byte; clobbers Z0-Z3, Z9 and Z11.
#define K16HEAD \
	VMOVDQU32 0(AX), Z0;    \
	VMOVDQU32 64(AX), Z1;   \
	VMOVDQU32 128(AX), Z2;  \
	VMOVDQU32 192(AX), Z3;  \
	VPMOVDW   Z0, Y4;       \
	VCVTPH2PS Y4, Z4;       \
	VPSRLD    $16, Z0, Z5;  \
	VPMOVDW   Z5, Y5;       \
	VCVTPH2PS Y5, Z5;       \
	VPANDD    Z26, Z1, Z6;  \
	VPANDD    Z26, Z2, Z7;  \
	VPANDD    Z25, Z3, Z8;  \
	VPSRLD    $6, Z1, Z9;   \
	VPANDD    Z27, Z9, Z9;  \
	VPSLLD    $4, Z9, Z9;   \
	VPORD     Z9, Z8, Z8;   \
	VPSRLD    $4, Z3, Z10;  \
	VPANDD    Z25, Z10, Z10; \
	VPSRLD    $6, Z2, Z11;  \
	VPANDD    Z27, Z11, Z11; \
	VPSLLD    $4, Z11, Z11; \
	VPORD     Z11, Z10, Z10

// K16SCALE(V, F, DST), K16SCALESH(SH, V, F, DST), K16SCALE24(V, F, DST):
// one lane-wise 6-bit field of V (its low byte; the byte at bit SH; its top
// byte) times F, stored at DST (Z28 = 0xff in every dword; clobbers Z12).
#define K16SCALE(V, F, DST) \
	VPANDD    Z28, V, Z12;   \
	VCVTDQ2PS Z12, Z12;      \
	VMULPS    F, Z12, Z12;   \
	VMOVUPS   Z12, DST

#define K16SCALESH(SH, V, F, DST) \
	VPSRLD    $SH, V, Z12;   \
	VPANDD    Z28, Z12, Z12; \
	VCVTDQ2PS Z12, Z12;      \
	VMULPS    F, Z12, Z12;   \
	VMOVUPS   Z12, DST

#define K16SCALE24(V, F, DST) \
	VPSRLD    $24, V, Z12;   \
	VCVTDQ2PS Z12, Z12;      \
	VMULPS    F, Z12, Z12;   \
	VMOVUPS   Z12, DST

// K16SCALES(BASE), after K16HEAD (and Z28 = 0xff in every dword): the
// dequantizer's per-row sub-block scales d1_s = fl32(d * sc_s) at
// 64*s(BASE) and mins m1_s = fl32(dmin * m_s) at 512+64*s(BASE), s < 8.
// Clobbers Z12.
#define K16SCALES(BASE) \
	K16SCALE(Z6, Z4, 0(BASE));          \
	K16SCALE(Z7, Z5, 512(BASE));        \
	K16SCALESH(8, Z6, Z4, 64(BASE));    \
	K16SCALESH(8, Z7, Z5, 576(BASE));   \
	K16SCALESH(16, Z6, Z4, 128(BASE));  \
	K16SCALESH(16, Z7, Z5, 640(BASE));  \
	K16SCALE24(Z6, Z4, 192(BASE));      \
	K16SCALE24(Z7, Z5, 704(BASE));      \
	K16SCALE(Z8, Z4, 256(BASE));        \
	K16SCALE(Z10, Z5, 768(BASE));       \
	K16SCALESH(8, Z8, Z4, 320(BASE));   \
	K16SCALESH(8, Z10, Z5, 832(BASE));  \
	K16SCALESH(16, Z8, Z4, 384(BASE));  \
	K16SCALESH(16, Z10, Z5, 896(BASE)); \
	K16SCALE24(Z8, Z4, 448(BASE));      \
	K16SCALE24(Z10, Z5, 960(BASE))
