package lwe

import (
	"math"
	"strings"
	"testing"
)

// kyber512 is Kyber-512 as plain LWE (module structure ignored), as in the
// estimator's schemes.Kyber512: n = 512, q = 3329, secret and error CBD(3),
// m = 512 (Kyber round-3 specification, Table 1, p. 11, as cited in the
// estimator's schemes.py).
var kyber512 = Params{N: 512, Q: 3329, M: 512, Secret: CBD(3), Error: CBD(3)}

// TestEstimatorDoctests reproduces figures the lattice-estimator prints in
// its own documentation (github.com/malb/lattice-estimator, commit 27a581b,
// 2026-06-06), which follow from the same formulas, so the tolerance is the
// printed precision (0.1 bit, exact block size and dimension):
//   - estimator/lwe_primal.py, PrimalUSVP.__call__:
//     LWE.primal_usvp(schemes.Kyber512) -> rop 2^143.8, beta 406, d 998;
//   - estimator/lwe.py, Estimate.rough: usvp (ADPS16, GSA) on Kyber512 ->
//     rop 2^118.6, beta 406, d 998;
//   - estimator/lwe.py, Estimate.__call__: dual on Kyber512 ->
//     rop 2^149.9, beta 424, d 1024;
//   - and the cases commented in the table.
func TestEstimatorDoctests(t *testing.T) {
	tests := []struct {
		name   string
		cm     CostModel
		attack string
		bits   float64
		beta   int
		d      int
	}{
		{"usvp MATZOV", MATZOV{}, "usvp", 143.8, 406, 998},
		{"usvp core-SVP", CoreSVP{}, "usvp", 118.6, 406, 998},
		{"dual MATZOV", MATZOV{}, "dual", 149.9, 424, 1024},
		// docs/schemes/nist-pqc-round-3.rst: LWE.primal_bdd(Kyber512) ->
		// rop 2^140.2, beta 389, eta 422, d 1005 (d optimised at that beta).
		{"bdd MATZOV", MATZOV{}, "bdd", 140.2, 389, 1005},
		// estimator/lwe.py, Estimate.__call__ and Estimate.rough:
		// dual_hybrid (the MATZOV FFT dual) on Kyber512 -> 2^139.7,
		// beta 387, p 5, t 50 (MATZOV) and 2^115.5, beta 395, p 5, t 40
		// (ADPS16); no d is printed (0 here).
		{"dual-fft MATZOV", MATZOV{}, "dual-fft", 139.7, 387, 0},
		{"dual-fft core-SVP", CoreSVP{}, "dual-fft", 115.5, 395, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Estimate(kyber512, tc.cm)
			if err != nil {
				t.Fatal(err)
			}
			a := find(t, r, tc.attack)
			if math.Abs(a.Bits-tc.bits) > 0.05 || a.Beta != tc.beta || a.D != tc.d {
				t.Errorf("%s: got 2^%.2f beta %d d %d, estimator prints 2^%.1f beta %d d %d",
					tc.attack, a.Bits, a.Beta, a.D, tc.bits, tc.beta, tc.d)
			}
		})
	}
}

