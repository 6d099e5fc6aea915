package lwebreak

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gelo/lwe"
)

// TestMitMBreaksLambda64H6 is the MitM gate (issue 50: lambda 64, h 6):
// from one known-plaintext row the search recovers s exactly, every row.
func TestMitMBreaksLambda64H6(t *testing.T) {
	st := newTestSetup(t, lwe.Params{Lambda: 64, H: 6, Delta: 16}, 64)
	rng := rand.New(rand.NewPCG(9, 9))
	for _, kind := range []RowKind{RowGauss, RowOutlier, RowZero, RowRepeated} {
		x := Activation(kind, st.In, rng)
		ct, err := st.Encrypt(x)
		if err != nil {
			t.Fatal(err)
		}
		b, err := KnownPlaintext(st.Enc, ct.C, x)
		if err != nil {
			t.Fatal(err)
		}
		r, err := MitM(st.A, b, 6, MitMOptions{})
		if err != nil {
			t.Fatalf("%s row: %v", kind, err)
		}
		truth, _, err := st.Secret(ct.Counter)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.S, truth) {
			t.Errorf("%s row: recovered s differs from the pad's", kind)
		}
		t.Logf("%-9s table %d, lookups %d, candidates %d, %v", kind, r.Table, r.Lookups, r.Candidates, r.Elapsed)
	}
}

// TestMitMCanFail: on the raw ciphertext (plaintext not subtracted) the
// full search ends with no secret, and the level's parameters are refused
// before any enumeration (C(4096, 40) 2^40 vectors a half).
func TestMitMCanFail(t *testing.T) {
	st := newTestSetup(t, lwe.Params{Lambda: 64, H: 6, Delta: 16}, 64)
	x := Activation(RowGauss, st.In, rand.New(rand.NewPCG(2, 2)))
	ct, err := st.Encrypt(x)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := MitM(st.A, ct.C, 6, MitMOptions{}); !errors.Is(err, errNotFound) {
		t.Errorf("raw ciphertext: s %v, error %v; want no secret found", r.S != nil, err)
	}
	big, err := lwe.NewPublic([lwe.SeedSize]byte{}, 8, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MitM(big, make([]uint32, 8), 80, MitMOptions{}); err == nil || !strings.Contains(err.Error(), "exceed the table limit") {
		t.Errorf("lambda 4096 h 80: error %v, want the table limit", err)
	}
}

// TestMitMBucketEdges checks the two-bucket lookup: with buckets 4 wide
// (KeyBits 30) the error moves a word across a bucket edge often, and h 2
// leaves only 2 ways to split s, so a search that looked up one bucket
// would miss some of these rows.
func TestMitMBucketEdges(t *testing.T) {
	st := newTestSetup(t, lwe.Params{Lambda: 64, H: 2, Delta: 16}, 64)
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range 24 {
		x := Activation(RowGauss, st.In, rng)
		ct, err := st.Encrypt(x)
		if err != nil {
			t.Fatal(err)
		}
		b, err := KnownPlaintext(st.Enc, ct.C, x)
		if err != nil {
			t.Fatal(err)
		}
		r, err := MitM(st.A, b, 2, MitMOptions{KeyBits: 30})
		truth, _, serr := st.Secret(ct.Counter)
		if serr != nil {
			t.Fatal(serr)
		}
		if err != nil || !slices.Equal(r.S, truth) {
			t.Errorf("row %d: not recovered (%v)", i, err)
		}
	}
}
