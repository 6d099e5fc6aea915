package kernels

import (
	"fmt"
	"math"
)

type attnJob struct {
	out, q           []float32
	kc, vc           KV
	rows, heads, kvH int
	hd, maxT         int
	seq, pos         []int32
	scale            float32
	group            int // query heads per KV head
	hb               int // query heads per task (divides heads)
	rb               int // rows per task
}

// Attention computes causal grouped-query attention against the caches.
//
// q and out are [rows][heads][hd]; kc and vc are head-major caches
// [S][kvHeads][maxT][hd] (S = Len / (maxT*kvHeads*hd) sequences; see KV)
// in one format. Row r belongs to sequence seq[r], sits at position pos[r]
// and attends to cache positions 0..pos[r] of that sequence (the caller has
// already appended the row's own K/V). Query head h uses KV head
// h / (heads/kvHeads). A 16-bit cache is read widened to float32 (exact),
// so everything below is the f32 arithmetic on the stored values.
//
// Arithmetic, per (row, head), all float32 unless stated:
//
//	s[t]   = dot(q, k_t) * scale    dot in the canonical order (package doc)
//	m      = max_t s[t]
//	e[t]   = expf(s[t] - m)         expf: package doc
//	sum    = sum_t e[t] in float64: 4 partial sums over t mod 4, each in t
//	         order, combined as (p0+p1)+(p2+p3)
//	p[t]   = e[t] * float32(1/sum)
//	out[c] = sum_t p[t]*v_t[c]:     a = 0; a = fma(p[t], v_t[c], a) for t
//	                                ascending (no FMA in the Go fallback)
//
// Each (row, head) is computed entirely by one worker in this order, so a
// row's result does not depend on the worker count, on the other rows of
// the batch or on their order: decoding a row alone or inside a batch gives
// the same bits. The layout only sets strides: the order above is the one
// the earlier token-major layout ([S][maxT][kvHeads*hd]) gave, bit for bit.
// Tasks are (row, block of query heads sharing whole KV heads), or in a
// prefill (2*attnRows rows or more) (block of attnRows rows, one KV head's
// query heads; with AVX-512 a block of one sequence takes its scores as a
// GEMM, scoresGEMM, and its weighted sums of V three rows by two heads a
// pass, wsumRows);
// a task takes its KV heads one at a time and walks that head's positions
// in chunks of 64, so that the query heads of the group, and the rows of
// the block, reuse each chunk from cache. A 16-bit cache is widened in registers (F16C's VCVTPH2PS, or the
// bf16 shift) when hd is a multiple of 8, else chunk by chunk into
// per-worker scratch.
//
// out may alias q (same offset); it must not overlap the caches. The score
// scratch lives in the Ctx (heads*maxT floats per worker) and is
// reallocated only when maxT (or heads) grows beyond earlier calls.
//
// It returns an error (computing nothing) on bad shapes or when a seq or pos
// value is out of range.
func (c *Ctx) Attention(out, q []float32, kc, vc KV, rows, heads, kvHeads, hd, maxT int, seq, pos []int32, scale float32) error {
	if rows < 0 || heads <= 0 || kvHeads <= 0 || hd <= 0 || maxT <= 0 || heads%kvHeads != 0 {
		return fmt.Errorf("kernels: Attention: bad shape rows=%d heads=%d kvHeads=%d hd=%d maxT=%d", rows, heads, kvHeads, hd, maxT)
	}
	kvW := kvHeads * hd
	if len(q) < rows*heads*hd || len(out) < rows*heads*hd {
		return fmt.Errorf("kernels: Attention: len(q)=%d len(out)=%d, need %d", len(q), len(out), rows*heads*hd)
	}
	for _, kv := range []KV{kc, vc} {
		if err := kv.check("Attention"); err != nil {
			return err
		}
	}
	if kc.Format != vc.Format || kc.Len() != vc.Len() || kc.Len() < maxT*kvW {
		return fmt.Errorf("kernels: Attention: caches of %d (k, %v) and %d (v, %v) values, need one format and equal multiples of %d", kc.Len(), kc.Format, vc.Len(), vc.Format, maxT*kvW)
	}
	nseq := kc.Len() / (maxT * kvW)
	if len(seq) < rows || len(pos) < rows {
		return fmt.Errorf("kernels: Attention: %d seq and %d pos entries for %d rows", len(seq), len(pos), rows)
	}
	for r := 0; r < rows; r++ {
		if seq[r] < 0 || int(seq[r]) >= nseq {
			return fmt.Errorf("kernels: Attention: sequence %d of row %d out of range [0,%d)", seq[r], r, nseq)
		}
		if pos[r] < 0 || int(pos[r]) >= maxT {
			return fmt.Errorf("kernels: Attention: position %d of row %d out of range [0,%d)", pos[r], r, maxT)
		}
	}
	if rows == 0 {
		return nil
	}
	j := &c.att
	j.out, j.q, j.kc, j.vc = out, q, kc, vc
	j.rows, j.heads, j.kvH, j.hd, j.maxT = rows, heads, kvHeads, hd, maxT
	j.seq, j.pos, j.scale = seq, pos, scale
	j.group = heads / kvHeads
	j.rb, j.hb = 1, attnHeadBlock(rows, heads, j.group, c.workers)
	if rows >= 2*attnRows {
		// Prefill: blocks of rows per KV head, so that a chunk of the
		// cache read for one row serves the block's other rows too.
		j.rb, j.hb = attnRows, j.group
	}
	// Room for all heads (or a row block's), so that the buffers change
	// only with maxT (or a model with more heads), not with the batch size.
	for i, s := range c.scores {
		if n := max(heads, j.rb*j.hb) * maxT; len(s) < n {
			c.scores[i] = make([]float32, n)
		}
	}
	if kc.Format != KVF32 {
		for i, s := range c.kvWide {
			if len(s) < (attnChunk+8)*hd {
				c.kvWide[i] = make([]float32, (attnChunk+8)*hd)
			}
		}
	}
	c.run(j, (rows+j.rb-1)/j.rb*(heads/j.hb))
	j.out, j.q, j.kc, j.vc, j.seq, j.pos = nil, nil, KV{}, KV{}, nil, nil
	return nil
}

