package lwe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"gelo/keystream"
)

// Params are the lattice parameters of one plan.
type Params struct {
	Lambda int    // LWE dimension: columns of A, length of s
	H      int    // nonzeros of s (its Hamming weight)
	Delta  uint32 // plaintext scale: c = A s + e + Delta x_q
}

// Default is the starting point (q = 2^32 always). Its security is
// estimated elsewhere, not here.
var Default = Params{Lambda: 4096, H: 80, Delta: 16}

// Validate checks that p describes a scheme this package can run.
func (p Params) Validate() error {
	switch {
	case p.Lambda <= 0 || p.Lambda > 1<<24:
		return fmt.Errorf("lwe: params: lambda %d not in [1, 2^24]", p.Lambda)
	case p.H <= 0 || p.H > p.Lambda:
		return fmt.Errorf("lwe: params: h %d not in [1, lambda = %d]", p.H, p.Lambda)
	case p.Delta == 0 || p.Delta > 1<<16:
		return fmt.Errorf("lwe: params: delta %d not in [1, 2^16]", p.Delta)
	}
	return nil
}

// SeedSize is the length of the public seed A is expanded from.
const SeedSize = 32

// ExpandColumn writes column k of A (len(dst) = d_in words): the
// little-endian 32-bit words of the ChaCha20 keystream with key = seed and
// nonce = "lweA" || uint64_be(k), from block 0. Each column has its own
// nonce, so any column can be made on demand, in any order, on any machine.
func ExpandColumn(seed *[SeedSize]byte, k int, dst []uint32) {
	var s keystream.Stream
	expandColumn(&s, seed, k, dst)
	s.Wipe()
}

func expandColumn(s *keystream.Stream, seed *[SeedSize]byte, k int, dst []uint32) {
	var nonce [12]byte
	copy(nonce[:4], "lweA")
	binary.BigEndian.PutUint64(nonce[4:], uint64(k))
	_ = s.Key(seed[:], nonce[:]) // key and nonce sizes are fixed: no error
	i := 0
	for ; i+1 < len(dst); i += 2 {
		w := s.Uint64()
		dst[i], dst[i+1] = uint32(w), uint32(w>>32)
	}
	if i < len(dst) {
		dst[i] = uint32(s.Uint64())
	}
}

// Public is the public matrix A (d_in x lambda), held expanded in the
// pads' tiled layout (see tiles): d_in * lambda * 4 bytes (64 MiB at
// d_in = lambda = 4096). Col and Rows unpack copies; ExpandColumn makes one
// column on demand instead.
type Public struct {
	Seed       [SeedSize]byte
	In, Lambda int
	t          tiles
}

// NewPublic expands A for inputs of width in from seed.
func NewPublic(seed [SeedSize]byte, in, lambda int) (*Public, error) {
	if in <= 0 || lambda <= 0 {
		return nil, fmt.Errorf("lwe: public matrix: shape [%d, %d]", in, lambda)
	}
	a := &Public{Seed: seed, In: in, Lambda: lambda, t: newTiles(in, lambda)}
	var s keystream.Stream
	col := make([]uint32, in)
	for k := 0; k < lambda; k++ {
		expandColumn(&s, &a.Seed, k, col)
		a.t.setCol(k, col)
	}
	return a, nil
}

// Col returns column k of A (d_in words), a copy.
func (a *Public) Col(k int) []uint32 {
	col := make([]uint32, a.In)
	a.t.col(k, col)
	return col
}

// Rows returns A^T row-major (lambda rows of d_in words, row k = column
// a_k), a copy.
func (a *Public) Rows() []uint32 { return a.t.rows() }

// RowsOf writes columns k0..k1-1 of A as rows into dst ((k1 - k0) d_in
// words): a chunk of what the device multiplies by W_q to make a hint.
func (a *Public) RowsOf(k0, k1 int, dst []uint32) {
	for k := k0; k < k1; k++ {
		a.t.col(k, dst[(k-k0)*a.In:(k-k0+1)*a.In])
	}
}

// Bytes is the memory A holds.
func (a *Public) Bytes() int { return 4 * len(a.t.p) }

