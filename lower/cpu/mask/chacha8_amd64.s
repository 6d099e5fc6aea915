//go:build amd64 && !purego

// AVX2 chacha8rand block function: eight ChaCha8 blocks at once, one per
// 32-bit lane of the YMM registers (lane j = block counter+j), in the
// register layout of Go's internal/chacha8rand (4-way SSE2 there). Row w
// of the 4x4 ChaCha state lives in Yw. Lanes 0..3 (the low 128 bits) are
// stored as the interleaved chunk of blocks counter..counter+3, lanes
// 4..7 as the next chunk, exactly as two consecutive calls of the
// standard 4-way block function would store them.
//
// All sixteen YMM registers hold state, so one row at a time is parked in
// the frame to free a temporary (the same schedule as the SSE2 code).

#include "textflag.h"

// ROL16 / ROL8: rotate each uint32 left by 16 / 8 with a byte shuffle.
#define ROL16(R) VPSHUFB ·cc8rol16<>(SB), R, R
#define ROL8(R) VPSHUFB ·cc8rol8<>(SB), R, R

// ROLN rotates each uint32 of R left by N using temporary T.
#define ROLN(N, R, T) VPSLLD $(N), R, T; VPSRLD $(32-(N)), R, R; VPOR T, R, R

// QR is the ChaCha quarter-round on rows A, B, C, D with temporary T.
#define QR(A, B, C, D, T) \
	VPADDD B, A, A; VPXOR A, D, D; ROL16(D); \
	VPADDD D, C, C; VPXOR C, B, B; ROLN(12, B, T); \
	VPADDD B, A, A; VPXOR A, D, D; ROL8(D); \
	VPADDD D, C, C; VPXOR C, B, B; ROLN(7, B, T)

// STORE writes row w: lanes 0..3 to chunk 0, lanes 4..7 to chunk 1.
#define STORE(w, Y, X) \
	VMOVDQU X, (16*w)(BX); \
	VEXTRACTI128 $1, Y, (256+16*w)(BX)

// ADDSEED adds seed word k (broadcast through T) to row R.
#define ADDSEED(k, R, T) \
	VPBROADCASTD (4*k)(AX), T; \
	VPADDD T, R, R

// func cc8Block8(seed *[4]uint64, buf *[64]uint64, counter uint32)
TEXT ·cc8Block8(SB), NOSPLIT, $64-20
	MOVQ seed+0(FP), AX
	MOVQ buf+8(FP), BX
	MOVL counter+16(FP), CX

	// Constants "expand 32-byte k".
	VPBROADCASTD ·cc8const<>+0(SB), Y0
	VPBROADCASTD ·cc8const<>+4(SB), Y1
	VPBROADCASTD ·cc8const<>+8(SB), Y2
	VPBROADCASTD ·cc8const<>+12(SB), Y3

	// Key words (little-endian uint32s of the seed).
	VPBROADCASTD 0(AX), Y4
	VPBROADCASTD 4(AX), Y5
	VPBROADCASTD 8(AX), Y6
	VPBROADCASTD 12(AX), Y7
	VPBROADCASTD 16(AX), Y8
	VPBROADCASTD 20(AX), Y9
	VPBROADCASTD 24(AX), Y10
	VPBROADCASTD 28(AX), Y11

	// Counters counter+0..counter+7; zero nonce rows. Row 15 starts
	// parked in the frame (at 0(SP)), leaving Y15 as the temporary.
	VMOVD CX, X12
	VPBROADCASTD X12, Y12
	VPADDD ·cc8lanes<>(SB), Y12, Y12
	VPXOR Y13, Y13, Y13
	VPXOR Y14, Y14, Y14
	VMOVDQU Y13, 0(SP)

	// 4 double rounds = 8 rounds.
	MOVL $4, DX