// attnHeadBlock returns the number of query heads per task: all of them
// (so a task reads whole contiguous cache rows) unless that gives fewer than
// two tasks per worker; then the largest block that does, among the
// divisors of heads that are multiples or divisors of the group. It only
// affects speed: every element is computed in the same order regardless.
func attnHeadBlock(rows, heads, group, workers int) int {
	best := heads
	for hb := heads; hb >= 1; hb-- {
		if heads%hb != 0 || (hb%group != 0 && group%hb != 0) {
			continue
		}
		best = hb
		if rows*(heads/hb) >= 2*workers {
			break
		}
	}
	return best
}

func (j *attnJob) do(c *Ctx, task, worker int) {
	nblk := j.heads / j.hb
	rb, h0 := task/nblk, (task%nblk)*j.hb
	r0, r1 := rb*j.rb, min((rb+1)*j.rb, j.rows)
	G, hd, maxT := j.group, j.hd, j.maxT
	f := j.kc.Format
	// A 16-bit cache is read widened in registers by the assembly where it
	// takes hd; otherwise each chunk is widened into scratch first. Both
	// give the f32 kernels' bits on the widened values.
	direct := f != KVF32 && kv16Asm(f, hd)
	var wide, tail []float32
	if f != KVF32 {
		wide, tail = c.kvWide[worker][:attnChunk*hd], c.kvWide[worker][attnChunk*hd:]
	}
	// The scores of (row r, head i) of the task.
	score := func(r, i int) []float32 { return c.scores[worker][((r-r0)*j.hb+i-h0)*maxT:] }
	Tmax := 0
	for r := r0; r < r1; r++ {
		Tmax = max(Tmax, int(j.pos[r])+1)
	}
	// A prefill block of one sequence takes its scores as a GEMM (see
	// scoresGEMM) where the AVX-512 6x8 kernel runs.
	gemm := useAVX512 && r1-r0 >= 6
	for r := r0 + 1; gemm && r < r1; r++ {
		gemm = j.seq[r] == j.seq[r0]
	}
	// The KV heads used by heads [h0, h0+hb), one at a time: each is a
	// contiguous [maxT][hd] run of the cache.
	for g := h0 / G; g <= (h0+j.hb-1)/G; g++ {
		i0, i1 := max(h0, g*G), min(h0+j.hb, (g+1)*G) // its query heads
		// Scores, chunk by chunk: every query head of the group, for every
		// row of the task, goes through a chunk of K while it is in cache.
		// Full tiles of 8 positions; a last partial tile is the tile
		// ending at T (recomputing a few scores bit-identically), or
		// single dot products when T < 8.
		for t0 := 0; t0 < Tmax; t0 += attnChunk {
			if gemm && j.scoresGEMM(g, t0, Tmax, r0, r1, i0, i1, wide, score) {
				continue
			}
			for r := r0; r < r1; r++ {
				T := int(j.pos[r]) + 1
				if t0 >= T {
					continue
				}
				base := KVOffset(int(j.seq[r]), g, 0, j.kvH, hd, maxT)
				tc := min(attnChunk, T-t0)
				nt := tc / 8
				var K []float32
				if !direct {
					K = j.kc.rows(base+t0*hd, tc, hd, wide)
				}
				// Heads below paired take their full tiles two at a time
				// (each key row read, and widened, once for both; gemv2Asm
				// implies direct for a 16-bit cache).
				paired := i0
				if nt > 0 && gemv2Asm(f, hd) {
					paired = i0 + (i1-i0)/2*2
					for i := i0; i < paired; i += 2 {
						q0, q1 := j.q[(r*j.heads+i)*hd:], j.q[(r*j.heads+i+1)*hd:]
						if f == KVF32 {
							gemv2x8F32(q0, q1, K, hd, hd, nt, score(r, i)[t0:], score(r, i+1)[t0:])
						} else {
							gemv2x8H16(f, q0, q1, j.kc.H16[base+t0*hd:], hd, hd, nt, score(r, i)[t0:], score(r, i+1)[t0:])
						}
					}
				}
				for i := i0; i < i1; i++ {
					qi, si := j.q[(r*j.heads+i)*hd:], score(r, i)
					if nt > 0 && i >= paired {
						if direct {
							gemv1x8H16(f, qi, j.kc.H16[base+t0*hd:], hd, hd, nt, si[t0:])
						} else {
							gemv1x8(qi, K, hd, hd, nt, si[t0:])
						}
					}
					if tc == 8*nt {
						continue
					}
					switch {
					case T < 8:
						Kt := j.kc.rows(base, T, hd, tail)
						for t := 0; t < T; t++ {
							si[t] = dot(qi, Kt[t*hd:], hd)
						}
					case direct:
						gemv1x8H16(f, qi, j.kc.H16[base+(T-8)*hd:], hd, hd, 1, si[T-8:])
					case tc >= 8:
						gemv1x8(qi, K[(tc-8)*hd:], hd, hd, 1, si[T-8:])
					default: // the tile ending at T starts in the previous chunk
						gemv1x8(qi, j.kc.rows(base+(T-8)*hd, 8, hd, tail), hd, hd, 1, si[T-8:])
					}
				}
			}
		}
		for r := r0; r < r1; r++ {
			for i := i0; i < i1; i++ {
				softmaxScaled(score(r, i)[:j.pos[r]+1], j.scale)
			}
		}
		// Weighted sums of V, continued chunk by chunk (the accumulators go
		// through out unchanged, so the order per element stays t
		// ascending). Out is written only after this group's q was read.
		for t0 := 0; t0 < Tmax; t0 += attnChunk {
			r := r0
			if wsum6Asm(f, hd) && (i1-i0)%2 == 0 {
				r = j.wsumRows(f, g, t0, r0, r1, i0, i1, score)
			}
			for ; r < r1; r++ {
				T := int(j.pos[r]) + 1
				if t0 >= T {
					continue
				}
				base := KVOffset(int(j.seq[r]), g, 0, j.kvH, hd, maxT)
				tc := min(attnChunk, T-t0)
				i := i0
				if wsum2Asm(f, hd) {
					// Two query heads a pass over the chunk: its rows
					// read (and widened) once, each head's bits those of
					// its own wsum.
					var v []float32
					var h []uint16
					if f == KVF32 {
						v = j.vc.F32[base+t0*hd:]
					} else {
						h = j.vc.H16[base+t0*hd:]
					}
					for ; i+2 <= i1; i += 2 {
						wsum2(f, j.out[(r*j.heads+i)*hd:], j.out[(r*j.heads+i+1)*hd:], score(r, i)[t0:], score(r, i+1)[t0:], v, h, hd, tc, hd, t0 > 0)
					}
					if i == i1 {
						continue
					}
				}
				if direct {
					for ; i < i1; i++ {
						wsumH16(f, j.out[(r*j.heads+i)*hd:], score(r, i)[t0:], j.vc.H16[base+t0*hd:], hd, tc, hd, t0 > 0)
					}
					continue
				}
				V := j.vc.rows(base+t0*hd, tc, hd, wide)
				for ; i < i1; i++ {
					wsum(j.out[(r*j.heads+i)*hd:], score(r, i)[t0:], V, hd, tc, hd, t0 > 0)
				}
			}
		}
	}
}

