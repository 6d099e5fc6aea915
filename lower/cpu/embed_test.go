package cpu

import (
	"strings"
	"testing"
)

// TestCheckIDs: the gather from a bf16 or block table refuses an id
// outside the table and an output too small for its rows.
func TestCheckIDs(t *testing.T) {
	if err := checkIDs([]int32{0, 4}, 5, 8, 4); err != nil {
		t.Fatalf("valid ids: %v", err)
	}
	for _, tc := range []struct {
		ids  []int32
		out  int
		want string
	}{
		{[]int32{0, 5}, 8, "token id 5 at index 1 out of range [0,5)"},
		{[]int32{-1}, 8, "token id -1 at index 0 out of range"},
		{[]int32{0, 1}, 7, "the output holds 7"},
	} {
		if err := checkIDs(tc.ids, 5, tc.out, 4); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ids %v, output %d: err %v, want %q", tc.ids, tc.out, err, tc.want)
		}
	}
}
