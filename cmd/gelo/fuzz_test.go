package main

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"gelo/plan"
)

// FuzzFlagParsers: the CLI's list, id, hex and size parsers refuse or
// return values that hold to their contract; none panics, and every
// refusal is a usage error.
func FuzzFlagParsers(f *testing.F) {
	for _, s := range []string{"1,2,3", "1,2;3", "", ";", ",,", "-1", "99999999999", "00112233445566778899aabbccddeeff",
		"bl=3,tee=0,snp=20,ucode=209", "bl=256", "8,4", "1000000,4", "8;4", "512M", "1.5GiB", "9E", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range splitList(s) {
			if p == "" || strings.Contains(p, ",") {
				t.Fatalf("splitList(%q) gave %q", s, p)
			}
		}
		if ids, err := parseIDs(s); err == nil {
			if len(ids) == 0 {
				t.Fatalf("parseIDs(%q) accepted no ids", s)
			}
			for i, id := range ids {
				if v, _ := strconv.ParseInt(strings.TrimSpace(splitList(s)[i]), 10, 32); int32(v) != id {
					t.Fatalf("parseIDs(%q)[%d] = %d", s, i, id)
				}
			}
		} else if !errors.Is(err, errUsage) {
			t.Fatalf("parseIDs(%q): %v is not a usage error", s, err)
		}
		if n, err := parseNonce(s); err == nil {
			if len(n) < 16 || len(n) > 64 {
				t.Fatalf("parseNonce(%q) accepted %d bytes", s, len(n))
			}
		} else if !errors.Is(err, errUsage) {
			t.Fatalf("parseNonce(%q): %v is not a usage error", s, err)
		}
		if _, err := parseTCB(s); err != nil && !errors.Is(err, errUsage) {
			t.Fatalf("parseTCB(%q): %v is not a usage error", s, err)
		}
		if b, err := plan.ParseBytes(s); err == nil && b <= 0 {
			t.Fatalf("ParseBytes(%q) = %d", s, b)
		}
		if k, e, err := plan.ParseShield(s); err == nil && (k < 0 || e != e) {
			t.Fatalf("ParseShield(%q) = %d, %v", s, k, e)
		}
		seqs, longest := promptShape(s)
		if seqs < 1 || longest < 0 {
			t.Fatalf("promptShape(%q) = %d, %d", s, seqs, longest)
		}
	})
}
