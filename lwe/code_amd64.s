//go:build !purego

#include "textflag.h"

// func sumSquaresAVX2(x *float32, n8 int) float64
//
// sum x_i^2 in float64 over n8 words (a positive multiple of 8) in eight
// lanes, lane l summing the words i = l mod 8, combined as sumSquares does
// in Go: ((s0+s4) + (s2+s6)) + ((s1+s5) + (s3+s7)). Each square is rounded
// before its addition (VMULPD, VADDPD: no FMA), as Go's float64(f*f).
TEXT ·sumSquaresAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n8+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	XORQ   AX, AX

sqloop:
	VCVTPS2PD (SI)(AX*4), Y2
	VCVTPS2PD 16(SI)(AX*4), Y3
	VMULPD    Y2, Y2, Y2
	VMULPD    Y3, Y3, Y3
	VADDPD    Y2, Y0, Y0
	VADDPD    Y3, Y1, Y1
	ADDQ      $8, AX
	CMPQ      AX, CX
	JB        sqloop

	VADDPD       Y1, Y0, Y0     // t_l = s_l + s_{l+4}
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0     // [t0 + t2, t1 + t3]
	VPERMILPD    $1, X0, X1
	VADDSD       X1, X0, X0     // (t0 + t2) + (t1 + t3)
	VMOVSD       X0, ret+16(FP)
	VZEROUPPER
	RET

// func encodeAVX2(x *float32, m *uint32, c *uint32, n4 int, inv float64, delta uint32) int64
//
// For n4 words (a positive multiple of 4): q_i = round-half-even(x_i inv)
// in float64 (VCVTPD2DQ under the default rounding mode, what
// math.RoundToEven gives for |q_i| < 2^31, which the encoder's step
// guarantees), c_i = m_i + delta q_i mod 2^32; returns sum q_i^2 (exact in
// int64).
TEXT ·encodeAVX2(SB), NOSPLIT, $0-56
	MOVQ         x+0(FP), SI
	MOVQ         m+8(FP), DI
	MOVQ         c+16(FP), DX
	MOVQ         n4+24(FP), CX
	VBROADCASTSD inv+32(FP), Y15
	MOVL         delta+40(FP), AX
	VMOVD        AX, X14
	VPBROADCASTD X14, X14
	VPXOR        Y13, Y13, Y13
	XORQ         AX, AX

encloop:
	VCVTPS2PD  (SI)(AX*4), Y0
	VMULPD     Y15, Y0, Y0
	VCVTPD2DQY Y0, X1
	VPMOVSXDQ  X1, Y2
	VPMULDQ    Y2, Y2, Y2
	VPADDQ     Y2, Y13, Y13
	VPMULLD    X14, X1, X1
	VPADDD     (DI)(AX*4), X1, X1
	VMOVDQU    X1, (DX)(AX*4)
	ADDQ       $4, AX
	CMPQ       AX, CX
	JB         encloop

	VEXTRACTI128 $1, Y13, X0
	VPADDQ       X0, X13, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDQ       X1, X0, X0
	VMOVQ        X0, ret+48(FP)
	VZEROUPPER
	RET

DATA absMask<>+0(SB)/8, $0x7fffffffffffffff
GLOBL absMask<>(SB), RODATA|NOPTR, $8

DATA oneF64<>+0(SB)/8, $0x3ff0000000000000
GLOBL oneF64<>(SB), RODATA|NOPTR, $8

// func decodeAVX2(y, u *uint32, v *int32, norm *float64, scale *float32, out *float32, n4 int, lim, f float64) bool
//
// For n4 outputs (a positive multiple of 4): v_j = int32(y_j - u_j),
// out_j = float32((float64(v_j) f) float64(scale_j)) (two roundings, as in
// Go), and reports whether any |v_j| > norm_j lim + 1.
TEXT ·decodeAVX2(SB), NOSPLIT, $0-73
	MOVQ         y+0(FP), SI
	MOVQ         u+8(FP), DI
	MOVQ         v+16(FP), R8
	MOVQ         norm+24(FP), R9
	MOVQ         scale+32(FP), R10
	MOVQ         out+40(FP), DX
	MOVQ         n4+48(FP), CX
	VBROADCASTSD lim+56(FP), Y15
	VBROADCASTSD f+64(FP), Y14
	VBROADCASTSD absMask<>(SB), Y13
	VBROADCASTSD oneF64<>(SB), Y12
	VXORPD       Y11, Y11, Y11
	XORQ         AX, AX

decloop:
	VMOVDQU    (SI)(AX*4), X0
	VPSUBD     (DI)(AX*4), X0, X0
	VMOVDQU    X0, (R8)(AX*4)
	VCVTDQ2PD  X0, Y1
	VANDPD     Y13, Y1, Y2
	VMULPD     (R9)(AX*8), Y15, Y3
	VADDPD     Y12, Y3, Y3
	VCMPPD     $0x1e, Y3, Y2, Y4
	VORPD      Y4, Y11, Y11
	VMULPD     Y14, Y1, Y1
	VCVTPS2PD  (R10)(AX*4), Y5
	VMULPD     Y5, Y1, Y1
	VCVTPD2PSY Y1, X1
	VMOVUPS    X1, (DX)(AX*4)
	ADDQ       $4, AX
	CMPQ       AX, CX
	JB         decloop

	VMOVMSKPD Y11, AX
	TESTL     AX, AX
	SETNE     ret+72(FP)
	VZEROUPPER
	RET
