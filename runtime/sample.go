package runtime

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"gelo/keystream"
)

// SamplerOptions configure a Sampler. The zero value is valid and means
// greedy decoding with no penalties.
type SamplerOptions struct {
	// Temperature divides the logits; 0 means greedy (Argmax on the
	// penalised logits, no randomness drawn). Must be finite and >= 0.
	Temperature float64
	// TopK keeps the K most likely tokens; 0 = off. Must be >= 0.
	TopK int
	// TopP keeps the smallest most-likely set whose probability is >= TopP
	// (nucleus); 0 = off (as is 1). Otherwise must be in (0, 1].
	TopP float64
	// MinP keeps tokens whose probability is >= MinP times that of the
	// most likely token; 0 = off. Must be in [0, 1).
	MinP float64
	// RepetitionPenalty (HF / CTRL semantics) divides positive logits and
	// multiplies negative ones of every token in the history, once per
	// distinct token; 1 = off, and 0 is taken as 1. Must be > 0.
	RepetitionPenalty float64
	// FrequencyPenalty and PresencePenalty (OpenAI semantics) subtract
	// FrequencyPenalty*count + PresencePenalty*(count > 0) from the logit
	// of every token seen count times in the history; 0 = off. Finite.
	FrequencyPenalty float64
	PresencePenalty  float64
}

// Validate reports every invalid option, each error naming the option.
func (o SamplerOptions) Validate() error {
	var errs []error
	finite := func(name string, x float64) bool {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			errs = append(errs, fmt.Errorf("sampler: %s %v must be a finite number", name, x))
			return false
		}
		return true
	}
	if finite("temperature", o.Temperature) && o.Temperature < 0 {
		errs = append(errs, fmt.Errorf("sampler: temperature %v must be >= 0 (0 = greedy)", o.Temperature))
	}
	if o.TopK < 0 {
		errs = append(errs, fmt.Errorf("sampler: top-k %d must be >= 0 (0 = off)", o.TopK))
	}
	if finite("top-p", o.TopP) && (o.TopP < 0 || o.TopP > 1) {
		errs = append(errs, fmt.Errorf("sampler: top-p %v must be in (0, 1] (0 = off)", o.TopP))
	}
	if finite("min-p", o.MinP) && (o.MinP < 0 || o.MinP >= 1) {
		errs = append(errs, fmt.Errorf("sampler: min-p %v must be in [0, 1) (0 = off)", o.MinP))
	}
	if finite("repetition penalty", o.RepetitionPenalty) && o.RepetitionPenalty < 0 {
		errs = append(errs, fmt.Errorf("sampler: repetition penalty %v must be > 0 (1 = off; 0 is taken as 1)", o.RepetitionPenalty))
	}
	finite("frequency penalty", o.FrequencyPenalty)
	finite("presence penalty", o.PresencePenalty)
	return errors.Join(errs...)
}

// SeedKey maps a CLI --seed to a sampler key (its 8 big-endian bytes).
// Such a key is for reproducible runs only: it is guessable, so
// production sampling should use a fresh 32-byte random key.
func SeedKey(seed uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, seed)
}

