// Package uniform tests ciphertext words against the uniform
// distribution: what an lwe payload must look like to a device that does
// not hold the pads. The lattice attacks (attack/lwebreak) and the
// harness's run on recorded lwe crossings (attack) both use it.
package uniform

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// WordTest is one chi-square test of ciphertext words against uniform: a
// field of the word (its bits from Shift, Bits wide) counted into 2^Bits
// bins.
type WordTest struct {
	Name        string
	Shift, Bits uint
}

// WordTests are the fields tested: the low bit (parity: a ternary error's
// shows), the low log2(Delta) = 4 bits (c = m + Delta x_q: without a pad
// they are all zero), and each byte.
var WordTests = []WordTest{
	{"bit 0", 0, 1},
	{"low 4 bits", 0, 4},
	{"byte 0", 0, 8},
	{"byte 1", 8, 8},
	{"byte 2", 16, 8},
	{"byte 3", 24, 8},
}

// FalseAlarm is the family-wise false-alarm rate of the uniformity
// verdict: words are called non-uniform when any of the len(WordTests)
// tests has a p-value below FalseAlarm / len(WordTests) (Bonferroni), so
// uniform words are flagged with probability at most 0.1 %.
const FalseAlarm = 1e-3

// ChiSquare is the test's statistic over words and its p-value under the
// uniform hypothesis (chi-square with 2^Bits - 1 degrees of freedom: valid
// when every bin expects at least 5 words; fewer words are an error).
func (t WordTest) ChiSquare(words []uint32) (stat, p float64, err error) {
	bins := 1 << t.Bits
	if len(words) < 5*bins {
		return 0, 0, fmt.Errorf("uniform: chi-square %s: %d words for %d bins (need >= 5 a bin)", t.Name, len(words), bins)
	}
	count := make([]int, bins)
	mask := uint32(bins - 1)
	for _, w := range words {
		count[w>>t.Shift&mask]++
	}
	exp := float64(len(words)) / float64(bins)
	for _, c := range count {
		d := float64(c) - exp
		stat += d * d / exp
	}
	return stat, distuv.ChiSquared{K: float64(bins - 1)}.Survival(stat), nil
}

// Uniformity runs every WordTest on words: each test's p-value and the
// family's smallest p-value times the number of tests (Bonferroni, capped
// at 1): below FalseAlarm the words are not uniform.
func Uniformity(words []uint32) (ps []float64, adjusted float64, err error) {
	adjusted = 1
	for _, t := range WordTests {
		_, p, err := t.ChiSquare(words)
		if err != nil {
			return nil, 0, err
		}
		ps = append(ps, p)
		adjusted = math.Min(adjusted, p*float64(len(WordTests)))
	}
	return ps, adjusted, nil
}

// DiffWords are the words c1 - c2 mod 2^32 of pairs of ciphertexts of equal
// length: the input of the uniformity tests on differences (uniform under
// fresh pads, Delta times a small integer under a reused one).
func DiffWords(pairs [][2][]uint32) []uint32 {
	var out []uint32
	for _, p := range pairs {
		for i := range p[0] {
			out = append(out, p[0][i]-p[1][i])
		}
	}
	return out
}
