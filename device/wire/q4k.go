package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"gelo/fanout"
	"gelo/ir"
)

// Q4_K is ggml's block_q4_K, a 256-value super-block of 144 bytes:
//
//	block_q4_K { ggml_half d; ggml_half dmin; uint8_t scales[12]; uint8_t qs[128]; }
//
// Its 8 sub-blocks of 32 values each have a 6-bit scale sc and a 6-bit min
// m (packed into scales[12]: sub-blocks 0-3 keep their low 6 bits in bytes
// j and j+4; 4-7 keep their low 4 bits in the nibbles of byte j+4 and
// their top 2 bits in the top bits of bytes j-4 and j). Value t of
// sub-block j is
//
//	y = fl32(fl32(d*sc) * q) - fl32(dmin*m)      (q = 4-bit quant, 0..15)
//
// and qs[32g + l] holds the quant of value 64g+l in its low nibble and of
// value 64g+32+l in its high nibble: sub-block 2g is the low nibbles of a
// 32-byte range, sub-block 2g+1 the high ones.
const (
	Q4_K Format = 12 // GGML_TYPE_Q4_K

	// QKK is the values a K-quant super-block holds (ggml's QK_K).
	QKK = ir.QuantBlockK
	// BlockBytesQ4_K is sizeof(block_q4_K).
	BlockBytesQ4_K = ir.BlockBytesQ4_K
)

