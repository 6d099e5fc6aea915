package lwebreak

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"gelo/keystream"
	"gelo/lwe"
)

// Setup is one engine start of the lwe level as the harness builds it: the
// public matrix A from a public seed, public int8 weights (the encoder's
// step depends on their largest row norm), and the TEE's pad generator
// under a session key. The level is not wired into the compiler yet, so the
// ciphertexts the attacks read come from here, made by the lwe package's
// own PadGen and Encoder: exactly the words a device would be sent.
type Setup struct {
	P    lwe.Params
	In   int // d_in: the samples per row (words per ciphertext)
	A    *lwe.Public
	W    *lwe.Weights
	Enc  *lwe.Encoder
	Gen  *lwe.PadGen
	key  []byte
	name string
	next uint64 // the next fresh pad counter
}

// setupOut is the d_out of the harness's public weights: only their
// largest row norm matters (it sets the step), not their count.
const setupOut = 16

// NewSetup builds a setup of parameters p at width in. seed fixes the
// public matrix and weights; key is the TEE's secret (the attacks never
// read it: Secret, the truth they are scored against, does).
func NewSetup(p lwe.Params, in int, seed uint64, key []byte) (*Setup, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if in < 1 {
		return nil, fmt.Errorf("lwebreak: setup: d_in %d", in)
	}
	var aseed [lwe.SeedSize]byte
	binary.LittleEndian.PutUint64(aseed[:], seed)
	copy(aseed[8:], "gelo-lwebreak-A")
	a, err := lwe.NewPublic(aseed, in, p.Lambda)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x77))
	wf := make([]float32, setupOut*in)
	for i := range wf {
		wf[i] = float32(rng.NormFloat64())
	}
	w, err := lwe.Quantize(wf, setupOut, in)
	if err != nil {
		return nil, err
	}
	enc, err := lwe.NewEncoder(p, w)
	if err != nil {
		return nil, err
	}
	const name = "harness.qkv"
	gen, err := lwe.NewPadGen(p, a, nil, key, name)
	if err != nil {
		return nil, err
	}
	return &Setup{P: p, In: in, A: a, W: w, Enc: enc, Gen: gen, key: append([]byte(nil), key...), name: name}, nil
}

// Ciphertext is one encoded row: the words that cross (C), the counter of
// its pad, and the row's quantization (public to whoever knows the row).
type Ciphertext struct {
	C       []uint32
	Counter uint64
	Row     lwe.Row
}

// Encrypt encodes x under the next fresh pad, as the TEE does.
func (st *Setup) Encrypt(x []float32) (Ciphertext, error) {
	n := st.next
	st.next++
	return st.encryptAt(x, n)
}

// EncryptReused encodes x under the pad of counter n again: the test-only
// reuse the level forbids (the lwe package refuses to encode twice with
// one Pad, so the harness refills the same counter, which PadGen's doc
// names a reused pad). It is how the difference attack's broken case is
// made; nothing in the level can reach it.
func (st *Setup) EncryptReused(x []float32, n uint64) (Ciphertext, error) {
	return st.encryptAt(x, n)
}

func (st *Setup) encryptAt(x []float32, n uint64) (Ciphertext, error) {
	pad := st.Gen.New()
	if err := st.Gen.Fill(n, pad); err != nil {
		return Ciphertext{}, err
	}
	c := make([]uint32, st.In)
	r, err := st.Enc.Encode(x, pad, c)
	if err != nil {
		return Ciphertext{}, fmt.Errorf("lwebreak: encrypt row (pad %d): %w", n, err)
	}
	return Ciphertext{C: c, Counter: n, Row: r}, nil
}

// Quantize is x_q as the public encoder computes it from x (the step from
// |x|_2 summed in float64 in order, then roundHalfEven(x / step)): what an
// attacker who knows a row's plaintext (a public BOS row) subtracts. It
// mirrors lwe.Encoder.Encode; TestKnownPlaintextMatchesEncode checks that
// the two agree word for word.
func Quantize(enc *lwe.Encoder, x []float32) []int64 {
	var n2 float64
	for _, v := range x {
		n2 += float64(v) * float64(v)
	}
	step := enc.Step(math.Sqrt(n2))
	var inv float64
	if step != 0 {
		inv = 1 / step
	}
	q := make([]int64, len(x))
	for i, v := range x {
		q[i] = int64(math.RoundToEven(float64(v) * inv))
	}
	return q
}

