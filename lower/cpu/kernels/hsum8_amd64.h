// HSUM8, shared by the kernels' assembly files (each including file gets
// its own copy of the permutation table).

// HSUM8 reduces Y0..Y7 each as HSUM does (same additions, same order) and
// stores the 8 sums, in order, at (DST). Clobbers Y0..Y14 except Y13.
#define HSUM8(DST) \
	HSUM8R; \
	VMOVUPS    Y4, DST

// HSUM8R is HSUM8 leaving the 8 sums, in order, in Y4.
#define HSUM8R \
	VPERM2F128 $0x20, Y1, Y0, Y8;  \
	VPERM2F128 $0x31, Y1, Y0, Y9;  \
	VADDPS     Y9, Y8, Y8;         \
	VPERM2F128 $0x20, Y3, Y2, Y10; \
	VPERM2F128 $0x31, Y3, Y2, Y9;  \
	VADDPS     Y9, Y10, Y10;       \
	VPERM2F128 $0x20, Y5, Y4, Y11; \
	VPERM2F128 $0x31, Y5, Y4, Y9;  \
	VADDPS     Y9, Y11, Y11;       \
	VPERM2F128 $0x20, Y7, Y6, Y12; \
	VPERM2F128 $0x31, Y7, Y6, Y9;  \
	VADDPS     Y9, Y12, Y12;       \
	VSHUFPS    $0x44, Y10, Y8, Y0; \
	VSHUFPS    $0xEE, Y10, Y8, Y1; \
	VADDPS     Y1, Y0, Y0;         \
	VSHUFPS    $0x44, Y12, Y11, Y2; \
	VSHUFPS    $0xEE, Y12, Y11, Y3; \
	VADDPS     Y3, Y2, Y2;         \
	VSHUFPS    $0x88, Y2, Y0, Y4;  \
	VSHUFPS    $0xDD, Y2, Y0, Y5;  \
	VADDPS     Y5, Y4, Y4;         \
	VMOVDQU    hsum8Perm<>(SB), Y14; \
	VPERMPS    Y4, Y14, Y4

DATA hsum8Perm<>+0(SB)/4, $0
DATA hsum8Perm<>+4(SB)/4, $4
DATA hsum8Perm<>+8(SB)/4, $1
DATA hsum8Perm<>+12(SB)/4, $5
DATA hsum8Perm<>+16(SB)/4, $2
DATA hsum8Perm<>+20(SB)/4, $6
DATA hsum8Perm<>+24(SB)/4, $3
DATA hsum8Perm<>+28(SB)/4, $7
GLOBL hsum8Perm<>(SB), RODATA|NOPTR, $32