// ScaleMinQ4_K unpacks the 6-bit scale and min of sub-block j (0..7) from
// the 12 packed bytes of a Q4_K super-block (bytes 4..15 of the block).
func ScaleMinQ4_K(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// DequantizeQ4_K expands consecutive block_q4_K in src into dst as ggml's
// dequantize_row_q4_K does (the formula of the Q4_K doc, in float32).
// len(src) must be a multiple of 144 and dst at least len(src)/144*256
// long.
func DequantizeQ4_K(dst []float32, src []byte) error {
	if err := checkDequantize(Q4_K, dst, src); err != nil {
		return err
	}
	for b := 0; b < len(src)/BlockBytesQ4_K; b++ {
		dequantizeBlockQ4K(dst[b*QKK:(b+1)*QKK], src[b*BlockBytesQ4_K:(b+1)*BlockBytesQ4_K])
	}
	return nil
}

func dequantizeBlockQ4K(y []float32, blk []byte) {
	y, blk = y[:QKK:QKK], blk[:BlockBytesQ4_K:BlockBytesQ4_K]
	d := f16ToF32(binary.LittleEndian.Uint16(blk[0:]))
	dmin := f16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	scales, qs := blk[4:16], blk[16:]
	for g := 0; g < 4; g++ {
		sc1, m1 := ScaleMinQ4_K(2*g, scales)
		sc2, m2 := ScaleMinQ4_K(2*g+1, scales)
		d1, mn1 := float32(d*float32(sc1)), float32(dmin*float32(m1))
		d2, mn2 := float32(d*float32(sc2)), float32(dmin*float32(m2))
		q := qs[32*g : 32*g+32]
		for l := 0; l < 32; l++ {
			y[64*g+l] = float32(d1*float32(q[l]&0xF)) - mn1
			y[64*g+32+l] = float32(d2*float32(q[l]>>4)) - mn2
		}
	}
}

// QuantizeQ4_K quantizes src (a whole number of 256-value super-blocks)
// into dst as consecutive block_q4_K, with the method of ggml's
// quantize_row_q4_K_ref: each sub-block of 32 gets the scale and min of a
// weighted least-squares fit over a small grid of candidate scales
// (weights |x| plus the sub-block's RMS, so large values count more), the
// 8 scales and 8 mins are then rounded to 6 bits against the
// super-block's largest (d = max scale / 63, dmin = max min / 63, both
// fp16) and every value is requantized against its rounded sub-block
// scale and min. Super-blocks are quantized in parallel (each depends on
// its own values only). It returns an error when len(src) is not a
// multiple of 256, dst is shorter than len(src)/256*144 bytes (writing
// nothing), a value is not finite, or a super-block's d or dmin overflows
// float16 (then dst[:len(src)/256*144] is left zeroed).
func QuantizeQ4_K(dst []byte, src []float32) error {
	if len(src)%QKK != 0 {
		return fmt.Errorf("wire: quantize q4_k: len(src) = %d is not a multiple of %d", len(src), QKK)
	}
	nb := len(src) / QKK
	if need := nb * BlockBytesQ4_K; len(dst) < need {
		return fmt.Errorf("wire: quantize q4_k: len(dst) = %d, need %d", len(dst), need)
	}
	for i, v := range src {
		if !finite(v) {
			return fmt.Errorf("wire: quantize q4_k: non-finite value %v at index %d", v, i)
		}
	}
	// Chunks of 64 super-blocks on every core (each block is quantized
	// alone, so the bytes do not depend on the split).
	const chunk = 64
	err := fanout.EachErr((nb+chunk-1)/chunk, 0, func(_, c int) error {
		for b := c * chunk; b < min(nb, (c+1)*chunk); b++ {
			if err := quantizeBlockQ4K(dst[b*BlockBytesQ4_K:(b+1)*BlockBytesQ4_K], src[b*QKK:(b+1)*QKK]); err != nil {
				return fmt.Errorf("wire: quantize q4_k: super-block %d: %w", b, err)
			}
		}
		return nil
	})
	if err != nil {
		clear(dst[:nb*BlockBytesQ4_K])
		return err
	}
	return nil
}

// nearestInt rounds to nearest, ties to even (ggml's nearest_int for the
// small magnitudes met here).
func nearestInt(v float32) int { return int(math.RoundToEven(float64(v))) }

func quantizeBlockQ4K(dst []byte, x []float32) error {
	dst, x = dst[:BlockBytesQ4_K:BlockBytesQ4_K], x[:QKK:QKK]
	var L [QKK]uint8
	var scales, mins [8]float32
	var maxScale, maxMin float32
	for j := 0; j < 8; j++ {
		xs := x[32*j : 32*j+32]
		var sumx2 float32
		for _, v := range xs {
			sumx2 += float32(v * v)
		}
		av := float32(math.Sqrt(float64(sumx2 / 32)))
		var w [32]float32
		for l, v := range xs {
			w[l] = av + abs32(v)
		}
		scales[j], mins[j] = fitScaleMin(xs, w[:], L[32*j:32*j+32])
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	hd, hm := f32ToF16(maxScale/63), f32ToF16(maxMin/63)
	if hd&0x7c00 == 0x7c00 || hm&0x7c00 == 0x7c00 {
		return fmt.Errorf("scale %g or min %g overflows float16", maxScale/63, maxMin/63)
	}
	var ls, lm [8]uint8
	for j := 0; j < 8; j++ {
		ls[j] = uint8(max(0, min(63, nearestInt(invScale*scales[j]))))
		lm[j] = uint8(max(0, min(63, nearestInt(invMin*mins[j]))))
	}
	binary.LittleEndian.PutUint16(dst[0:], hd)
	binary.LittleEndian.PutUint16(dst[2:], hm)
	q := dst[4:16]
	clear(q)
	for j := 0; j < 8; j++ {
		if j < 4 {
			q[j] |= ls[j]
			q[j+4] |= lm[j]
		} else {
			q[j+4] = ls[j]&0xF | (lm[j]&0xF)<<4
			q[j-4] |= (ls[j] >> 4) << 6
			q[j] |= (lm[j] >> 4) << 6
		}
	}
	d, dmin := f16ToF32(hd), f16ToF32(hm)
	for j := 0; j < 8; j++ {
		sc, m := ScaleMinQ4_K(j, q)
		d1 := float32(d * float32(sc))
		m1 := float32(dmin * float32(m))
		for l := 32 * j; l < 32*j+32; l++ {
			if d1 == 0 {
				L[l] = 0
				continue
			}
			L[l] = uint8(max(0, min(15, nearestInt((x[l]+m1)/d1))))
		}
	}
	qs := dst[16:]
	for g := 0; g < 4; g++ {
		for l := 0; l < 32; l++ {
			qs[32*g+l] = L[64*g+l] | L[64*g+32+l]<<4
		}
	}
	return nil
}

// fitScaleMin fits x ~ scale*L - off with L in 0..15 and off >= 0 (the
// min clipped at 0), minimising the w-weighted squared error: a first fit
// from the value range, then 20 candidate inverse scales around 15/range,
// each followed by the closed-form weighted least-squares scale and
// offset for its rounding, the best kept. It writes the quants to L and
// returns scale and off.
//
// Every product is rounded on its own (the float32 conversions keep the
// compiler from fusing multiply-adds), so the blocks are the same on
// every build.
func fitScaleMin(x, w []float32, L []uint8) (scale, off float32) {
	const nmax, rmin, rdelta, nstep = 15, -1, 0.1, 20
	mn, mx := x[0], x[0]
	var sumW, sumX float32
	for i, v := range x {
		mn, mx = min(mn, v), max(mx, v)
		sumW += w[i]
		sumX += float32(w[i] * v)
	}
	mn = min(mn, 0)
	if mx == mn {
		for i := range L[:len(x)] {
			L[i] = 0
		}
		return 0, -mn
	}
	quant := func(iscale float32, v float32) uint8 {
		// ggml's float trick for nearest_int (ties to even): adding
		// 1.5*2^23 leaves the rounded value in the low mantissa bits;
		// |iscale*(v-mn)| is a few times nmax at most here.
		r := int32(math.Float32bits(float32(iscale*(v-mn))+12582912)&0x7fffff) - 0x400000
		return uint8(max(0, min(nmax, r)))
	}
	iscale := nmax / (mx - mn)
	scale = 1 / iscale
	var best float32
	for i, v := range x {
		l := quant(iscale, v)
		L[i] = l
		diff := float32(scale*float32(l)) + mn - v
		best += float32(float32(w[i]*diff) * diff)
	}
	var aux [32]uint8
	for is := 0; is <= nstep; is++ {
		iscale := (rmin + rdelta*float32(is) + nmax) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := quant(iscale, v)
			aux[i] = l
			fl := float32(l)
			wl := float32(w[i] * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D <= 0 {
			continue
		}
		s := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		m := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if m > 0 {
			m, s = 0, sumXL/sumL2
		}
		var cur float32
		for i, v := range x {
			diff := float32(s*float32(aux[i])) + m - v
			cur += float32(float32(w[i]*diff) * diff)
		}
		if cur < best {
			copy(L[:len(x)], aux[:len(x)])
			best, scale, mn = cur, s, m
		}
	}
	return scale, -mn
}
