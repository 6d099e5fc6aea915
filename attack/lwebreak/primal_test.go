package lwebreak

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"gelo/lwe"
)

// requireFplll skips a test that needs the reducer when fplll is not
// installed, unless GELO_REQUIRE_FPLLL=1 (CI), where its absence fails.
func requireFplll(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath(FplllCommand); err != nil {
		if os.Getenv("GELO_REQUIRE_FPLLL") == "1" {
			t.Fatalf("GELO_REQUIRE_FPLLL=1 but %v", ErrNoReducer)
		}
		t.Skipf("skipped: %v; set GELO_REQUIRE_FPLLL=1 to make this a failure", ErrNoReducer)
	}
}

// toyPrimal are the instances the primal attack must break: toy lambda,
// q = 2^32, CBD(2), one row of d_in samples each.
var toyPrimal = []struct {
	lambda, h, in, block int // block 0: LLL
}{
	{40, 8, 64, 0},
	{40, 8, 64, 10},
	{64, 8, 64, 0},
	{64, 16, 128, 0},
}

// TestPrimalBreaksToy is the gate of the primal attack: at toy parameters
// fplll's LLL on the Bai-Galbraith embedding of a known-plaintext row
// recovers s exactly, for every row kind (the attacker subtracts
// Delta x_q, public for a known row). It fails if any row is not
// recovered.
func TestPrimalBreaksToy(t *testing.T) {
	requireFplll(t)
	for _, c := range toyPrimal {
		st := newTestSetup(t, lwe.Params{Lambda: c.lambda, H: c.h, Delta: 16}, c.in)
		rng := rand.New(rand.NewPCG(5, uint64(c.lambda)))
		var total time.Duration
		for _, kind := range allRows {
			x := Activation(kind, c.in, rng)
			ct, err := st.Encrypt(x)
			if err != nil {
				t.Fatal(err)
			}
			b, err := KnownPlaintext(st.Enc, ct.C, x)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Primal(context.Background(), st.A, b, c.h, PrimalOptions{Block: c.block})
			if err != nil {
				t.Fatalf("lambda %d h %d d_in %d, %s row: %v", c.lambda, c.h, c.in, kind, err)
			}
			truth, _, err := st.Secret(ct.Counter)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.S, truth) {
				t.Errorf("lambda %d h %d, %s row: recovered s differs from the pad's", c.lambda, c.h, kind)
			}
			total += r.Elapsed
			t.Logf("lambda %d h %d d_in %d block %d %-9s rank %d scale %d: recovered in %v", c.lambda, c.h, c.in, c.block, kind, r.Dim, r.Scale, r.Elapsed.Round(time.Millisecond))
		}
		t.Logf("lambda %d block %d: %d/%d rows recovered, %v in fplll", c.lambda, c.block, len(allRows), len(allRows), total.Round(time.Millisecond))
	}
}

// TestPrimalNeedsThePlaintext shows the attack can fail: without
// subtracting Delta x_q (an attacker who does not know the row) the error
// is Delta x_q + e, not short, and the same reduction finds no s.
func TestPrimalNeedsThePlaintext(t *testing.T) {
	requireFplll(t)
	st := newTestSetup(t, lwe.Params{Lambda: 40, H: 8, Delta: 16}, 64)
	x := Activation(RowGauss, 64, rand.New(rand.NewPCG(1, 1)))
	ct, err := st.Encrypt(x)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Primal(context.Background(), st.A, ct.C, 8, PrimalOptions{})
	if !errors.Is(err, errNotFound) {
		t.Fatalf("primal on the raw ciphertext: s %v, error %v; want no secret found", r.S != nil, err)
	}
}

// TestSamplesFor checks the sample choice: enough samples at toy lambda,
// none enough (all samples returned) at the level's parameters, where LLL
// and BKZ-20 cannot reach the target.
func TestSamplesFor(t *testing.T) {
	for _, c := range []struct {
		n, h, m, block int
		wantAll        bool
	}{
		{40, 8, 64, 0, false},
		{64, 8, 64, 0, false},
		{4096, 80, 12288, 0, true},
		{4096, 80, 12288, 20, true},
	} {
		k := SamplesFor(c.n, c.h, c.m, c.block)
		if all := k == c.m; all != c.wantAll {
			t.Errorf("n %d h %d m %d block %d: %d samples (all: %v, want %v)", c.n, c.h, c.m, c.block, k, all, c.wantAll)
		}
	}
}

// TestParseBasis covers fplll's output form and what is refused.
func TestParseBasis(t *testing.T) {
	for _, c := range []struct {
		name, in string
		rows     int
		err      string
	}{
		{"basis", "[[1 0 3]\n[0 -1 4]\n]\n", 2, ""},
		{"zero-free and big entry dropped", "[[1 0 3]\n[99999999999999999999 1 4]\n]\n", 1, ""},
		{"width", "[[1 0]\n]\n", 0, "2 entries, want 3"},
		{"token", "[[1 x 3]\n]\n", 0, "entry 1"},
		{"empty", "[]\n", 0, "no basis rows"},
	} {
		rows, err := parseBasis([]byte(c.in), 3)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && len(rows) != c.rows:
			t.Errorf("%s: %d rows, want %d", c.name, len(rows), c.rows)
		}
	}
	back, err := parseBasis([]byte(formatBasis([][]int64{{1, -2, 3}, {4, 5, -6}})), 3)
	if err != nil || !slices.Equal(back[1], []int64{4, 5, -6}) {
		t.Errorf("format/parse round trip: %v %v", back, err)
	}
}