// Sampler picks the next token from a logits vector inside the TEE.
//
// Processing order (Hugging Face's: processors, then temperature, top-k,
// top-p, min-p; llama.cpp's default chain applies the same penalties
// first too but temperature last, so its top-p and min-p see the
// untempered distribution):
//
//  1. repetition penalty over the distinct tokens of the history
//     (logit > 0: logit / penalty; otherwise: logit * penalty);
//  2. frequency and presence penalties
//     (logit -= frequency*count + presence*(count > 0));
//     1 and 2 are computed for each penalised token in float64 from the
//     float32 logit and rounded once back to float32, in place;
//  3. temperature: 0 returns Argmax of the penalised logits (ties to the
//     lowest id) and draws nothing; otherwise logits are divided by it;
//  4. top-k, 5. top-p (on the top-k-renormalised distribution), 6. min-p;
//  7. one uniform draw u in [0, 1) (53 bits of the ChaCha20 stream) picks
//     the token by inverting the cumulative distribution of the surviving
//     tokens taken in a fixed order: logit descending, ties by token id
//     ascending. Probabilities are exp((z - zmax)/T) in float64 (softmax
//     with max subtraction; the normalisation is folded into u), with the
//     sampler's own exp (sampleExpNeg), which unlike math.Exp gives the same
//     bits on every CPU.
//
// Every non-greedy Sample consumes exactly one 64-bit draw, so the same
// key, options and inputs give the same tokens, bit for bit.
//
// Speed: the vocabulary is never fully sorted unless the distribution
// forces it. Top-k selects with a size-k heap (O(V log k)) and sorts the
// k survivors. Without top-k, tokens are bucketed by log-probability
// (1/32-nat buckets relative to the max) in one pass that also sums the
// bucket masses; top-p and the draw then locate their bucket from those
// sums and sort only that bucket (at most two sorts of one bucket each).
// Logits so flat that one bucket holds most of the vocabulary degrade to
// sorting those candidates (the "sort above a threshold" case).
//
// Scratch is sized to the vocabulary on first use and reused, so a warm
// Sample allocates nothing. A Sampler is not safe for concurrent use.
type Sampler struct {
	opt  SamplerOptions
	rng  keystream.Stream
	dead bool

	bk   []uint16     // per-token bucket (bucket path)
	cand []sampleCand // heap / gathered candidates
	cw   []float64    // weights of cand
	cnt  []int32      // history counts; all zero between calls

	mass [sampleBuckets]float64 // bucket masses; zero beyond nb
	nb   int
}

// sampleCand is a candidate token: its (penalised) logit and id.
type sampleCand struct {
	z  float32
	id int32
}

// Buckets of the no-top-k path: bucket b holds the tokens whose
// d = (zmax - z)/T lies in [b/32, (b+1)/32); the last regular bucket
// holds every d >= 63.94 (probability ratio < 2e-28); sampleBucketOut marks
// tokens with zero weight or cut by min-p. At 1/32 nat a bucket holds
// about 1% of a Gaussian bulk of logits whose spread is 1 nat.
const (
	sampleBuckets     = 2047
	sampleBucketScale = 32
	sampleBucketOut   = 0xFFFF
)

// NewSampler validates opt and keys the sampler's stream with key (any
// length; HKDF-SHA256 derives the ChaCha20 key). The key may be empty
// only for greedy sampling, which draws nothing.
func NewSampler(opt SamplerOptions, key []byte) (*Sampler, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if opt.RepetitionPenalty == 0 {
		opt.RepetitionPenalty = 1
	}
	s := &Sampler{opt: opt}
	if err := s.Reset(key); err != nil {
		return nil, err
	}
	return s, nil
}

// Options returns the options in force (RepetitionPenalty 0 shown as 1).
func (s *Sampler) Options() SamplerOptions { return s.opt }

// Reset rekeys the stream (restarting it from the beginning) and revives a
// zeroised sampler, keeping the options and any scratch.
func (s *Sampler) Reset(key []byte) error {
	if s == nil {
		return errors.New("sampler: nil sampler")
	}
	if len(key) == 0 {
		s.rng.Wipe()
		if s.opt.Temperature != 0 {
			return fmt.Errorf("sampler: temperature %v needs a non-empty key", s.opt.Temperature)
		}
	} else if err := keySampleStream(&s.rng, key); err != nil {
		return err
	}
	s.dead = false
	return nil
}

// Zeroise wipes the key stream and all scratch (which holds logit-derived
// data) and releases the scratch; the sampler refuses to sample until
// Reset.
func (s *Sampler) Zeroise() {
	if s == nil {
		return
	}
	s.rng.Wipe()
	s.wipeScratch()
	s.dead = true
}

