package mask

import (
	"testing"

	"gelo/ir"
)

// Every mask family ir registers has a sampler here, and the sampler
// returns a mask of the asked size that round-trips.
func TestEveryFamilyHasASampler(t *testing.T) {
	rng, err := NewPassRNG(make([]byte, 32), 1)
	if err != nil {
		t.Fatal(err)
	}
	ws := NewWorkspace(1)
	for _, f := range ir.MaskFamilies() {
		if !HasSampler(f.Name) {
			t.Errorf("mask family %s has no sampler in lower/cpu/mask", f.Name)
			continue
		}
		k, err := ShieldRows(f.Name, 5, 0)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		s := 5 + k
		m, err := ws.Sample(f.Name, s, rng)
		if err != nil {
			t.Fatalf("%s: sample %d: %v", f.Name, s, err)
		}
		if m.Size() != s {
			t.Errorf("%s: mask size %d, want %d", f.Name, m.Size(), s)
		}
	}
	for name := range samplers {
		if _, ok := ir.LookupMaskFamily(name); !ok {
			t.Errorf("sampler for %q, which ir does not register", name)
		}
	}
}