// TestSparseDoctests reproduces the estimator's sparse-secret examples:
// Kyber512 with Xs = SparseTernary(16) (16 entries +1, 16 entries -1: h = 32),
// estimator/lwe_primal.py PrimalHybrid.__call__ and estimator/lwe_guess.py
// guess_composition.__call__ (MATZOV model):
//   - primal_hybrid(mitm=False, babai=False): 2^87.9, beta 127, eta 18, zeta 303;
//   - primal_hybrid(mitm=True, babai=True): 2^85.4, beta 111, zeta 366;
//   - guess_composition(primal_usvp): 2^102.4.
//
// Tolerances: this package takes the Babai probability's Beta CDF in its
// large-k closed form (lnBabaiProb, TestBabaiApprox) and searches zeta and
// beta on a refining grid where the estimator uses scipy's bounded
// minimiser plus a neighbourhood and a local minimum with precision 2, so
// it may land a little either side: 1 bit, 1.5 bits for the MitM variant
// (whose Babai factor spans all d coordinates), 0.5 bit for
// drop-and-solve (same formulas, finer search).
func TestSparseDoctests(t *testing.T) {
	p := kyber512
	p.Secret = SparseTernary(32)
	in := p.normalize()
	tests := []struct {
		got  Attack
		want float64
		tol  float64
	}{
		{primalHybrid(in, "bdd-hybrid", false, false, true, MATZOV{}), 87.9, 1},
		{primalHybrid(in, "bdd-mitm-hybrid", true, true, true, MATZOV{}), 85.4, 1.5},
		{dropAndSolve(in, MATZOV{}), 102.4, 0.5},
	}
	for _, tc := range tests {
		t.Logf("%s: 2^%.1f beta %d zeta %d (%s), estimator 2^%.1f", tc.got.Name, tc.got.Bits, tc.got.Beta, tc.got.Zeta, tc.got.Note, tc.want)
		if math.Abs(tc.got.Bits-tc.want) > tc.tol {
			t.Errorf("%s: 2^%.2f, estimator prints 2^%.1f (tolerance %.1f)", tc.got.Name, tc.got.Bits, tc.want, tc.tol)
		}
	}
}

// TestHESv2BDD reproduces docs/schemes/hes.rst of the estimator:
// LWE.primal_bdd(HESv2_8192_128_ternary) (n = 8192, q = 2^214, ternary
// secret, error stddev 3.19, unlimited samples) -> rop 2^128.3, beta 332,
// eta 373, d 16216: bits within 0.05, beta and d exact.
func TestHESv2BDD(t *testing.T) {
	p := Params{N: 8192, Q: math.Exp2(214), Secret: Ternary(), Error: Gaussian(3.19)}
	a := primalHybrid(p.normalize(), "bdd", false, false, false, MATZOV{})
	t.Logf("bdd: 2^%.2f beta %d d %d (%s)", a.Bits, a.Beta, a.D, a.Note)
	if math.Abs(a.Bits-128.3) > 0.05 || a.Beta != 332 || a.D != 16216 {
		t.Errorf("bdd: 2^%.2f beta %d d %d, estimator prints 2^128.3 beta 332 d 16216", a.Bits, a.Beta, a.D)
	}
}

// TestSimplePIRClaim checks SimplePIR's parameters (Henzinger et al.,
// USENIX Security 2023: n = 1024, q = 2^32, error stddev 6.4, secret uniform
// mod q; pir/params.csv of github.com/ahenzinger/simplepir lists
// "10,20,32,6.400000" for up to 2^20 samples), which the paper states give
// 128-bit security by the lattice-estimator. Today's estimator formulas
// (MATZOV model, GSA), as implemented here, give 121.5 bits (BDD, beta 319;
// uSVP 123.2): 6.5 bits short of the claim. We could not find what makes
// the difference (estimator version or cost model of 2022); the test pins
// our figure so that a change to it is noticed, and the gap is reported.
func TestSimplePIRClaim(t *testing.T) {
	p := Params{N: 1024, Q: math.Exp2(32), M: 1 << 20, Secret: UniformMod(math.Exp2(32)), Error: Gaussian(6.4)}
	r, err := Estimate(p, MATZOV{})
	if err != nil {
		t.Fatal(err)
	}
	a := r.Min()
	t.Logf("SimplePIR: %s 2^%.1f beta %d; claimed 128", a.Name, a.Bits, a.Beta)
	if a.Bits < 121 || a.Bits > 122 {
		t.Errorf("SimplePIR: %s 2^%.2f, expected 121.5 (claim 128)", a.Name, a.Bits)
	}
}