// wsumRows takes the weighted sums of V of chunk t0 of KV head g for the
// block's rows from r0 three at a time while three rows share a sequence
// and attend to all of the chunk's first position: each pair of query
// heads i0..i1 of the three rows goes through the chunk's positions that
// all three attend to with wsum6 (the V rows read once for the six
// sums), the positions past those for a row's own longer T with wsum2,
// continuing; per element the order stays t ascending, so the bits are
// the row-by-row path's. It returns the first row it did not take.
func (j *attnJob) wsumRows(f KVFormat, g, t0, r0, r1, i0, i1 int, score func(r, i int) []float32) int {
	hd, maxT := j.hd, j.maxT
	ldo, ldp := j.heads*hd, j.hb*maxT
	r := r0
	for ; r+3 <= r1; r += 3 {
		if j.seq[r+1] != j.seq[r] || j.seq[r+2] != j.seq[r] {
			break
		}
		Tmin := int(min(j.pos[r], j.pos[r+1], j.pos[r+2])) + 1
		if t0 >= Tmin {
			break
		}
		base := KVOffset(int(j.seq[r]), g, 0, j.kvH, hd, maxT) + t0*hd
		var v []float32
		var h []uint16
		if f == KVF32 {
			v = j.vc.F32[base:]
		} else {
			h = j.vc.H16[base:]
		}
		tcc := min(attnChunk, Tmin-t0)
		for i := i0; i < i1; i += 2 {
			wsum6(f, j.out[(r*j.heads+i)*hd:], ldo, hd, score(r, i)[t0:], ldp, maxT, v, h, hd, tcc, hd, t0 > 0)
		}
		for rr := r; rr < r+3; rr++ {
			tc := min(attnChunk, int(j.pos[rr])+1-t0)
			if tc == tcc {
				continue
			}
			var vt []float32
			var ht []uint16
			if f == KVF32 {
				vt = v[tcc*hd:]
			} else {
				ht = h[tcc*hd:]
			}
			for i := i0; i < i1; i += 2 {
				wsum2(f, j.out[(rr*j.heads+i)*hd:], j.out[(rr*j.heads+i+1)*hd:], score(rr, i)[t0+tcc:], score(rr, i+1)[t0+tcc:], vt, ht, hd, tc-tcc, hd, true)
			}
		}
	}
	return r
}

