package lwe

import (
	"errors"
	"fmt"

	"gelo/keystream"
)

// ProbeSalt separates the probe vectors of u32 products from every other
// use of the session key.
const ProbeSalt = "gelo/lwe-probe/v1"

// ErrProduct is a device product that fails a probe: y != W_q c mod 2^32
// for some row.
var ErrProduct = errors.New("lwe: a device product fails its probe: y != W_q c mod 2^32")

// Probes are the secret vectors that check one weight's u32 products by
// Freivalds' method modulo 2^32: for each r_k (d_out words, uniform) the
// TEE keeps t_k = W_q^T r_k (d_in words), and a row's product passes
// probe k when r_k . y = t_k . c mod 2^32, d_out + d_in multiply-adds
// a row, exact (no tolerance: the product is exact in the ring).
//
// Soundness: for a wrong row y' = y + E (E != 0), r_k . E is uniform over
// the multiples of 2^v mod 2^32, 2^v the largest power of two dividing
// every entry of E, so the row passes one probe with probability
// 2^-(32 - v): at most 2^-32 when some entry of E is odd, 1/2 in the worst
// case E = 2^31 e_j (a flip of output j's top bit), and k independent
// probes at most 2^-k (32 - v). That worst case is what lwe_decode's
// range check sees best: a shift by 2^31 of an output whose bound
// b_j < 2^30 leaves it (DecodeInt). The device does not know which of the
// pool's vectors a pass draws (the runtime's secret picker), so it cannot
// aim an error at the others.
type Probes struct {
	In, Out int
	r, t    [][]uint32 // [P][Out], [P][In]
}

// NewProbes draws size vectors for the weight called name from
// HKDF(key, ProbeSalt, name) and computes W_q^T r for each (w's integers
// are read; its scales play no part).
func NewProbes(w *Weights, key []byte, name string, size int) (*Probes, error) {
	if size <= 0 || w == nil || len(w.Q) != w.Out*w.In {
		return nil, fmt.Errorf("lwe: probes %q: size %d, weight without integers", name, size)
	}
	var kdf keystream.KDF
	var s keystream.Stream
	defer kdf.Forget()
	defer s.Wipe()
	if err := kdf.Key(&s, key, ProbeSalt, []byte(name)); err != nil {
		return nil, fmt.Errorf("lwe: probes %q: %w", name, err)
	}
	pr := &Probes{In: w.In, Out: w.Out, r: make([][]uint32, size), t: make([][]uint32, size)}
	for k := range size {
		r := make([]uint32, w.Out)
		for j := range r {
			r[j] = uint32(s.Uint64())
		}
		t := make([]uint32, w.In)
		for j, rj := range r {
			row := w.Q[j*w.In : (j+1)*w.In]
			for i, q := range row {
				t[i] += uint32(int32(q)) * rj
			}
		}
		pr.r[k], pr.t[k] = r, t
	}
	return pr, nil
}

// Size is the number of vectors.
func (pr *Probes) Size() int { return len(pr.r) }

// Bytes is the memory the vectors hold.
func (pr *Probes) Bytes() int { return 4 * len(pr.r) * (pr.In + pr.Out) }

// Check runs the probes idx (indices into the pool) on every row of the
// product y [rows, Out] of the ciphertext rows c [rows, In]: ErrProduct if
// any row fails any of them.
func (pr *Probes) Check(y, c []uint32, rows int, idx []int) error {
	if len(y) < rows*pr.Out || len(c) < rows*pr.In {
		return fmt.Errorf("lwe: probe: %d product and %d ciphertext words for %d rows of [%d, %d]", len(y), len(c), rows, pr.Out, pr.In)
	}
	for _, k := range idx {
		if k < 0 || k >= len(pr.r) {
			return fmt.Errorf("lwe: probe %d of a pool of %d", k, len(pr.r))
		}
	}
	bad := false
	var rv, tv [4][]uint32
	var ry, tc [4]uint32
	for r := range rows {
		yr, cr := y[r*pr.Out:(r+1)*pr.Out], c[r*pr.In:(r+1)*pr.In]
		for g := 0; g < len(idx); g += 4 {
			ks := idx[g:min(len(idx), g+4)]
			for j := range rv { // a short group repeats its first probe
				k := ks[min(j, len(ks)-1)]
				rv[j], tv[j] = pr.r[k], pr.t[k]
			}
			dot4(&rv, yr, &ry)
			dot4(&tv, cr, &tc)
			for j := range ks {
				bad = bad || ry[j] != tc[j]
			}
		}
	}
	if bad {
		return ErrProduct
	}
	return nil
}

// Wipe clears the vectors; the Probes are unusable afterwards.
func (pr *Probes) Wipe() {
	for k := range pr.r {
		clear(pr.r[k])
		clear(pr.t[k])
	}
	pr.r, pr.t = nil, nil
}

// dot4 sets out[j] = a[j] . b mod 2^32 (every a[j] at least len(b) long):
// four probes a pass over b, with AVX2 eight words an instruction.
func dot4(a *[4][]uint32, b []uint32, out *[4]uint32) {
	n8 := 0
	if useAsm {
		n8 = len(b) &^ 7
	}
	if n8 > 0 {
		dot4Asm(a, b, n8, out)
	} else {
		*out = [4]uint32{}
	}
	for j := range a {
		out[j] += dot32(a[j][n8:len(b)], b[n8:])
	}
}

// dot32 is a . b mod 2^32.
func dot32(a, b []uint32) uint32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 uint32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