func find(t *testing.T, r Report, name string) Attack {
	t.Helper()
	for _, a := range r.Attacks {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no attack %q in %v", name, r.Attacks)
	return Attack{}
}

// TestPublishedFigures compares with figures published for other schemes,
// each computed by its authors with tools or models that differ in small
// ways from this package; the tolerance says by how much and why.
func TestPublishedFigures(t *testing.T) {
	tests := []struct {
		name   string
		p      Params
		cm     CostModel
		attack string // "" for the minimum over all attacks
		want   float64
		lo, hi float64 // accepted range of got - want
		source string
	}{
		// Kyber-512 core-SVP classical hardness, primal 118 and dual 117
		// (Kyber round-3 specification, 2021-08-04, its security analysis;
		// the figures issue 50 quotes). The primal figure is the same
		// GSA/uSVP model: within 1 bit.
		{"kyber512 primal", kyber512, CoreSVP{}, "usvp", 118, -1, 1, "Kyber round-3 spec"},
		// The dual figure comes from the Kyber team's script
		// (github.com/pq-crystals/security-estimates, MLWE_security.py,
		// LWE_dual_cost), which costs 0.292 b + max(0, -2 log2 eps -
		// 0.2075 b): 1/eps^2 short vectors in all, and prints the floor.
		// The estimator's plain dual (this package: beta 424, the block
		// size the estimator prints for its MATZOV dual too) asks for
		// N = 2 ln(50)/eps^2 vectors (99 % success by majority vote, a
		// factor 7.8) and makes the sieve's vectors sqrt(4/3) longer, which
		// costs a larger block: accepted 0 to +8 bits.
		{"kyber512 dual", kyber512, CoreSVP{}, "dual", 117, 0, 8, "Kyber round-3 spec"},
		// HE standard v1.1 (Albrecht et al., "Homomorphic Encryption
		// Security Standard", 2018), its 128-bit classical table for ternary
		// secrets, error stddev 3.2: n = 1024 / log q = 27,
		// 2048 / 54, 4096 / 109. The table was made with the 2018 estimator
		// (its "sieve" cost, uSVP, dec and dual with secret scaling);
		// today's estimator (MATZOV model) gives a few bits less at the
		// larger n (the HE standard v2, eprint 2024/463, Table 5.2, lowers
		// log q for that reason): accepted 128 - 5 .. 128 + 3.
		{"HE 1024/27", Params{N: 1024, Q: math.Exp2(27), M: 1024, Secret: Ternary(), Error: Gaussian(3.2)}, MATZOV{}, "", 128, -5, 3, "HE standard v1.1, 128-bit ternary table"},
		{"HE 2048/54", Params{N: 2048, Q: math.Exp2(54), Secret: Ternary(), Error: Gaussian(3.2)}, MATZOV{}, "", 128, -5, 3, "HE standard v1.1, 128-bit ternary table"},
		{"HE 4096/109", Params{N: 4096, Q: math.Exp2(109), Secret: Ternary(), Error: Gaussian(3.2)}, MATZOV{}, "", 128, -5, 3, "HE standard v1.1, 128-bit ternary table"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Estimate(tc.p, tc.cm)
			if err != nil {
				t.Fatal(err)
			}
			a := r.Min()
			if tc.attack != "" {
				a = find(t, r, tc.attack)
			}
			diff := a.Bits - tc.want
			t.Logf("%s: %s %.1f bits (beta %d) vs %.0f published (%s)", tc.name, a.Name, a.Bits, a.Beta, tc.want, tc.source)
			if diff < tc.lo || diff > tc.hi {
				t.Errorf("%s: %s gives %.1f bits, published %.0f (%s): difference %+.1f outside [%+.0f, %+.0f]",
					tc.name, a.Name, a.Bits, tc.want, tc.source, diff, tc.lo, tc.hi)
			}
		})
	}
}

// TestDelta checks delta(beta) against the estimator's table and formula.
func TestDelta(t *testing.T) {
	tests := []struct {
		beta int
		want float64
	}{
		{2, 1.0219}, {12, 1.01616}, {39, 1.01331}, {40, 1.01295},
		// the estimator's doctest: RC.delta(406) printed as 1.003941
		{406, 1.003941},
	}
	for _, tc := range tests {
		if got := Delta(tc.beta); math.Abs(got-tc.want) > 5e-7 {
			t.Errorf("Delta(%d) = %.7f, want %.7f", tc.beta, got, tc.want)
		}
	}
}