// scoresGEMM computes the scores of chunk t0 of KV head g for every row
// r0..r1 (at least 6, one sequence) and query head i0..i1 of the task with
// the GEMM kernel: the chunk's keys, up to the block's last position
// (Tmax) rounded up to whole tiles of 8, are widened once (a 16-bit cache)
// and each query head's rows go through them 6 at a time (gemm6x8, the
// last group shifted back inside the block, recomputing some rows
// bit-identically). gemm6x8's dot products are gemv1x8's (the canonical
// order), so every score a row reads (t < its T) has the bits of the
// row-by-row path; the scores past a row's own T are computed from cache
// rows it does not attend to and never read. It reports false, computing
// nothing, when the rounded-up chunk would run past maxT.
func (j *attnJob) scoresGEMM(g, t0, Tmax, r0, r1, i0, i1 int, wide []float32, score func(r, i int) []float32) bool {
	hd, maxT := j.hd, j.maxT
	ntl := (min(attnChunk, Tmax-t0) + 7) / 8
	if t0+8*ntl > maxT {
		return false
	}
	base := KVOffset(int(j.seq[r0]), g, 0, j.kvH, hd, maxT)
	K := j.kc.rows(base+t0*hd, 8*ntl, hd, wide)
	for i := i0; i < i1; i++ {
		for gr := r0; gr < r1; gr += 6 {
			r := min(gr, r1-6)
			gemm6x8(j.q[(r*j.heads+i)*hd:], j.heads*hd, K, hd, hd, ntl, score(r, i)[t0:], j.hb*maxT)
		}
	}
	return true
}

