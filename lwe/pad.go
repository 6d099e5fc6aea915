package lwe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"gelo/keystream"
)

// PadSalt is the HKDF-SHA256 salt that separates pad material from every
// other use of the session key.
const PadSalt = "gelo/lwe-pad/v1"

// ErrPadUsed is returned when a pad's m or u is not fresh: used already,
// wiped, or never filled by a PadGen.
var ErrPadUsed = errors.New("lwe: pad not fresh (a pad is single-use and made by PadGen.Fill)")

// Pad is the data-independent part of one row's ciphertext: M = A s + e
// (d_in words) and, for each hint the ciphertext feeds, U[i] = H_i s
// (d_out_i words). Only PadGen.Fill makes a pad fresh; Encode consumes M
// and Decode each U[i], wiping it; Wipe clears all. A Pad not filled by a
// PadGen (a zero M would send Delta x_q in the clear) is refused. The
// secret s and e themselves are not kept.
type Pad struct {
	Counter uint64
	M       []uint32
	U       [][]uint32
	mFresh  bool
	uFresh  []bool
	err     error // set by a Pool worker whose fill failed
	out     bool  // handed out by a Pool and not given back
}

// newPad allocates a pad for width in and the hints' widths.
func newPad(in int, hints []*Hint) *Pad {
	p := &Pad{M: make([]uint32, in), U: make([][]uint32, len(hints)), uFresh: make([]bool, len(hints))}
	for i, h := range hints {
		p.U[i] = make([]uint32, h.Out)
	}
	return p
}

// Wipe zeroes M and every U and marks them used.
func (p *Pad) Wipe() {
	clear(p.M)
	p.mFresh = false
	for i := range p.U {
		clear(p.U[i])
	}
	clear(p.uFresh)
}

// freshU reports whether U[i] was filled and not used yet.
func (p *Pad) freshU(i int) bool { return i >= 0 && i < len(p.uFresh) && p.uFresh[i] }

// Bytes is the memory one pad holds.
func (p *Pad) Bytes() int {
	n := len(p.M)
	for _, u := range p.U {
		n += len(u)
	}
	return 4 * n
}

// PadGen makes pads for one ciphertext kind: inputs of width d_in under the
// public matrix A, feeding the listed hints (q, k and v share one pad, gate
// and up another). The pad of counter n depends only on (key, name, n):
// its stream is ChaCha20 keyed by
//
//	HKDF-SHA256(secret = key, salt = PadSalt,
//	            info = "pad" || uint64_be(n) || name),
//
// so two generators of one key must differ in name (the ciphertext kind,
// e.g. "layers.3.qkv") or never share a counter: the same (name, n) is the
// same s and e, a reused pad.
//
// read as little-endian 64-bit words in this order: h words for the
// positions of s (Floyd's sampler), ceil(h / 64) words for the signs (bit
// i of word i / 64, set = -1), ceil(d_in / 16) words for e (4 bits an
// entry, low bits first). A PadGen is not safe for concurrent use; a Pool
// gives each worker its own.
type PadGen struct {
	p     Params
	a     *Public
	hints []*Hint
	key   []byte
	name  string
	d     drawer   // Fill's stream (and FillBatch's first worker's)
	idx   []int32  // support of s
	sgn   []uint32 // 0 (+1) or 0xffffffff (-1) per support entry
	batch batchScratch
}

// drawer is one stream of pad secrets: the KDF (its cache of the key),
// the stream it keys per counter and the info it keys it with. Fill uses
// one; FillBatch one per worker, each counter's stream being independent.
type drawer struct {
	kdf  keystream.KDF
	s    keystream.Stream
	info []byte // "pad" || uint64_be(n) || name
}

func newDrawer(name string) *drawer {
	return &drawer{info: append(append([]byte("pad"), make([]byte, 8)...), name...)}
}

// forget wipes the stream and the KDF's cache of the key.
func (d *drawer) forget() {
	d.s.Wipe()
	d.kdf.Forget()
}

// NewPadGen checks that A and the hints agree with p and keeps a copy of
// key (wiped by Forget). name separates this generator's pads from every
// other generator's under the same key.
func NewPadGen(p Params, a *Public, hints []*Hint, key []byte, name string) (*PadGen, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(key) == 0 {
		return nil, errors.New("lwe: pad generator: empty key")
	}
	if a.Lambda != p.Lambda {
		return nil, fmt.Errorf("lwe: pad generator: A has %d columns, lambda is %d", a.Lambda, p.Lambda)
	}
	for i, h := range hints {
		if h.Lambda != p.Lambda {
			return nil, fmt.Errorf("lwe: pad generator: hint %d has %d columns, lambda is %d", i, h.Lambda, p.Lambda)
		}
	}
	g := &PadGen{p: p, a: a, hints: hints, key: append([]byte(nil), key...), name: name,
		idx: make([]int32, p.H), sgn: make([]uint32, p.H)}
	g.d = *newDrawer(name)
	return g, nil
}

// New allocates a pad of the generator's shape (not filled).
func (g *PadGen) New() *Pad { return newPad(g.a.In, g.hints) }

