package runtime

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gelo/keystream"
)

// sampleLogits are the fixed 8-token logits of the distribution tests.
// Softmax: about .485 .218 .161 .066 .036 .024 .0073 .0020, so every cell
// expects >= 400 of 200k draws (chi-square's large-count regime).
var sampleLogits = []float32{3.0, 2.2, 1.9, 1.0, 0.4, 0.0, -1.2, -2.5}

func sampleMust(t testing.TB, opt SamplerOptions, key string) *Sampler {
	t.Helper()
	s, err := NewSampler(opt, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sampleRandLogits(r *rand.Rand, n int, sigma float64, ties bool) []float32 {
	z := make([]float32, n)
	for i := range z {
		v := r.NormFloat64() * sigma
		if ties {
			v = math.Round(v) // many exact ties, including at the max
		}
		z[i] = float32(v)
	}
	return z
}

// sampleRefDist is the specification: sort the whole vocabulary (logit desc,
// id asc), weights exp((z-zmax)/T) with math.Exp, top-k, top-p on the
// top-k-renormalised distribution, min-p. It returns the survivors in
// order with their weights, and whether the top-p or min-p cut sits within
// rounding of a token (where the fast path may legitimately differ).
func sampleRefDist(z []float32, opt SamplerOptions) (ids []int, w []float64, borderline bool) {
	c := make([]sampleCand, len(z))
	for i, v := range z {
		c[i] = sampleCand{v, int32(i)}
	}
	slices.SortFunc(c, sampleCmp)
	if opt.Temperature == 0 {
		return []int{int(c[0].id)}, []float64{1}, false
	}
	if k := opt.TopK; k > 0 && k < len(c) {
		c = c[:k]
	}
	w = make([]float64, len(c))
	W := 0.0
	for j := range c {
		w[j] = math.Exp((float64(c[j].z) - float64(c[0].z)) / opt.Temperature)
		W += w[j]
	}
	const eps = 1e-9
	n := len(c)
	if p := opt.TopP; p > 0 && p < 1 {
		cum := 0.0
		for j := range w {
			cum += w[j]
			if math.Abs(cum-p*W) < eps*W {
				borderline = true
			}
			if cum >= p*W {
				n = j + 1
				break
			}
		}
	}
	for j := 0; j < n; j++ {
		if w[j] < opt.MinP || w[j] == 0 {
			if opt.MinP > 0 && math.Abs(w[j]-opt.MinP) < eps {
				borderline = true
			}
			n = j
			break
		}
	}
	for _, x := range c[:n] {
		ids = append(ids, int(x.id))
	}
	return ids, w[:n], borderline
}

// sampleRefInvert inverts the CDF of sampleRefDist's survivors at u*S; borderline
// reports u*S within rounding of an inner boundary.
func sampleRefInvert(ids []int, w []float64, u float64) (tok int, borderline bool) {
	const eps = 1e-9
	S := 0.0
	for _, x := range w {
		S += x
	}
	target, cum := u*S, 0.0
	tok = -1
	for j := range w {
		cum += w[j]
		if j < len(w)-1 && math.Abs(cum-target) < eps*S { // past the last one, both fall back to it
			borderline = true
		}
		if tok < 0 && cum > target {
			tok = ids[j]
		}
	}
	if tok < 0 {
		tok = ids[len(ids)-1]
	}
	return tok, borderline
}

// sampleRefProbs is sampleRefDist as a map token -> probability.
func sampleRefProbs(z []float32, opt SamplerOptions) map[int]float64 {
	ids, w, _ := sampleRefDist(z, opt)
	S := 0.0
	for _, x := range w {
		S += x
	}
	m := map[int]float64{}
	for j, id := range ids {
		m[id] = w[j] / S
	}
	return m
}

// samplePickU runs the sampler's selection with an injected uniform u.
func samplePickU(t testing.TB, s *Sampler, z []float32, u float64) int {
	t.Helper()
	zz := slices.Clone(z)
	best, err := s.prepare(zz, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.opt.Temperature == 0 {
		return best
	}
	return s.pick(zz, best, u)
}

// TestSampleMatchesReference checks the fast paths (heap for top-k, log
// buckets otherwise) against the full-sort specification, token for
// token, on a grid of u, across shapes of logits (peaked, flat, ties,
// -Inf) and every filter combination.
func TestSampleMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const V = 1000
	type shape struct {
		name string
		z    []float32
	}
	shapes := []shape{
		{"peaked", sampleRandLogits(r, V, 6, false)},
		{"normal", sampleRandLogits(r, V, 1.5, false)},
		{"flat", sampleRandLogits(r, V, 0.02, false)},
		{"ties", sampleRandLogits(r, V, 1.2, true)},
	}
	masked := sampleRandLogits(r, V, 2, false)
	for i := range masked {
		if i%3 != 0 {
			masked[i] = float32(math.Inf(-1))
		}
	}
	sparse := slices.Clone(masked)
	for i := range sparse {
		if i%200 != 0 {
			sparse[i] = float32(math.Inf(-1))
		}
	}
	shapes = append(shapes, shape{"masked", masked}, shape{"sparse", sparse}) // sparse: 5 finite, so top-k 7 and 60 keep -Inf
	us := []float64{0, 1 - 0x1p-53}
	for range 30 {
		us = append(us, r.Float64())
	}
	var checked, skipped int
	for _, sh := range shapes {
		for _, T := range []float64{0.25, 1, 3} {
			for _, k := range []int{0, 1, 7, 60} {
				for _, p := range []float64{0, 0.3, 0.9} {
					for _, mp := range []float64{0, 0.02, 0.4} {
						opt := SamplerOptions{Temperature: T, TopK: k, TopP: p, MinP: mp}
						s := sampleMust(t, opt, "ref")
						ids, w, cutBorder := sampleRefDist(sh.z, opt)
						for _, u := range us {
							want, border := sampleRefInvert(ids, w, u)
							if border || cutBorder {
								skipped++
								continue
							}
							checked++
							if got := samplePickU(t, s, sh.z, u); got != want {
								t.Fatalf("%s %+v u=%v: got token %d, reference %d", sh.name, opt, u, got, want)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases checked, %d skipped as borderline", checked, skipped)
	if skipped > checked/100 {
		t.Fatalf("%d of %d cases skipped as borderline", skipped, checked+skipped)
	}
}

func TestGreedyEqualsTemperatureZeroEqualsTopK1(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	g := sampleMust(t, SamplerOptions{}, "")
	k1 := sampleMust(t, SamplerOptions{Temperature: 1, TopK: 1}, "k1")
	k1p := sampleMust(t, SamplerOptions{Temperature: 2, TopK: 1, TopP: 0.3, MinP: 0.5}, "k1p")
	for seed := range 300 {
		z := sampleRandLogits(r, 50+seed*7, 3, seed%2 == 0)
		want := Argmax(z)
		for name, s := range map[string]*Sampler{"greedy": g, "top-k 1": k1, "top-k 1 + filters": k1p} {
			got, err := s.Sample(slices.Clone(z), nil)
			if err != nil || got != want {
				t.Fatalf("seed %d %s: got %d, %v; Argmax %d", seed, name, got, err, want)
			}
		}
	}
}

func TestGreedyIsArgmaxOfPenalised(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	opt := SamplerOptions{RepetitionPenalty: 1.8, FrequencyPenalty: 0.4, PresencePenalty: 0.3}
	s := sampleMust(t, opt, "")
	changed := 0
	for seed := range 200 {
		z := sampleRandLogits(r, 64, 2, seed%3 == 0)
		hist := make([]int, 12)
		for i := range hist {
			hist[i] = Argmax(z) // penalise the leader, often enough to unseat it
			if i%2 == 1 {
				hist[i] = r.IntN(len(z))
			}
		}
		pen := slices.Clone(z)
		if err := s.penalise(pen, hist); err != nil {
			t.Fatal(err)
		}
		want := Argmax(pen)
		if want != Argmax(z) {
			changed++
		}
		got, err := s.Sample(slices.Clone(z), hist)
		if err != nil || got != want {
			t.Fatalf("seed %d: got %d, %v; Argmax(penalised) %d", seed, got, err, want)
		}
	}
	if changed == 0 {
		t.Fatal("penalties never changed the argmax; the test proves nothing")
	}
}

func TestPenaltyFormulas(t *testing.T) {
	// Hand-computed with exactly representable values: rep 2, freq 0.5,
	// presence 0.25. Token 1 is seen twice but the repetition penalty
	// applies once (HF); the frequency penalty counts both.
	s := sampleMust(t, SamplerOptions{RepetitionPenalty: 2, FrequencyPenalty: 0.5, PresencePenalty: 0.25}, "")
	z := []float32{2, -2, 0, 1.5, -0.5, 3}
	hist := []int{0, 1, 3, 1, 2, 3, 3}
	if err := s.penalise(z, hist); err != nil {
		t.Fatal(err)
	}
	want := []float32{
		2.0/2 - (0.5*1 + 0.25),  // 0.25
		-2.0*2 - (0.5*2 + 0.25), // -5.25
		0*2 - (0.5*1 + 0.25),    // -0.75
		1.5/2 - (0.5*3 + 0.25),  // -1
		-0.5,                    // unseen
		3,                       // unseen
	}
	if !slices.Equal(z, want) {
		t.Fatalf("penalised %v, want %v", z, want)
	}

	// Random values against the formula, bit for bit.
	r := rand.New(rand.NewPCG(7, 8))
	for range 50 {
		opt := SamplerOptions{RepetitionPenalty: 0.5 + 2*r.Float64(), FrequencyPenalty: 2*r.Float64() - 1, PresencePenalty: 2*r.Float64() - 1}
		s := sampleMust(t, opt, "")
		z := sampleRandLogits(r, 40, 3, false)
		hist := make([]int, 30)
		for i := range hist {
			hist[i] = r.IntN(20)
		}
		got := slices.Clone(z)
		if err := s.penalise(got, hist); err != nil {
			t.Fatal(err)
		}
		for tok := range z {
			c := 0
			for _, h := range hist {
				if h == tok {
					c++
				}
			}
			want := z[tok]
			if c > 0 {
				x := float64(z[tok])
				if x > 0 {
					x = x / opt.RepetitionPenalty
				} else {
					x = x * opt.RepetitionPenalty
				}
				x = x - (float64(opt.FrequencyPenalty*float64(c)) + opt.PresencePenalty)
				want = float32(x)
			}
			if got[tok] != want {
				t.Fatalf("%+v token %d (count %d): %v -> %v, want %v", opt, tok, c, z[tok], got[tok], want)
			}
		}
		if slices.ContainsFunc(s.cnt, func(c int32) bool { return c != 0 }) {
			t.Fatal("history counts not reset")
		}
	}

	// Penalties off: logits untouched.
	s = sampleMust(t, SamplerOptions{}, "")
	z = []float32{1, -1, 2}
	if err := s.penalise(z, []int{0, 1, 2, 2}); err != nil || !slices.Equal(z, []float32{1, -1, 2}) {
		t.Fatalf("no-op penalties changed the logits: %v %v", z, err)
	}
}

func TestSameKeySameTokens(t *testing.T) {
	opt := SamplerOptions{Temperature: 0.9, TopP: 0.95, RepetitionPenalty: 1.1}
	run := func(key []byte) []int {
		s, err := NewSampler(opt, key)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(9, 10)) // same logits every run
		var out []int
		for range 64 {
			tok, err := s.Sample(sampleRandLogits(r, 500, 1, false), out)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tok)
		}
		return out
	}
	a, b := run(SeedKey(42)), run(SeedKey(42))
	if !slices.Equal(a, b) {
		t.Fatalf("same key, different tokens:\n%v\n%v", a, b)
	}
	if c := run(SeedKey(43)); slices.Equal(a, c) {
		t.Fatal("different keys gave the same 64 tokens")
	}
	if c := run([]byte("another key")); slices.Equal(a, c) {
		t.Fatal("different keys gave the same 64 tokens")
	}
	// Reset restarts the stream.
	s := sampleMust(t, opt, "k")
	first, _ := s.Sample(slices.Clone(sampleLogits), nil)
	var seq1, seq2 []int
	for range 20 {
		tok, _ := s.Sample(slices.Clone(sampleLogits), nil)
		seq1 = append(seq1, tok)
	}
	if err := s.Reset([]byte("k")); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Sample(slices.Clone(sampleLogits), nil); again != first {
		t.Fatal("Reset did not restart the stream")
	}
	for range 20 {
		tok, _ := s.Sample(slices.Clone(sampleLogits), nil)
		seq2 = append(seq2, tok)
	}
	if !slices.Equal(seq1, seq2) {
		t.Fatal("Reset did not restart the stream")
	}
}

// TestSampleStreamPinned pins the start of the stream for SeedKey(1): the
// HKDF-SHA256 / ChaCha20 derivation is a format (--seed replay depends on
// it). The expected words were computed by an independent implementation
// of RFC 5869 and RFC 8439.
func TestSampleStreamPinned(t *testing.T) {
	var r keystream.Stream
	if err := keySampleStream(&r, SeedKey(1)); err != nil {
		t.Fatal(err)
	}
	if a, b := r.Uint64(), r.Uint64(); a != 0x8f012a7e1f2ef625 || b != 0xa5d4e24537898a0a {
		t.Fatalf("stream starts %#x %#x", a, b)
	}
	_ = keySampleStream(&r, SeedKey(1))
	if f := r.Float64(); f != 0.5586115415491653 {
		t.Fatalf("first uniform %v", f)
	}
	for range 1000 {
		if f := r.Float64(); f < 0 || f >= 1 {
			t.Fatalf("float64 %v outside [0, 1)", f)
		}
	}
	// The rekey near the per-key limit is keystream's (TestRekey there).
}

// sampleChi2SF is the chi-square survival function P(X >= x) for df degrees of
// freedom (closed forms for integer df).
func sampleChi2SF(x float64, df int) float64 {
	h := x / 2
	if df%2 == 0 {
		sum, term := 0.0, 1.0
		for i := range df / 2 {
			if i > 0 {
				term *= h / float64(i)
			}
			sum += term
		}
		return math.Exp(-h) * sum
	}
	sum := 0.0
	term := math.Sqrt(h) / math.Gamma(1.5) // (h)^(1/2) / Γ(3/2)
	for i := range df / 2 {
		if i > 0 {
			term *= h / (float64(i) + 0.5)
		}
		sum += term
	}
	return math.Erfc(math.Sqrt(h)) + math.Exp(-h)*sum
}

func TestChi2SF(t *testing.T) {
	// Known quantiles: P(X >= 3.841 | df 1) = .05, P(X >= 5.991 | 2) = .05,
	// P(X >= 14.067 | 7) = .05, P(X >= 40.52 | 7) ~ 1e-6.
	for _, c := range []struct {
		x    float64
		df   int
		want float64
	}{{3.841459, 1, 0.05}, {5.991465, 2, 0.05}, {14.06714, 7, 0.05}, {7.814728, 3, 0.05}} {
		if got := sampleChi2SF(c.x, c.df); math.Abs(got-c.want) > 1e-5 {
			t.Fatalf("sampleChi2SF(%v, %d) = %v, want %v", c.x, c.df, got, c.want)
		}
	}
}

// sampleCheckDist draws n tokens and checks them against want (token ->
// probability): never a token outside want's support, and a chi-square
// goodness-of-fit test at significance 1e-6. The key is fixed, so the
// test is deterministic; 1e-6 is the chance a correct sampler would fail
// it under a random key, while with n = 200k it rejects any absolute
// bias of about 1% on a cell of probability 0.5 (chi-square contribution
// n*d^2/p = 40 against a critical value of about 40.5 for 7 df).
func sampleCheckDist(t *testing.T, opt SamplerOptions, z []float32, n int, want map[int]float64) []int {
	t.Helper()
	// The hand-derived support and probabilities agree with the spec.
	spec := sampleRefProbs(z, opt)
	if len(spec) != len(want) {
		t.Fatalf("%+v: want has support %v, the reference %v", opt, want, spec)
	}
	for tok, p := range want {
		if math.Abs(spec[tok]-p) > 1e-12 {
			t.Fatalf("%+v: token %d: want %v, the reference %v", opt, tok, p, spec[tok])
		}
	}
	s := sampleMust(t, opt, "distribution")
	counts := make([]int, len(z))
	buf := make([]float32, len(z))
	for range n {
		copy(buf, z)
		tok, err := s.Sample(buf, nil)
		if err != nil {
			t.Fatal(err)
		}
		counts[tok]++
	}
	for tok, c := range counts {
		if _, ok := want[tok]; !ok && c != 0 {
			t.Fatalf("%+v: token %d outside the support drawn %d times", opt, tok, c)
		}
	}
	if len(want) == 1 {
		return counts
	}
	stat, df := sampleChi2(counts, want)
	pv := sampleChi2SF(stat, df)
	t.Logf("%+v: chi-square %.2f, %d df, p = %.3g (%d draws)", opt, stat, df, pv, n)
	if pv < 1e-6 {
		t.Fatalf("%+v: chi-square %.1f with %d df (p = %.2g); counts %v, want %v", opt, stat, df, pv, counts, want)
	}
	return counts
}

// sampleChi2 is Pearson's statistic of counts against want's support.
func sampleChi2(counts []int, want map[int]float64) (stat float64, df int) {
	n := 0
	for _, c := range counts {
		n += c
	}
	for tok, p := range want {
		e := p * float64(n)
		stat += (float64(counts[tok]) - e) * (float64(counts[tok]) - e) / e
	}
	return stat, len(want) - 1
}

func sampleSoftmaxOver(z []float32, T float64, keep []int) map[int]float64 {
	m := map[int]float64{}
	S := 0.0
	for _, i := range keep {
		m[i] = math.Exp(float64(z[i]) / T)
		S += m[i]
	}
	for i := range m {
		m[i] /= S
	}
	return m
}

func TestSampleDistributionTemperature(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	counts := sampleCheckDist(t, SamplerOptions{Temperature: 1}, sampleLogits, 200_000, sampleSoftmaxOver(sampleLogits, 1, all))
	// The test has teeth: the same draws reject temperature 1.05 (top
	// token .470 instead of .485) far beyond the 1e-6 level.
	stat, df := sampleChi2(counts, sampleSoftmaxOver(sampleLogits, 1.05, all))
	t.Logf("the same draws against temperature 1.05: chi-square %.1f, p = %.3g", stat, sampleChi2SF(stat, df))
	if sampleChi2SF(stat, df) > 1e-12 {
		t.Fatalf("chi-square %.1f does not tell temperature 1 from 1.05", stat)
	}
	sampleCheckDist(t, SamplerOptions{Temperature: 2.5}, sampleLogits, 100_000, sampleSoftmaxOver(sampleLogits, 2.5, all))
}

func TestSampleDistributionTopP(t *testing.T) {
	// Probabilities .485, .218, ...: cumulative .485 < .5 <= .703, so the
	// nucleus of 0.5 is {0, 1}, renormalised to about .69 / .31.
	sampleCheckDist(t, SamplerOptions{Temperature: 1, TopP: 0.5}, sampleLogits, 200_000, sampleSoftmaxOver(sampleLogits, 1, []int{0, 1}))
	// A nucleus smaller than the top token's probability keeps it alone.
	sampleCheckDist(t, SamplerOptions{Temperature: 1, TopP: 0.1}, sampleLogits, 10_000, map[int]float64{0: 1})
}

func TestSampleDistributionTopK(t *testing.T) {
	sampleCheckDist(t, SamplerOptions{Temperature: 1, TopK: 3}, sampleLogits, 200_000, sampleSoftmaxOver(sampleLogits, 1, []int{0, 1, 2}))
}

func TestSampleDistributionMinP(t *testing.T) {
	// min-p 0.1 keeps p >= 0.1 * .485: tokens 0..3 (.066 stays, .036 goes).
	sampleCheckDist(t, SamplerOptions{Temperature: 1, MinP: 0.1}, sampleLogits, 200_000, sampleSoftmaxOver(sampleLogits, 1, []int{0, 1, 2, 3}))
}

func TestSampleDistributionCombined(t *testing.T) {
	// top-k 5, then top-p 0.8 of the top-5-renormalised distribution
	// (.50, .23, .17, .07, .04: cumulative .73 < .8 <= .90 keeps 0..2),
	// then min-p 0.4 (keeps p >= .4 * .50: tokens 0, 1).
	sampleCheckDist(t, SamplerOptions{Temperature: 1, TopK: 5, TopP: 0.8, MinP: 0.4}, sampleLogits, 100_000, sampleSoftmaxOver(sampleLogits, 1, []int{0, 1}))
	sampleCheckDist(t, SamplerOptions{Temperature: 1, TopK: 5, TopP: 0.8}, sampleLogits, 100_000, sampleSoftmaxOver(sampleLogits, 1, []int{0, 1, 2}))
}

func TestSamplerOptionsValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		opt  SamplerOptions
		want string
	}{
		{SamplerOptions{Temperature: -1}, "temperature -1 must be >= 0"},
		{SamplerOptions{Temperature: nan}, "temperature NaN must be a finite number"},
		{SamplerOptions{Temperature: inf}, "temperature +Inf must be a finite number"},
		{SamplerOptions{TopK: -3}, "top-k -3 must be >= 0 (0 = off)"},
		{SamplerOptions{TopP: 1.5}, "top-p 1.5 must be in (0, 1]"},
		{SamplerOptions{TopP: -0.1}, "top-p -0.1 must be in (0, 1]"},
		{SamplerOptions{TopP: nan}, "top-p NaN must be a finite number"},
		{SamplerOptions{MinP: 1}, "min-p 1 must be in [0, 1)"},
		{SamplerOptions{MinP: -0.5}, "min-p -0.5 must be in [0, 1)"},
		{SamplerOptions{MinP: math.Inf(-1)}, "min-p -Inf must be a finite number"},
		{SamplerOptions{RepetitionPenalty: -1}, "repetition penalty -1 must be > 0"},
		{SamplerOptions{RepetitionPenalty: inf}, "repetition penalty +Inf must be a finite number"},
		{SamplerOptions{FrequencyPenalty: nan}, "frequency penalty NaN must be a finite number"},
		{SamplerOptions{PresencePenalty: inf}, "presence penalty +Inf must be a finite number"},
	} {
		err := c.opt.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.opt, err, c.want)
		}
		if _, err2 := NewSampler(c.opt, []byte("k")); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%+v: NewSampler gave %v", c.opt, err2)
		}
	}
	// Every problem is reported at once.
	err := SamplerOptions{Temperature: -1, TopK: -1, TopP: 2}.Validate()
	for _, w := range []string{"temperature", "top-k", "top-p"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("joined error %v lacks %s", err, w)
		}
	}
	for _, ok := range []SamplerOptions{{}, {Temperature: 0.7, TopK: 40, TopP: 1, MinP: 0.05, RepetitionPenalty: 1.1, FrequencyPenalty: -2, PresencePenalty: 2}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	if s := sampleMust(t, SamplerOptions{Temperature: 0.5}, "k"); s.Options().RepetitionPenalty != 1 || s.Options().Temperature != 0.5 {
		t.Errorf("options %+v", s.Options())
	}
	if _, err := NewSampler(SamplerOptions{Temperature: 1}, nil); err == nil || !strings.Contains(err.Error(), "key") {
		t.Errorf("sampling without a key: %v", err)
	}
}

func TestSampleBadInputZeroises(t *testing.T) {
	plain := SamplerOptions{Temperature: 1, TopP: 0.9}
	pen := SamplerOptions{Temperature: 1, PresencePenalty: 1}
	for _, c := range []struct {
		opt  SamplerOptions
		z    []float32
		hist []int
		want string
	}{
		{plain, []float32{}, nil, "empty logits"},
		{plain, []float32{1, float32(math.NaN()), 2}, nil, "token 1 is NaN"},
		{plain, []float32{1, 2, float32(math.Inf(1))}, nil, "token 2 is +Inf"},
		{SamplerOptions{}, []float32{1, 2, float32(math.Inf(1))}, nil, "token 2 is +Inf"},
		{plain, []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, nil, "every logit is -Inf"},
		{pen, []float32{1, 2, 3}, []int{0, 3}, "history token 3 at index 1 is outside the vocabulary [0, 3)"},
		{pen, []float32{1, 2, 3}, []int{-1}, "history token -1 at index 0"},
		{SamplerOptions{RepetitionPenalty: 1e-40}, []float32{3e38, 2, 3}, []int{0}, "token 0 is +Inf (after penalties)"},
	} {
		s := sampleMust(t, c.opt, "k")
		_, err := s.Sample(c.z, c.hist)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %v %v: got %v, want %q", c.opt, c.z, c.hist, err, c.want)
		}
		if slices.ContainsFunc(c.z, func(v float32) bool { return v != 0 }) {
			t.Errorf("%v: logits not zeroised on error", c.z)
		}
	}
	// With penalties off the history is not read, so it cannot be wrong.
	s := sampleMust(t, plain, "k")
	if _, err := s.Sample([]float32{1, 2}, []int{7, -1}); err != nil {
		t.Error(err)
	}
	var nilS *Sampler
	if _, err := nilS.Sample([]float32{1}, nil); err == nil {
		t.Error("nil sampler sampled")
	}
}

func TestSampleZeroisesLogits(t *testing.T) {
	for _, opt := range []SamplerOptions{{}, {Temperature: 1}, {Temperature: 0.8, TopK: 3}, {Temperature: 1, TopP: 0.5, MinP: 0.1, RepetitionPenalty: 1.3}} {
		s := sampleMust(t, opt, "k")
		z := slices.Clone(sampleLogits)
		if _, err := s.Sample(z, []int{0, 1}); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(z, func(v float32) bool { return v != 0 }) {
			t.Fatalf("%+v: logits %v not zeroised", opt, z)
		}
	}
}

func TestSamplerZeroise(t *testing.T) {
	s := sampleMust(t, SamplerOptions{Temperature: 1, FrequencyPenalty: 0.5}, "k")
	if _, err := s.Sample(slices.Clone(sampleLogits), []int{1}); err != nil {
		t.Fatal(err)
	}
	cw, bk := s.cw[:cap(s.cw)], s.bk[:cap(s.bk)]
	s.Zeroise()
	if slices.ContainsFunc(cw, func(v float64) bool { return v != 0 }) || slices.ContainsFunc(bk, func(v uint16) bool { return v != 0 }) ||
		slices.ContainsFunc(s.mass[:], func(v float64) bool { return v != 0 }) {
		t.Fatal("scratch not wiped")
	}
	if s.rng != (keystream.Stream{}) || s.bk != nil {
		t.Fatal("key stream or scratch kept")
	}
	z := slices.Clone(sampleLogits)
	if _, err := s.Sample(z, nil); err == nil || !strings.Contains(err.Error(), "Zeroise") {
		t.Fatalf("sampled after Zeroise: %v", err)
	}
	if z[0] != 0 {
		t.Fatal("logits not zeroised after a refused Sample")
	}
	if err := s.Reset([]byte("k")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sample(slices.Clone(sampleLogits), nil); err != nil {
		t.Fatal(err)
	}
	s.Zeroise()
	s.Zeroise() // idempotent
	var nilS *Sampler
	nilS.Zeroise()
}

func TestSampleExtremeTemperatures(t *testing.T) {
	z := []float32{1, 3, 3, -2, float32(math.Inf(-1))}
	// A subnormal temperature splits only the tied maxima.
	s := sampleMust(t, SamplerOptions{Temperature: 5e-324}, "k")
	seen := map[int]bool{}
	for range 200 {
		tok, err := s.Sample(slices.Clone(z), nil)
		if err != nil {
			t.Fatal(err)
		}
		seen[tok] = true
	}
	if len(seen) != 2 || !seen[1] || !seen[2] {
		t.Fatalf("tiny temperature drew %v, want {1, 2}", seen)
	}
	// A huge one is uniform over the finite logits, never the -Inf one.
	s = sampleMust(t, SamplerOptions{Temperature: 1e300}, "k")
	clear(seen)
	for range 400 {
		tok, _ := s.Sample(slices.Clone(z), nil)
		seen[tok] = true
	}
	if len(seen) != 4 || seen[4] {
		t.Fatalf("huge temperature drew %v", seen)
	}
}

func TestSampleZeroAllocs(t *testing.T) {
	const V = 151936
	r := rand.New(rand.NewPCG(11, 12))
	src := sampleRandLogits(r, V, 2.5, false)
	buf := make([]float32, V)
	hist := []int{5, 17, 17, 99999, 3}
	for _, opt := range []SamplerOptions{
		{RepetitionPenalty: 1.1},
		{Temperature: 0.8, TopP: 0.9, RepetitionPenalty: 1.1, FrequencyPenalty: 0.2},
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05},
		{Temperature: 1},
	} {
		s := sampleMust(t, opt, "allocs")
		copy(buf, src)
		if _, err := s.Sample(buf, hist); err != nil { // warm: sizes the scratch
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(10, func() {
			copy(buf, src)
			if _, err := s.Sample(buf, hist); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%+v: %v allocations per Sample", opt, a)
		}
	}
}

func BenchmarkSample151936(b *testing.B) {
	const V = 151936
	r := rand.New(rand.NewPCG(13, 14))
	// LLM-like logits: a broad Gaussian bulk plus a few strong candidates.
	src := sampleRandLogits(r, V, 2.5, false)
	for i := range 8 {
		src[r.IntN(V)] = float32(14 - i)
	}
	buf := make([]float32, V)
	hist := []int{1, 2, 3, 4, 5, 6, 7, 8}
	b.Run("copy-only", func(b *testing.B) {
		for b.Loop() {
			copy(buf, src)
		}
	})
	for _, c := range []struct {
		name string
		opt  SamplerOptions
	}{
		{"greedy", SamplerOptions{}},
		{"temp0.8", SamplerOptions{Temperature: 0.8}},
		{"temp0.8-topp0.9", SamplerOptions{Temperature: 0.8, TopP: 0.9}},
		{"temp1.5-topp0.95-flat", SamplerOptions{Temperature: 1.5, TopP: 0.95}},
		{"temp0.8-topk40-topp0.95", SamplerOptions{Temperature: 0.8, TopK: 40, TopP: 0.95}},
		{"temp0.8-minp0.05-pen", SamplerOptions{Temperature: 0.8, MinP: 0.05, RepetitionPenalty: 1.1, FrequencyPenalty: 0.1}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := sampleMust(b, c.opt, "bench")
			for b.Loop() {
				copy(buf, src)
				if _, err := s.Sample(buf, hist); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestExpNeg(t *testing.T) {
	ulps := func(a, b float64) float64 { return math.Abs(a-b) / (math.Nextafter(b, math.Inf(1)) - b) }
	for j, v := range sampleExpTab {
		if u := ulps(v, math.Exp2(-float64(j)/64)); u > 1 {
			t.Fatalf("sampleExpTab[%d] = %v is %v ulp off", j, v, u)
		}
	}
	r := rand.New(rand.NewPCG(15, 16))
	for i := range 200_000 {
		d := r.Float64() * []float64{708, 40, 1, 1e-6}[i%4]
		if u := ulps(sampleExpNeg(d), math.Exp(-d)); u > 2 {
			t.Fatalf("sampleExpNeg(%v) = %v, math.Exp %v: %v ulp", d, sampleExpNeg(d), math.Exp(-d), u)
		}
	}
	for _, c := range []struct{ d, want float64 }{
		{0, 1}, {-0.0, 1}, {5e-324, 1}, {708.5, 0}, {math.Inf(1), 0}, {math.NaN(), 0},
		// Pinned bits: the function is part of the --seed replay format.
		// The correctly rounded values (50-digit decimal) are the same
		// except e^-0.1 = 0x1.cf46d99d52b3ap-1, one ulp below.
		{1, 0x1.78b56362cef38p-2}, {0.1, 0x1.cf46d99d52b3bp-1}, {20.5, 0x1.57a3afeed00abp-30},
	} {
		if got := sampleExpNeg(c.d); got != c.want {
			t.Errorf("sampleExpNeg(%v) = %x, want %x", c.d, got, c.want)
		}
	}
}

func TestCheckedArgmaxIsArgmax(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	ninf := float32(math.Inf(-1))
	negZero := float32(math.Copysign(0, -1))
	vals := []float32{ninf, -1, negZero, 0, 1, 2}
	for n := 1; n <= 13; n++ {
		for range 300 {
			z := make([]float32, n)
			for i := range z {
				z[i] = vals[r.IntN(len(vals))]
			}
			got, err := sampleArgmax(z)
			if !slices.ContainsFunc(z, func(v float32) bool { return v != ninf }) {
				if err == nil {
					t.Fatalf("%v: all -Inf accepted", z)
				}
				continue
			}
			if err != nil || got != Argmax(z) {
				t.Fatalf("%v: got %d, %v; Argmax %d", z, got, err, Argmax(z))
			}
		}
	}
	for n := 1; n <= 9; n++ {
		for at := range n {
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
				z := make([]float32, n)
				z[at] = bad
				if _, err := sampleArgmax(z); err == nil || !strings.Contains(err.Error(), "token "+strconv.Itoa(at)+" is") {
					t.Fatalf("%v: %v", z, err)
				}
			}
		}
	}
}

func TestSamplerVocabGrowth(t *testing.T) {
	s := sampleMust(t, SamplerOptions{Temperature: 1, TopP: 0.9}, "grow")
	ref := sampleMust(t, SamplerOptions{Temperature: 1, TopP: 0.9}, "grow")
	r := rand.New(rand.NewPCG(19, 20))
	for _, n := range []int{8, 3, 500, 40, 2000} {
		z := sampleRandLogits(r, n, 2, false)
		a, err := s.Sample(slices.Clone(z), nil)
		if err != nil || a < 0 || a >= n {
			t.Fatalf("vocab %d: %d, %v", n, a, err)
		}
		if b, _ := ref.Sample(slices.Clone(z), nil); a != b {
			t.Fatalf("vocab %d: growth changed the stream (%d vs %d)", n, a, b)
		}
	}
}