func TestBadParams(t *testing.T) {
	tests := []struct {
		p    Params
		want string
	}{
		{Params{N: 0, Q: 3329, Secret: Ternary(), Error: CBD(2)}, "N = 0"},
		{Params{N: 16, Q: 1, Secret: Ternary(), Error: CBD(2)}, "Q = 1"},
		{Params{N: 16, Q: 3329, M: -1, Secret: Ternary(), Error: CBD(2)}, "M = -1"},
		{Params{N: 16, Q: 3329, Secret: SparseTernary(17), Error: CBD(2)}, "Secret: sparse weight h = 17"},
		{Params{N: 16, Q: 3329, Secret: Ternary(), Error: Gaussian(0)}, "Error: Gaussian standard deviation 0"},
		{Params{N: 16, Q: 3329, Secret: Ternary(), Error: SparseTernary(2)}, "Error: a sparse error"},
		{Params{N: 16, Q: 3329, Secret: Dist{kind: 99}, Error: CBD(2)}, "Secret: unknown distribution"},
	}
	for _, tc := range tests {
		_, err := Estimate(tc.p, CoreSVP{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Estimate(%+v): error %v, want one containing %q", tc.p, err, tc.want)
		}
	}
}

// TestDualAndMitMDoctests reproduces the estimator's examples in
// estimator/lwe_dual.py (DualHybrid.__call__) and estimator/lwe_guess.py
// (MITM.__call__), MATZOV model, unlimited samples:
//   - n 1024, q 2^32, error DG(3.0): LWE.dual with secret SparseTernary(32)
//     (h 64) -> 2^103.4 beta 251 d 1928; dual_hybrid -> 2^91.6 beta 168
//     zeta 279 h1 8; LWE.dual with secret CBD(8) -> 2^114.5 beta 291 d 2127,
//     with secret DG(3.0) -> 2^116.6 beta 299 d 2166;
//   - n 1024, q 2^40, secret SparseTernary(32), error DG(3.2): mitm
//     (analytical) -> 2^217.8, 226 repetitions.
//
// Same formulas; this package scans beta, zeta and h1 more finely than the
// estimator's local minimum with step 8, so it may find a block size or
// guessing dimension a step away, never a more expensive one: 0.15 bit.
func TestDualAndMitMDoctests(t *testing.T) {
	dg := Params{N: 1024, Q: math.Exp2(32), Secret: SparseTernary(64), Error: Gaussian(3.0)}
	withSecret := func(s Dist) inst {
		p := dg
		p.Secret = s
		return p.normalize()
	}
	mitmParams := Params{N: 1024, Q: math.Exp2(40), Secret: SparseTernary(64), Error: Gaussian(3.2)}
	tests := []struct {
		got  Attack
		want float64
	}{
		{dual(withSecret(SparseTernary(64)), MATZOV{}), 103.4},
		{dualHybrid(withSecret(SparseTernary(64)), MATZOV{}), 91.6},
		{dual(withSecret(CBD(8)), MATZOV{}), 114.5},
		{dual(withSecret(Gaussian(3.0)), MATZOV{}), 116.6},
		{mitm(mitmParams.normalize()), 217.8},
	}
	for _, tc := range tests {
		a := tc.got
		t.Logf("%s: 2^%.2f beta %d d %d zeta %d h1 %d, estimator 2^%.1f", a.Name, a.Bits, a.Beta, a.D, a.Zeta, a.H1, tc.want)
		if a.Bits > tc.want+0.05 || a.Bits < tc.want-0.15 {
			t.Errorf("%s: 2^%.2f, estimator prints 2^%.1f", a.Name, a.Bits, tc.want)
		}
	}
}
