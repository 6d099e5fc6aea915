package lwe

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// edgeWords are the words where a limb split is most likely wrong: byte
// boundaries at 0x7f/0x80, all ones, the sign bit.
var edgeWords = []uint32{0, 1, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0x807f80ff, 0x7f7f7f7f,
	0x80808080, 0xffffff80, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff}

// TestSplitLimbs: the four signed byte limbs recombine to the word mod
// 2^32, for the edge words and random ones.
func TestSplitLimbs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := slices.Clone(edgeWords)
	for range 10000 {
		c = append(c, rng.Uint32())
	}
	var limbs [4][]int8
	for l := range limbs {
		limbs[l] = make([]int8, len(c))
	}
	SplitLimbs(c, &limbs)
	for i, v := range c {
		var sum int64
		for l := range 4 {
			sum += int64(limbs[l][i]) << (8 * l)
		}
		if uint32(sum) != v {
			t.Fatalf("%#x splits to %d %d %d %d, which sum to %#x", v, limbs[0][i], limbs[1][i], limbs[2][i], limbs[3][i], uint32(sum))
		}
	}
}

// TestLimbsEqualDirect: the GPU's limb form of the device product equals
// the direct wrapping uint32 form bit for bit, and both equal W_q c mod
// 2^32 computed in int64, on random and extreme words and weights, for row
// counts that do and do not fill the 4-row blocks.
func TestLimbsEqualDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		kind          weightKind
		out, in, rows int
	}{
		{wGauss, 5, 33, 1}, {wMax, 7, 64, 4}, {wMax, 3, 300, 7}, {wGauss, 16, 1024, 9}, {wOutlier, 4, 8, 2},
	} {
		t.Run(fmt.Sprintf("%s-%dx%d-rows%d", tc.kind, tc.out, tc.in, tc.rows), func(t *testing.T) {
			w := quantized(t, tc.kind, tc.out, tc.in, uint64(tc.in))
			c := make([]uint32, tc.rows*tc.in)
			for i := range c {
				if i%3 == 0 {
					c[i] = edgeWords[rng.IntN(len(edgeWords))]
				} else {
					c[i] = rng.Uint32()
				}
			}
			direct, limbs := make([]uint32, tc.rows*tc.out), make([]uint32, tc.rows*tc.out)
			if err := MulRef(w, c, direct); err != nil {
				t.Fatal(err)
			}
			if err := MulLimbs(w, c, limbs); err != nil {
				t.Fatal(err)
			}
			for r := range tc.rows {
				for j := range tc.out {
					var ref int64
					for i, q := range w.Row(j) {
						ref += int64(q) * int64(c[r*tc.in+i])
					}
					k := r*tc.out + j
					if direct[k] != uint32(ref) || limbs[k] != direct[k] {
						t.Fatalf("row %d out %d: direct %#x, limbs %#x, int64 %#x", r, j, direct[k], limbs[k], uint32(ref))
					}
				}
			}
		})
	}
}

// TestMulShape: wrong lengths are errors, not panics.
func TestMulShape(t *testing.T) {
	w := quantized(t, wGauss, 3, 4, 1)
	for _, tc := range []struct{ c, y int }{{5, 3}, {8, 3}, {4, 4}} {
		if err := MulRef(w, make([]uint32, tc.c), make([]uint32, tc.y)); err == nil {
			t.Errorf("MulRef with %d inputs, %d outputs accepted", tc.c, tc.y)
		}
		if err := MulLimbs(w, make([]uint32, tc.c), make([]uint32, tc.y)); err == nil {
			t.Errorf("MulLimbs with %d inputs, %d outputs accepted", tc.c, tc.y)
		}
	}
	if LimbMaxIn*127*128 >= 1<<31 || (LimbMaxIn+1)*127*128 < 1<<31 {
		t.Errorf("LimbMaxIn %d is not the widest input whose limb dot stays in int32", LimbMaxIn)
	}
}
