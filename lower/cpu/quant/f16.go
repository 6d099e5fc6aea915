package quant

import "math"

// f32ToF16 converts f to IEEE binary16 with round-to-nearest-even, the
// rounding of ggml's GGML_FP32_TO_FP16 (F16C VCVTPS2PH with mode 0, or its
// portable fallback): values at or beyond 65520 in magnitude become
// infinities, NaNs become quiet NaNs, tiny values become subnormals or zero.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 31 {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal (or zero) half: units of 2^-24.
		if e < -10 {
			return sign // below half of the smallest subnormal
		}
		m := man | 0x800000
		shift := uint(14 - e) // 14..24
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++ // may carry into the smallest normal: still the right encoding
		}
		return sign | uint16(q)
	}
	q := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && q&1 == 1) {
		q++ // may carry into the exponent, up to infinity: correct
	}
	return sign | uint16(q)
}

// f16ToF32 converts an IEEE binary16 to float32 exactly (the conversion of
// F16C's VCVTPH2PS: NaNs are returned quiet with their payload kept).
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(man) * (1.0 / (1 << 24)) // exact
		return math.Float32frombits(math.Float32bits(f) | sign)
	case 31:
		if man == 0 {
			return math.Float32frombits(sign | 0x7f800000)
		}
		return math.Float32frombits(sign | 0x7fc00000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}
