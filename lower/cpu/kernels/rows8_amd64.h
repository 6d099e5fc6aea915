// ROWS8PTRS and ROWS8NEXT, shared by the 8-row tile kernels' assembly
// (gemv1x8AVX2, gemv1x8F16AVX2, gemv1x8BF16AVX2 and the AVX-512 pair
// scores): the tile's rows at AX, BX, CX, DI, R8, R9, R10, R11, R13 bytes
// apart.

// ROWS8PTRS points BX..R11 at rows 1..7 of the tile at AX (row stride R13).
#define ROWS8PTRS \
	LEAQ (AX)(R13*1), BX;  \
	LEAQ (BX)(R13*1), CX;  \
	LEAQ (CX)(R13*1), DI;  \
	LEAQ (DI)(R13*1), R8;  \
	LEAQ (R8)(R13*1), R9;  \
	LEAQ (R9)(R13*1), R10; \
	LEAQ (R10)(R13*1), R11

// ROWS8NEXT moves the 8 row pointers on by R13 bytes (by then the tile
// advance, 8 rows).
#define ROWS8NEXT \
	ADDQ R13, AX;  \
	ADDQ R13, BX;  \
	ADDQ R13, CX;  \
	ADDQ R13, DI;  \
	ADDQ R13, R8;  \
	ADDQ R13, R9;  \
	ADDQ R13, R10; \
	ADDQ R13, R11
