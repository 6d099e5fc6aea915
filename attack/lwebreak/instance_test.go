package lwebreak

import (
	"math/rand/v2"
	"slices"
	"testing"

	"gelo/lwe"
)

var testKey = []byte("gelo-lwebreak-test-session-key")

func newTestSetup(t testing.TB, p lwe.Params, in int) *Setup {
	t.Helper()
	st, err := NewSetup(p, in, 11, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSecretMatchesPad checks the harness's truth: the s and e that Secret
// derives from the documented pad stream give A s + e = the pad's m, for
// several counters and shapes (h across a 64-word sign boundary, d_in not a
// multiple of 16).
func TestSecretMatchesPad(t *testing.T) {
	for _, c := range []struct {
		p  lwe.Params
		in int
	}{
		{lwe.Params{Lambda: 64, H: 6, Delta: 16}, 64},
		{lwe.Params{Lambda: 200, H: 70, Delta: 16}, 37},
	} {
		st := newTestSetup(t, c.p, c.in)
		for _, n := range []uint64{0, 1, 1 << 40} {
			pad := st.Gen.New()
			if err := st.Gen.Fill(n, pad); err != nil {
				t.Fatal(err)
			}
			s, e, err := st.Secret(n)
			if err != nil {
				t.Fatal(err)
			}
			weight := 0
			for _, v := range s {
				if v != 0 {
					weight++
				}
			}
			if weight != c.p.H {
				t.Errorf("lambda %d counter %d: weight %d, want %d", c.p.Lambda, n, weight, c.p.H)
			}
			r, err := Residual(st.A, pad.M, s)
			if err != nil {
				t.Fatal(err)
			}
			for i := range r {
				if r[i] != int32(e[i]) {
					t.Fatalf("lambda %d counter %d: m - A s = %d at %d, e = %d", c.p.Lambda, n, r[i], i, e[i])
				}
			}
			if !Solves(st.A, pad.M, s) {
				t.Errorf("lambda %d counter %d: the true s does not solve its pad", c.p.Lambda, n)
			}
		}
	}
}

// TestKnownPlaintextMatchesEncode checks that what an attacker who knows a
// row subtracts is exactly Delta x_q: c - Delta x_q is the pad's m.
func TestKnownPlaintextMatchesEncode(t *testing.T) {
	st := newTestSetup(t, lwe.Params{Lambda: 64, H: 6, Delta: 16}, 96)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kind := range allRows {
		x := Activation(kind, st.In, rng)
		pad := st.Gen.New()
		if err := st.Gen.Fill(99, pad); err != nil {
			t.Fatal(err)
		}
		m := slices.Clone(pad.M)
		c := make([]uint32, st.In)
		if _, err := st.Enc.Encode(x, pad, c); err != nil {
			t.Fatal(err)
		}
		b, err := KnownPlaintext(st.Enc, c, x)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(b, m) {
			t.Errorf("%s: c - Delta x_q differs from the pad's m", kind)
		}
	}
}