// wipeScratch clears and drops the logit-derived scratch.
func (s *Sampler) wipeScratch() {
	clear(s.bk[:cap(s.bk)])
	clear(s.cand[:cap(s.cand)])
	clear(s.cw[:cap(s.cw)])
	clear(s.cnt[:cap(s.cnt)])
	s.bk, s.cand, s.cw, s.cnt = nil, nil, nil, nil
	clear(s.mass[:])
	s.nb = 0
}

// Sample returns the next token for logits (one row, the vocabulary
// wide) given the history of tokens to penalise (the caller chooses the
// window: HF uses the whole sequence, llama.cpp the last 64 tokens).
//
// Sample consumes logits: it applies the penalties in place and, on
// every return, success or error, zeroises the slice, since logits are
// secret. Bad input (empty logits, a NaN or +Inf logit, all logits -Inf,
// a history id outside the vocabulary) gives an error, never a panic.
func (s *Sampler) Sample(logits []float32, history []int) (int, error) {
	defer clear(logits)
	if s == nil {
		return 0, errors.New("sampler: nil sampler")
	}
	if s.dead {
		return 0, errors.New("sampler: used after Zeroise (Reset it with a key)")
	}
	best, err := s.prepare(logits, history)
	if err != nil {
		return 0, err
	}
	if s.opt.Temperature == 0 {
		return best, nil
	}
	return s.pick(logits, best, s.rng.Float64()), nil
}

// prepare sizes the scratch, applies the penalties and returns the argmax
// of the penalised logits, checking them.
func (s *Sampler) prepare(logits []float32, history []int) (int, error) {
	n := len(logits)
	if n == 0 {
		return 0, errors.New("sampler: empty logits")
	}
	if n > math.MaxInt32 || len(history) > math.MaxInt32 {
		return 0, fmt.Errorf("sampler: %d logits / %d history tokens exceed the 2^31 limit", n, len(history))
	}
	s.grow(n)
	if err := s.penalise(logits, history); err != nil {
		return 0, err
	}
	return sampleArgmax(logits)
}

func (s *Sampler) grow(n int) {
	if cap(s.bk) < n {
		s.wipeScratch() // the old scratch holds logit-derived data
		s.bk = make([]uint16, n)
		s.cand = make([]sampleCand, 0, n)
		s.cw = make([]float64, n)
		s.cnt = make([]int32, n)
	}
	s.bk, s.cw, s.cnt = s.bk[:n], s.cw[:n], s.cnt[:n]
}

// penalise applies the repetition, frequency and presence penalties in
// place: for each distinct token t of history, seen c times,
//
//	x := float64(logits[t]); if x > 0 { x /= rep } else { x *= rep }
//	x -= freq*c + presence; logits[t] = float32(x)
func (s *Sampler) penalise(logits []float32, history []int) error {
	rep, freq, pres := s.opt.RepetitionPenalty, s.opt.FrequencyPenalty, s.opt.PresencePenalty
	if len(history) == 0 || (rep == 1 && freq == 0 && pres == 0) {
		return nil
	}
	n := len(logits)
	s.grow(n)
	for i, t := range history {
		if t < 0 || t >= n {
			return fmt.Errorf("sampler: history token %d at index %d is outside the vocabulary [0, %d)", t, i, n)
		}
	}
	cnt := s.cnt[:n]
	for _, t := range history {
		cnt[t]++
	}
	for _, t := range history {
		c := cnt[t]
		if c == 0 {
			continue // already penalised
		}
		cnt[t] = 0
		x := float64(logits[t])
		if x > 0 {
			x /= rep
		} else {
			x *= rep
		}
		x -= float64(freq*float64(c)) + pres // explicit rounding: never fused
		logits[t] = float32(x)
	}
	return nil
}

