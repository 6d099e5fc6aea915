package lwebreak

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func pcgWords(n int, seed uint64) []uint32 {
	rng := rand.New(rand.NewPCG(seed, 17))
	w := make([]uint32, n)
	for i := range w {
		w[i] = rng.Uint32()
	}
	return w
}

// TestDifference checks the reused-pad algebra on hand-made words.
func TestDifference(t *testing.T) {
	m := pcgWords(6, 3)
	a := []int64{5, -3, 0, 1 << 20, -(1 << 20), 7}
	b := []int64{-5, -3, 1, 0, 1 << 20, 7}
	c1, c2 := make([]uint32, 6), make([]uint32, 6)
	for i := range m {
		c1[i] = m[i] + 16*uint32(a[i])
		c2[i] = m[i] + 16*uint32(b[i])
	}
	diff, div, err := Difference(c1, c2, 16)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{10, 0, -1, 1 << 20, -(2 << 20), 0}
	if !slices.Equal(diff, want) || div != 6 {
		t.Errorf("difference %v (%d divisible), want %v (6)", diff, div, want)
	}
	if ok, err := RecoverFromKnown(c1, c2, 16, b, a); !ok || err != nil {
		t.Errorf("recover from known: %v %v", ok, err)
	}
	if _, _, err := Difference(c1, c2[:5], 16); err == nil {
		t.Error("ciphertexts of different lengths accepted")
	}
}