// KnownPlaintext turns the ciphertext of a row the attacker knows into
// plain LWE samples: b = c - Delta x_q = A s + e mod 2^32.
func KnownPlaintext(enc *lwe.Encoder, c []uint32, x []float32) ([]uint32, error) {
	if len(c) != len(x) {
		return nil, fmt.Errorf("lwebreak: known plaintext: %d words for a row of %d", len(c), len(x))
	}
	xq := Quantize(enc, x)
	b := make([]uint32, len(c))
	for i := range c {
		b[i] = c[i] - enc.Delta*uint32(xq[i])
	}
	return b, nil
}

// Secret regenerates the s and e of pad n from the key, by the derivation
// lwe.PadGen documents (HKDF-SHA256 of the key with lwe.PadSalt and info
// "pad" || uint64_be(n) || name; h words for Floyd's sampler, ceil(h/64)
// sign words, ceil(d_in/16) words of CBD(2) nibbles). It is the truth the
// attacks are scored against, never an input to them. Reimplemented from
// the documentation rather than reached into: TestSecretMatchesPad checks
// that A s + e equals the pad's m.
func (st *Setup) Secret(n uint64) (s []int8, e []int8, err error) {
	var kdf keystream.KDF
	var ks keystream.Stream
	defer kdf.Forget()
	defer ks.Wipe()
	info := binary.BigEndian.AppendUint64([]byte("pad"), n)
	info = append(info, st.name...)
	if err := kdf.Key(&ks, st.key, lwe.PadSalt, info); err != nil {
		return nil, nil, fmt.Errorf("lwebreak: secret %d: %w", n, err)
	}
	lambda, h := st.P.Lambda, st.P.H
	idx := make([]int, h)
	for k := range h {
		j := uint64(lambda - h + k)
		t, _ := bits.Mul64(ks.Uint64(), j+1)
		for _, v := range idx[:k] {
			if uint64(v) == t {
				t = j
				break
			}
		}
		idx[k] = int(t)
	}
	s = make([]int8, lambda)
	var w uint64
	for k, c := range idx {
		if k%64 == 0 {
			w = ks.Uint64()
		}
		s[c] = 1 - 2*int8(w>>(k%64)&1)
	}
	e = make([]int8, st.In)
	for i := range e {
		if i%16 == 0 {
			w = ks.Uint64()
		}
		nib := w >> (4 * (i % 16))
		e[i] = int8(nib&1+nib>>1&1) - int8(nib>>2&1+nib>>3&1)
	}
	return s, e, nil
}

// Residual returns centre(b - A s) mod 2^32 for a candidate s: the error a
// correct s leaves (every entry in [-2, 2] for CBD(2)).
func Residual(a *lwe.Public, b []uint32, s []int8) ([]int32, error) {
	if len(b) != a.In || len(s) != a.Lambda {
		return nil, fmt.Errorf("lwebreak: residual: %d samples and %d secret entries for A [%d, %d]", len(b), len(s), a.In, a.Lambda)
	}
	r := append([]uint32(nil), b...)
	for k, v := range s {
		if v == 0 {
			continue
		}
		col := a.Col(k)
		sv := uint32(int32(v))
		for i := range r {
			r[i] -= sv * col[i]
		}
	}
	out := make([]int32, len(r))
	for i, v := range r {
		out[i] = int32(v)
	}
	return out, nil
}

// errBound is the largest |e_i| of CBD(2).
const errBound = 2

// Solves reports whether s is a solution of the samples b: ternary, with
// b - A s inside CBD(2)'s range in every sample. With d_in samples well
// above lambda's worth of entropy, only the true s passes (a wrong s leaves
// a uniform residual, inside [-2, 2] with probability 5 / 2^32 a sample).
func Solves(a *lwe.Public, b []uint32, s []int8) bool {
	for _, v := range s {
		if v < -1 || v > 1 {
			return false
		}
	}
	r, err := Residual(a, b, s)
	if err != nil {
		return false
	}
	for _, v := range r {
		if v < -errBound || v > errBound {
			return false
		}
	}
	return true
}

// errNotFound is an attack's "no solution found" (not a failure to run).
var errNotFound = errors.New("no secret found")