// sampleArgmax is Argmax (the first index of the maximum) that also
// refuses NaN and +Inf logits and an all -Inf row. It finds the maximum
// over four independent lanes, then its first index.
func sampleArgmax(z []float32) (int, error) {
	m0, m1, m2, m3 := z[0], z[0], z[0], z[0]
	nan := false
	i := 0
	for ; i+4 <= len(z); i += 4 {
		a, b, c, d := z[i], z[i+1], z[i+2], z[i+3]
		if a > m0 {
			m0 = a
		}
		if b > m1 {
			m1 = b
		}
		if c > m2 {
			m2 = c
		}
		if d > m3 {
			m3 = d
		}
		if a != a || b != b || c != c || d != d {
			nan = true
		}
	}
	for ; i < len(z); i++ {
		if z[i] > m0 {
			m0 = z[i]
		}
		if z[i] != z[i] {
			nan = true
		}
	}
	m := max(m0, m1, m2, m3)
	if nan || m > math.MaxFloat32 {
		for i, v := range z {
			if !(v <= math.MaxFloat32) {
				return 0, fmt.Errorf("sampler: logit of token %d is %v (after penalties)", i, v)
			}
		}
	}
	if math.IsInf(float64(m), -1) {
		return 0, errors.New("sampler: every logit is -Inf")
	}
	for i, v := range z {
		if v == m { // -0 == +0: ties, as in Argmax
			return i, nil
		}
	}
	return 0, nil // unreachable: m is one of z
}

// pick is the non-greedy selection for a uniform u in [0, 1); best is the
// argmax of z.
func (s *Sampler) pick(z []float32, best int, u float64) int {
	invT := 1 / s.opt.Temperature
	if math.IsInf(invT, 1) {
		invT = math.MaxFloat64 // subnormal temperature; keeps 0 * invT = 0
	}
	if k := s.opt.TopK; k > 0 && k < len(z) {
		return s.pickTopK(z, k, invT, u)
	}
	return s.pickBuckets(z, best, invT, u)
}

// sampleCmp orders candidates by logit descending, then id ascending.
func sampleCmp(a, b sampleCand) int {
	if a.z > b.z {
		return -1
	}
	if a.z < b.z {
		return 1
	}
	return cmp.Compare(a.id, b.id)
}

// sampleWorse reports whether a ranks after b in the sampling order.
func sampleWorse(a, b sampleCand) bool {
	return a.z < b.z || (a.z == b.z && a.id > b.id)
}

