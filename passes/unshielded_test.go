package passes

import "testing"

// Unshielded (the attack harness's C1) is the only way below 8 shield
// rows; negative counts stay refused.
func TestUnshieldedOnlyByOption(t *testing.T) {
	o := DefaultProtect()
	o.Mask, o.ShieldK = MaskHaar, 0
	if o.Check() == nil {
		t.Fatal("k = 0 accepted without Unshielded")
	}
	o.Unshielded = true
	if err := o.Check(); err != nil {
		t.Fatalf("k = 0 with Unshielded: %v", err)
	}
	o.ShieldK = -1
	if o.Check() == nil {
		t.Fatal("k = -1 accepted")
	}
}
