package lwebreak

import (
	"fmt"
	"slices"
)

// Difference is what the device computes from two ciphertexts it suspects
// share a pad: d = centre(c1 - c2) mod 2^32, which is Delta (x1_q - x2_q)
// exactly under a reused pad (the pads cancel, and Delta |x_q| < 2^31 / max_j
// |w_j|_2 keeps the difference of two encodable rows below 2^31 for any
// weights of row norm >= 2). It returns d / Delta (rounded toward zero)
// and how many words of d are multiples of Delta: all of them under a
// reused pad, a fraction 1 / Delta of them under fresh pads (d uniform).
func Difference(c1, c2 []uint32, delta uint32) (diff []int64, divisible int, err error) {
	if len(c1) != len(c2) || delta == 0 {
		return nil, 0, fmt.Errorf("lwebreak: difference: ciphertexts of %d and %d words, delta %d", len(c1), len(c2), delta)
	}
	diff = make([]int64, len(c1))
	for i := range c1 {
		d := int64(int32(c1[i] - c2[i]))
		if d%int64(delta) == 0 {
			divisible++
		}
		diff[i] = d / int64(delta)
	}
	return diff, divisible, nil
}

// RecoverFromKnown is the difference attack's use of a known row: with x2
// known (a public BOS row, or the attacker's own prompt), x1_q =
// x2_q + (c1 - c2) / Delta. It reports whether that equals x1_q exactly
// (every coordinate).
func RecoverFromKnown(c1, c2 []uint32, delta uint32, x2q, x1q []int64) (bool, error) {
	diff, _, err := Difference(c1, c2, delta)
	if err != nil {
		return false, err
	}
	if len(x2q) != len(diff) || len(x1q) != len(diff) {
		return false, fmt.Errorf("lwebreak: recover from known: rows of %d and %d for %d words", len(x2q), len(x1q), len(diff))
	}
	for i := range diff {
		diff[i] += x2q[i]
	}
	return slices.Equal(diff, x1q), nil
}
