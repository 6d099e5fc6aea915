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
