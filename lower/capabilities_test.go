package lower

import (
	"strings"
	"testing"
)

func good() Capabilities {
	return Capabilities{Backend: "b", Lowers: []string{"add", "mul"}, Declines: map[string]string{"mask": "no"},
		Weights: []string{"f32"}, KVDTypes: []string{"f32"},
		Device: Device{Family: "d", Names: []string{"d:0"}, Weights: []string{"f32"}}}
}

// TestCheck: Check finds each inconsistency a record can have, and names
// the backend and the op.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Capabilities)
		want string // "" for a consistent record
	}{
		{"consistent", func(*Capabilities) {}, ""},
		{"unsorted", func(c *Capabilities) { c.Lowers = []string{"mul", "add"} }, "not sorted"},
		{"repeated", func(c *Capabilities) { c.Lowers = []string{"add", "add"} }, "not sorted without repeats"},
		{"lowered and declined", func(c *Capabilities) { c.Declines["add"] = "x" }, "op add is both lowered and declined"},
		{"no reason", func(c *Capabilities) { c.Declines["mask"] = "" }, "op mask is declined without a reason"},
		{"no formats", func(c *Capabilities) { c.Weights = nil }, "no weight format"},
		{"no device", func(c *Capabilities) { c.Device = Device{} }, "a device without"},
		{"no name", func(c *Capabilities) { c.Backend = "" }, "no backend name"},
	} {
		c := good()
		tc.edit(&c)
		err := c.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Check() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestLookups(t *testing.T) {
	c := good()
	if !c.Lowered("add") || c.Lowered("mask") || c.Lowered("sub") {
		t.Error("Lowered")
	}
	if r, ok := c.Declined("mask"); !ok || r != "no" {
		t.Errorf("Declined(mask) = %q, %v", r, ok)
	}
	if !c.TakesWeights("f32") || c.TakesWeights("bf16") || !c.TakesKV("f32") || c.TakesKV("f16") {
		t.Error("TakesWeights / TakesKV")
	}
	for dev, want := range map[string]bool{"d": true, "d:1": true, "d:x:y": true, "dd": false, "": false, "e:d": false} {
		if got := c.Device.Matches(dev); got != want {
			t.Errorf("Matches(%q) = %v, want %v", dev, got, want)
		}
	}
	if got := Union([]string{"b", "a"}, []string{"c", "a"}); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("Union = %v", got)
	}
	if got := SortedKeys(map[string]int{"y": 1, "x": 2}); strings.Join(got, ",") != "x,y" {
		t.Errorf("SortedKeys = %v", got)
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{{nil, "none"}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a or b"}, {[]string{"a", "b", "c"}, "a, b or c"}} {
		if got := Or(tc.in); got != tc.want {
			t.Errorf("Or(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