// Fill writes the pad of counter n into p (from New), marking it unused.
// Cost: h column additions of A (d_in h) and of each hint (d_out h).
func (g *PadGen) Fill(n uint64, p *Pad) error {
	if !g.fits(p) {
		return fmt.Errorf("lwe: pad %d: shape does not match its generator", n)
	}
	defer g.wipeSecret()
	if err := g.draw(n, p.M); err != nil {
		return err
	}
	g.a.t.addColumns(p.M, g.idx, g.sgn)
	for i, h := range g.hints {
		clear(p.U[i])
		h.t.addColumns(p.U[i], g.idx, g.sgn)
		p.uFresh[i] = true
	}
	p.Counter, p.mFresh, p.err = n, true, nil
	return nil
}

// fits reports whether p has the shape of g's pads (New's).
func (g *PadGen) fits(p *Pad) bool {
	if p == nil || len(p.M) != g.a.In || len(p.U) != len(g.hints) || len(p.uFresh) != len(g.hints) {
		return false
	}
	for i, h := range g.hints {
		if len(p.U[i]) != h.Out {
			return false
		}
	}
	return true
}

// draw keys g's stream for counter n, draws s (into g.idx, g.sgn) and
// writes e into m.
func (g *PadGen) draw(n uint64, m []uint32) error {
	return g.d.draw(g.key, g.p.Lambda, n, g.idx, g.sgn, m)
}

// draw keys d's stream for counter n under key, draws s (len(idx) = h
// positions in [0, lambda) into idx, their signs into sgn) and writes e
// into m, in the stream order PadGen documents.
func (d *drawer) draw(key []byte, lambda int, n uint64, idx []int32, sgn, m []uint32) error {
	binary.BigEndian.PutUint64(d.info[3:11], n)
	if err := d.kdf.Key(&d.s, key, PadSalt, d.info); err != nil {
		return fmt.Errorf("lwe: pad %d: %w", n, err)
	}
	sampleSupport(&d.s, lambda, idx)
	for k := range sgn {
		if k%64 == 0 {
			w := d.s.Uint64()
			for b := k; b < min(k+64, len(sgn)); b++ {
				sgn[b] = -uint32(w >> (b - k) & 1)
			}
		}
	}
	sampleCBD2(&d.s, m)
	return nil
}

// sampleSupport writes h = len(idx) distinct positions in [0, lambda),
// uniform over the h-subsets, with Floyd's algorithm: for j = lambda - h
// .. lambda - 1, draw t uniform in [0, j]; take t, or j if t is taken
// already. No rejection and no memory beyond idx. The draw is
// (w * (j + 1)) >> 64 for a 64-bit word w: biased by at most
// (j + 1) / 2^64 per draw (statistical distance under h lambda 2^-64, about
// 2^-45 at lambda 4096, h 80). The membership test scans all of idx
// without a branch on the secret.
func sampleSupport(s *keystream.Stream, lambda int, idx []int32) {
	h := len(idx)
	for n := 0; n < h; n++ {
		j := uint64(lambda - h + n)
		t, _ := bits.Mul64(s.Uint64(), j+1)
		var hit uint32
		for _, v := range idx[:n] {
			hit |= eq32(uint32(v), uint32(t))
		}
		// hit is 0 or 1: choose j when set, t otherwise.
		msk := -hit
		idx[n] = int32(uint32(t)&^msk | uint32(j)&msk)
	}
}

// eq32 is 1 when a == b, else 0, without a branch.
func eq32(a, b uint32) uint32 {
	x := a ^ b
	return uint32((uint64(x) - 1) >> 63)
}

// sampleCBD2 writes e_i = (b0 + b1) - (b2 + b3) for four fresh bits per
// entry (16 entries a word), as a word mod 2^32. CBD(2) takes -2..2 with
// probabilities 1, 4, 6, 4, 1 / 16: mean 0, variance 1, and P(e odd) =
// 8/16 exactly, so the parity of c's words carries no bias (a ternary
// error, odd with probability 2/3, would show in the low bit).
func sampleCBD2(s *keystream.Stream, e []uint32) {
	var w uint64
	for i := range e {
		if i%16 == 0 {
			w = s.Uint64()
		}
		nib := w >> (4 * (i % 16))
		e[i] = uint32(int32(nib&1+nib>>1&1) - int32(nib>>2&1+nib>>3&1))
	}
}

// colBlock is the slice of dst that addColumns keeps in L1 (4 KiB) while
// it adds the h columns' matching slices.
const colBlock = 1024

// addColumns sets dst += sum_k sgn_k col_{idx_k}, the columns being the
// len(dst)-word rows of t: all h columns over one block of dst at a time
// (addColumnsAt: four a pass), so dst is loaded and stored h / 4 times and
// stays in L1 while each column is read once.
func addColumns(dst, t []uint32, idx []int32, sgn []uint32) {
	n := len(dst)
	for i0 := 0; i0 < n; i0 += colBlock {
		addColumnsAt(dst[i0:min(n, i0+colBlock)], t, i0, n, idx, sgn)
	}
}

// wipeSecret clears s's support, signs and the stream.
func (g *PadGen) wipeSecret() {
	clear(g.idx)
	clear(g.sgn)
	g.d.s.Wipe()
}

// Forget wipes everything g keeps of the key (FillBatch's worker streams
// included); g is unusable afterwards.
func (g *PadGen) Forget() {
	g.wipeSecret()
	g.d.forget()
	g.wipeBatch()
	for _, d := range g.batch.drawers {
		d.forget()
	}
	clear(g.key)
	g.key = nil
}

// Params are the generator's lattice parameters.
func (g *PadGen) Params() Params { return g.p }
