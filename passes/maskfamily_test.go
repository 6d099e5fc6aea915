package passes

import (
	"strings"
	"testing"
)

// --mask takes none and every registered family; the check and the flag
// help name the same list.
func TestMaskFamilyNames(t *testing.T) {
	if got := strings.Join(MaskFamilyNames(), ","); got != "none,haar,hd3" {
		t.Errorf("MaskFamilyNames() = %s", got)
	}
	if got := MaskFamilyHelp(); got != "protection: none (insecure baseline), haar or hd3" {
		t.Errorf("MaskFamilyHelp() = %q", got)
	}
	o := DefaultProtect()
	o.Mask = "rot13"
	if err := o.Check(); err == nil || !strings.Contains(err.Error(), `--mask "rot13": want none, haar or hd3`) {
		t.Errorf("Check of an unknown family: %v", err)
	}
	for _, m := range MaskFamilyNames() {
		o.Mask = m
		if err := o.Check(); err != nil {
			t.Errorf("--mask %s: %v", m, err)
		}
	}
}