// Hint is H = W_q A mod 2^32 (d_out x lambda), held in the pads' tiled
// layout (column h_k = W_q a_k). It is public and holds d_out * lambda * 4
// bytes.
type Hint struct {
	Out, Lambda int
	t           tiles
}

// Col returns column k of H (d_out words), a copy.
func (h *Hint) Col(k int) []uint32 {
	col := make([]uint32, h.Out)
	h.t.col(k, col)
	return col
}

// Bytes is the memory H holds.
func (h *Hint) Bytes() int { return 4 * len(h.t.p) }

// NewHint wraps a hint supplied from outside (the device's product of W_q
// and A's columns: H^T row-major, lambda rows of d_out words), checking
// its shape and packing it into the pads' layout (a copy: rows is not
// kept). It is not trusted until VerifyHint passes.
func NewHint(out, lambda int, rows []uint32) (*Hint, error) {
	if out <= 0 || lambda <= 0 || len(rows) != out*lambda {
		return nil, fmt.Errorf("lwe: hint: %d words for H^T [%d, %d]", len(rows), lambda, out)
	}
	return &Hint{Out: out, Lambda: lambda, t: packRows(rows, out, lambda)}, nil
}

// HintChunk is the columns BuildHint asks for at a time: about 16 MiB of
// hint words (at least 8 columns), so building a hint holds a chunk of it
// twice, not the whole hint.
func HintChunk(out, lambda int) int { return min(lambda, max(8, hintChunkWords/out)) }

// hintChunkWords is HintChunk's budget in words (tests lower it to make
// several chunks of a small hint).
var hintChunkWords = 1 << 22

// BuildHint makes a hint of d_out = out words a column, lambda columns,
// from columns supplied in chunks of HintChunk: cols(k0, k1, dst) writes
// columns h_k0..h_k1-1 as rows into dst ((k1 - k0) out words, what a
// device's product of W_q with A's columns k0..k1-1 returns). Each chunk
// is packed into the pads' layout as it comes. It is not trusted until
// VerifyHint passes.
func BuildHint(out, lambda int, cols func(k0, k1 int, dst []uint32) error) (*Hint, error) {
	if out <= 0 || lambda <= 0 {
		return nil, fmt.Errorf("lwe: hint: shape [%d, %d]", out, lambda)
	}
	h := &Hint{Out: out, Lambda: lambda, t: newTiles(out, lambda)}
	step := HintChunk(out, lambda)
	buf := make([]uint32, step*out)
	for k0 := 0; k0 < lambda; k0 += step {
		k1 := min(lambda, k0+step)
		if err := cols(k0, k1, buf[:(k1-k0)*out]); err != nil {
			return nil, fmt.Errorf("lwe: hint columns %d..%d: %w", k0, k1-1, err)
		}
		for k := k0; k < k1; k++ {
			h.t.setCol(k, buf[(k-k0)*out:(k-k0+1)*out])
		}
	}
	return h, nil
}

// ComputeHint computes H = W_q A in the TEE: d_out * d_in * lambda
// multiply-adds (6.9e10 for a 4096 x 4096 weight at lambda = 4096), as the
// device product of W_q with A's columns (MulRef), split over workers by
// column (workers <= 0: one). The result is exact, so it does not depend
// on workers.
func ComputeHint(w *Weights, a *Public, workers int) (*Hint, error) {
	if w.In != a.In {
		return nil, fmt.Errorf("lwe: hint: weight width %d, public matrix width %d", w.In, a.In)
	}
	workers = max(1, workers)
	at := make([]uint32, HintChunk(w.Out, a.Lambda)*a.In)
	return BuildHint(w.Out, a.Lambda, func(k0, k1 int, dst []uint32) error {
		a.RowsOf(k0, k1, at)
		per := (k1 - k0 + workers - 1) / workers
		var wg sync.WaitGroup
		for j0 := 0; j0 < k1-k0; j0 += per {
			j1 := min(k1-k0, j0+per)
			wg.Go(func() {
				mulRef(w, at[j0*a.In:j1*a.In], dst[j0*w.Out:j1*w.Out])
			})
		}
		wg.Wait()
		return nil
	})
}