// sampleSiftDown restores the min-heap (worst candidate at the root) below i.
func sampleSiftDown(h []sampleCand, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && sampleWorse(h[r], h[l]) {
			m = r
		}
		if !sampleWorse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// pickTopK keeps the k best candidates with a heap, sorts them and
// applies top-p and min-p on the sorted list.
func (s *Sampler) pickTopK(z []float32, k int, invT, u float64) int {
	h := s.cand[:k]
	for i := range k {
		h[i] = sampleCand{z[i], int32(i)}
	}
	for i := k/2 - 1; i >= 0; i-- {
		sampleSiftDown(h, i)
	}
	for i := k; i < len(z); i++ {
		// A later token with an equal logit has a larger id, so it never
		// beats the root: a strict comparison suffices.
		if v := z[i]; v > h[0].z {
			h[0] = sampleCand{v, int32(i)}
			sampleSiftDown(h, 0)
		}
	}
	slices.SortFunc(h, sampleCmp)
	cw := s.cw[:k]
	zm := float64(h[0].z)
	W := 0.0
	for j, c := range h {
		cw[j] = sampleExpNeg(sampleDist(zm, c.z, invT))
		W += cw[j]
	}
	n := k
	if p := s.opt.TopP; p > 0 && p < 1 {
		need, cum := p*W, 0.0
		for j, w := range cw {
			cum += w
			if cum >= need {
				n = j + 1
				break
			}
		}
	}
	if mp := s.opt.MinP; mp > 0 {
		for j, w := range cw[:n] {
			if w < mp { // cw[0] = 1 > mp, so n stays >= 1
				n = j
				break
			}
		}
	}
	S := 0.0
	for _, w := range cw[:n] {
		S += w
	}
	return sampleWalk(h[:n], cw[:n], 0, u*S)
}

// sampleWalk returns the first candidate at which cum plus the running weight
// exceeds target; rounding past the end gives the last candidate of
// positive weight.
func sampleWalk(c []sampleCand, cw []float64, cum, target float64) int {
	last := 0
	for j, w := range cw {
		if w == 0 {
			continue
		}
		cum += w
		last = j
		if cum > target {
			return int(c[j].id)
		}
	}
	return int(c[last].id)
}

// sampleDist is the log-probability gap (zmax - z)/T of a logit; the bucket
// pass and gather compute it, and so its weight sampleExpNeg(dist), alike.
func sampleDist(zm float64, z float32, invT float64) float64 {
	return (zm - float64(z)) * invT
}

// pickBuckets samples without top-k: one pass computes every weight and
// bucket mass, then top-p and the draw each locate their bucket from the
// masses and sort only that bucket. A bucket is non-empty iff its mass is
// positive (only tokens of positive weight are bucketed).
func (s *Sampler) pickBuckets(z []float32, best int, invT, u float64) int {
	zm := float64(z[best])
	mp := s.opt.MinP
	clear(s.mass[:s.nb]) // only the buckets the last call used are dirty
	mass, bk := s.mass[:], s.bk[:len(z)]
	nb := 0    // 1 + the highest bucket used
	out := 0.0 // mass cut by min-p (still counted by top-p, which precedes it)
	const maxD = float64(sampleBuckets-1) / sampleBucketScale
	for i, v := range z {
		d := sampleDist(zm, v, invT)
		e := sampleExpNeg(d)
		if e < mp || e == 0 {
			bk[i] = sampleBucketOut
			out += e
			continue
		}
		b := sampleBuckets - 1
		if d < maxD {
			b = int(d * sampleBucketScale)
		}
		bk[i] = uint16(b)
		mass[b] += e
		nb = max(nb, b+1)
	}
	s.nb = nb
	mass = mass[:nb]

	// Top-p: the bucket bp where the cumulative mass reaches p*W, and the
	// cut inside it (c[:cut] survives).
	var c []sampleCand
	var cw []float64
	bp, cut, S := nb, 0, 0.0
	if p := s.opt.TopP; p > 0 && p < 1 {
		W := 0.0
		for _, m := range mass {
			W += m
		}
		W += out
		need, cum := p*W, 0.0
		for b, m := range mass {
			if m > 0 && cum+m >= need {
				bp = b
				break
			}
			cum += m
		}
		if bp < nb {
			c, cw = s.gather(z, bp, zm, invT)
			part := 0.0
			cut = len(c)
			for j, x := range cw {
				part += x
				if cum+part >= need {
					cut = j + 1
					break
				}
			}
			S = cum + part
		}
	}
	if bp == nb { // no cut inside the min-p survivors
		for _, m := range mass {
			S += m
		}
	}

	target, cum := u*S, 0.0
	for b, m := range mass[:bp] {
		if m > 0 && cum+m > target {
			c, cw = s.gather(z, b, zm, invT)
			return sampleWalk(c, cw, cum, target)
		}
		cum += m
	}
	if bp < nb {
		return sampleWalk(c[:cut], cw[:cut], cum, target)
	}
	// u*S rounded onto S: the last survivor, in the last bucket used.
	c, _ = s.gather(z, nb-1, zm, invT)
	return int(c[len(c)-1].id)
}

// gather collects the tokens of bucket b, sorted, with their weights.
func (s *Sampler) gather(z []float32, b int, zm, invT float64) ([]sampleCand, []float64) {
	c := s.cand[:0]
	want := uint16(b)
	for i, x := range s.bk[:len(z)] {
		if x == want {
			c = append(c, sampleCand{z[i], int32(i)})
		}
	}
	slices.SortFunc(c, sampleCmp)
	cw := s.cw[:len(c)]
	for j, x := range c {
		cw[j] = sampleExpNeg(sampleDist(zm, x.z, invT))
	}
	return c, cw
}
