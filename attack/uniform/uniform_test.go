package uniform

import (
	"math/rand/v2"
	"slices"
	"strings"
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

// TestUniformity checks each test can fail and stays quiet on uniform
// words: a field that is constant, biased or missing values is flagged,
// uniform words are not.
func TestUniformity(t *testing.T) {
	for _, c := range []struct {
		name    string
		edit    func(w uint32, i int) uint32
		flagged string // the test that must reject ("" for none)
	}{
		{"uniform", func(w uint32, _ int) uint32 { return w }, ""},
		{"multiples of 16", func(w uint32, _ int) uint32 { return w &^ 15 }, "low 4 bits"},
		{"even", func(w uint32, _ int) uint32 { return w &^ 1 }, "bit 0"},
		{"byte 2 constant", func(w uint32, _ int) uint32 { return w&^0xff0000 | 0x420000 }, "byte 2"},
		{"top bit biased", func(w uint32, i int) uint32 {
			if i%4 == 0 {
				return w &^ (1 << 31)
			}
			return w
		}, "byte 3"},
	} {
		words := pcgWords(8192, 1)
		for i := range words {
			words[i] = c.edit(words[i], i)
		}
		ps, adj, err := Uniformity(words)
		if err != nil {
			t.Fatal(err)
		}
		if (c.flagged != "") != (adj < FalseAlarm) {
			t.Errorf("%s: adjusted p %.3g, flagged %v, want %v", c.name, adj, adj < FalseAlarm, c.flagged != "")
		}
		if c.flagged != "" {
			k := slices.IndexFunc(WordTests, func(w WordTest) bool { return w.Name == c.flagged })
			if ps[k] >= FalseAlarm/float64(len(WordTests)) {
				t.Errorf("%s: %s p-value %.3g, want a rejection", c.name, c.flagged, ps[k])
			}
		}
	}
	if _, _, err := Uniformity(make([]uint32, 100)); err == nil || !strings.Contains(err.Error(), "100 words for 256 bins") {
		t.Errorf("too few words: %v", err)
	}
}

// TestUniformityFalseAlarm checks the stated rate: over 300 sets of
// uniform words the family test flags about 0.3 (at most 3 here).
func TestUniformityFalseAlarm(t *testing.T) {
	flags := 0
	for s := range 300 {
		_, adj, err := Uniformity(pcgWords(4096, uint64(s)+100))
		if err != nil {
			t.Fatal(err)
		}
		if adj < FalseAlarm {
			flags++
		}
	}
	if flags > 3 {
		t.Errorf("%d of 300 uniform sets flagged at a %g false-alarm rate", flags, FalseAlarm)
	}
}