// ErrHint is the error of a hint that failed its check.
var ErrHint = errors.New("lwe: the hint failed its Freivalds check (H != W_q A mod 2^32)")

// VerifyHint checks a device-supplied H against W_q and A with reps
// Freivalds tests over Z_{2^32}: for r uniform in Z_{2^32}^lambda drawn
// from rng (secret: the device must not know r before it sends H), it
// checks W_q (A r) == H r mod 2^32. Each repetition costs
// lambda (d_in + d_out) + d_in d_out multiply-adds, against
// d_out d_in lambda to compute H.
//
// Soundness over Z_{2^32} (not a field): let E = H' - H != 0 and, in a
// row j with E_j != 0, let 2^t be the largest power of two dividing every
// entry of E_j (t <= 31). Then E_j r mod 2^32 is uniform over the
// multiples of 2^t, so a repetition passes with probability at most
// 2^-(32 - t): 2^-32 for an error with an odd entry, but 1/2 for an error
// whose entries are all multiples of 2^31, and reps repetitions pass it
// with probability at most 2^-reps. So reps buys one bit per repetition in
// the worst case (40 for 2^-40). Drawing r over odd entries does not help:
// it catches a single 2^31 error always, but never two in one row
// (2^31 (r_a + r_b) = 0 mod 2^32 for odd r_a, r_b). A wrong hint column
// that s touches shifts v = centre(y - u) by E's entry; a shift by 2^31
// (the case Freivalds catches worst) moves a v with |v| <= b_j < 2^30 to
// |v'| >= 2^30 > b_j, so DecodeInt's range check refuses it in every
// output whose bound b_j is below 2^30.
func VerifyHint(w *Weights, a *Public, h *Hint, rng *keystream.Stream, reps int) error {
	return VerifyHints([]*Weights{w}, a, []*Hint{h}, rng, reps)
}

// VerifyHints is VerifyHint for every weight of one input width at once
// (all of a model's matrices that read A): each repetition draws one r and
// computes A r once for all of them, so a repetition costs
// lambda d_in + sum_i (lambda + d_in) d_out_i. Sharing r is sound because
// the device has sent every H_i before r is drawn: each check is the one
// VerifyHint makes, with r independent of that H_i's error.
func VerifyHints(ws []*Weights, a *Public, hs []*Hint, rng *keystream.Stream, reps int) error {
	if len(ws) != len(hs) || len(ws) == 0 {
		return fmt.Errorf("lwe: verify hint: %d weights, %d hints", len(ws), len(hs))
	}
	for i, w := range ws {
		if h := hs[i]; w.In != a.In || h.Out != w.Out || h.Lambda != a.Lambda || len(h.t.p) != h.Out*h.Lambda {
			return fmt.Errorf("lwe: verify hint %d: W_q [%d, %d], A [%d, %d], H [%d, %d]", i, w.Out, w.In, a.In, a.Lambda, h.Out, h.Lambda)
		}
	}
	switch {
	case reps <= 0:
		return fmt.Errorf("lwe: verify hint: %d repetitions", reps)
	case !rng.Live():
		return errors.New("lwe: verify hint: the random stream is not keyed")
	}
	// Every repetition's r, drawn in order, then each matrix combined
	// once for all of them.
	rs := make([][]uint32, reps)
	for j := range rs {
		rs[j] = make([]uint32, a.Lambda)
		for k := range rs[j] {
			rs[j][k] = uint32(rng.Uint64())
		}
	}
	defer func() {
		for _, r := range rs {
			clear(r)
		}
	}()
	workers := runtime.GOMAXPROCS(0)
	ars := make([][]uint32, reps)
	for j := range ars {
		ars[j] = make([]uint32, a.In)
	}
	a.t.colCombine(ars, rs, workers)
	for i, w := range ws {
		hrs := make([][]uint32, reps)
		for j := range hrs {
			hrs[j] = make([]uint32, w.Out)
		}
		hs[i].t.colCombine(hrs, rs, workers)
		war := make([]uint32, w.Out)
		for j := range rs {
			mulRef(w, ars[j], war)
			if !slices.Equal(hrs[j], war) {
				return ErrHint
			}
		}
	}
	return nil
}