loop:
	QR(Y0, Y4, Y8, Y12, Y15)
	VMOVDQU Y4, 32(SP)  // park row 4
	QR(Y1, Y5, Y9, Y13, Y15)
	VMOVDQU 0(SP), Y15  // row 15 back; temporary is now Y4
	QR(Y2, Y6, Y10, Y14, Y4)
	QR(Y3, Y7, Y11, Y15, Y4)

	QR(Y0, Y5, Y10, Y15, Y4)
	VMOVDQU Y15, 0(SP)  // park row 15
	QR(Y1, Y6, Y11, Y12, Y4)
	VMOVDQU 32(SP), Y4  // row 4 back; temporary is now Y15
	QR(Y2, Y7, Y8, Y13, Y15)
	QR(Y3, Y4, Y9, Y14, Y15)

	DECL DX
	JNZ  loop

	VMOVDQU 0(SP), Y15

	// Constant and counter/nonce rows are output as they are.
	STORE(0, Y0, X0)
	STORE(1, Y1, X1)
	STORE(2, Y2, X2)
	STORE(3, Y3, X3)
	STORE(12, Y12, X12)
	STORE(13, Y13, X13)
	STORE(14, Y14, X14)
	STORE(15, Y15, X15)

	// Key rows get the key added back.
	ADDSEED(0, Y4, Y0)
	ADDSEED(1, Y5, Y1)
	ADDSEED(2, Y6, Y2)
	ADDSEED(3, Y7, Y3)
	ADDSEED(4, Y8, Y12)
	ADDSEED(5, Y9, Y13)
	ADDSEED(6, Y10, Y14)
	ADDSEED(7, Y11, Y15)
	STORE(4, Y4, X4)
	STORE(5, Y5, X5)
	STORE(6, Y6, X6)
	STORE(7, Y7, X7)
	STORE(8, Y8, X8)
	STORE(9, Y9, X9)
	STORE(10, Y10, X10)
	STORE(11, Y11, X11)

	// Leave no key material in the frame or in registers.
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, 0(SP)
	VMOVDQU Y0, 32(SP)
	VZEROALL
	RET

GLOBL ·cc8const<>(SB), NOPTR|RODATA, $16
DATA ·cc8const<>+0(SB)/4, $0x61707865
DATA ·cc8const<>+4(SB)/4, $0x3320646e
DATA ·cc8const<>+8(SB)/4, $0x79622d32
DATA ·cc8const<>+12(SB)/4, $0x6b206574

GLOBL ·cc8lanes<>(SB), NOPTR|RODATA, $32
DATA ·cc8lanes<>+0(SB)/4, $0
DATA ·cc8lanes<>+4(SB)/4, $1
DATA ·cc8lanes<>+8(SB)/4, $2
DATA ·cc8lanes<>+12(SB)/4, $3
DATA ·cc8lanes<>+16(SB)/4, $4
DATA ·cc8lanes<>+20(SB)/4, $5
DATA ·cc8lanes<>+24(SB)/4, $6
DATA ·cc8lanes<>+28(SB)/4, $7

// Byte shuffles rotating each uint32 left by 16 and by 8 (both lanes).
GLOBL ·cc8rol16<>(SB), NOPTR|RODATA, $32
DATA ·cc8rol16<>+0(SB)/8, $0x0504070601000302
DATA ·cc8rol16<>+8(SB)/8, $0x0D0C0F0E09080B0A
DATA ·cc8rol16<>+16(SB)/8, $0x0504070601000302
DATA ·cc8rol16<>+24(SB)/8, $0x0D0C0F0E09080B0A

GLOBL ·cc8rol8<>(SB), NOPTR|RODATA, $32
DATA ·cc8rol8<>+0(SB)/8, $0x0605040702010003
DATA ·cc8rol8<>+8(SB)/8, $0x0E0D0C0F0A09080B
DATA ·cc8rol8<>+16(SB)/8, $0x0605040702010003
DATA ·cc8rol8<>+24(SB)/8, $0x0E0D0C0F0A09080B