// attnRows is the row block of a prefill's attention tasks: a chunk of
// one KV head (64 positions, 32 KiB in f32) is read once for the block's
// rows: 12 where the AVX-512 GEMM kernel takes the scores (two groups of
// 6), else 8.
var attnRows = attnRowsFor(useAVX512)

func attnRowsFor(avx512 bool) int {
	if avx512 {
		return 12
	}
	return 8
}

// attnChunk is the number of cache rows a task's heads go through together
// (a multiple of 8; 64 rows of one 128-wide KV head are 32 KiB).
const attnChunk = 64

// softmaxScaled replaces s by softmax(s*scale) as documented on Attention.
// The vector prefix (assembly) and the Go loops perform the same operations.
func softmaxScaled(s []float32, scale float32) {
	nv := vecPrefix(len(s))
	m := float32(math.Inf(-1))
	if nv > 0 {
		m = scaleMaxVec(s, nv, scale)
	}
	for i := nv; i < len(s); i++ {
		v := s[i] * scale
		s[i] = v
		if v > m {
			m = v
		}
	}
	var p [4]float64
	if nv > 0 {
		expSumVec(s, nv, m, &p)
	}
	for i := nv; i < len(s); i++ {
		e := expf(s[i] - m)
		s[i] = e
		p[i&3] += float64(e)
	}
	inv := float32(1 / ((p[0] + p[1]) + (p[2] + p[3])))
	if nv > 0 {
		scaleVec(s, nv, inv)
	}
	for i := nv; i < len(s); i++ {
		s[i] *= inv
	}
}

// Embed sets row r of y ([len(ids)][d]) to row ids[r] of table ([vocab][d]).
// It returns an error naming the first id out of [0, vocab) (copying
// nothing).
func (c *Ctx) Embed(y, table []float32, ids []int32, d, vocab int) error {
	if d <= 0 || vocab <= 0 || len(table) < vocab*d || len(y) < len(ids)*d {
		return fmt.Errorf("kernels: Embed: bad shape d=%d vocab=%d len(table)=%d len(y)=%d ids=%d", d, vocab, len(table), len(y), len(ids))
	}
	for r, id := range ids {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("kernels: Embed: token id %d at index %d out of range [0,%d)", id, r, vocab)
		}
	}
	for r, id := range ids {
		copy(y[r*d:(r+1)*d], table[int(id)*d:(int(id)+1)*d])
	}
	return nil
}
