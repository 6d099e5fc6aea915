package kernels

import (
	"fmt"
	"math"
)

type attnJob struct {
	out, q, kc, vc   []float32
	rows, heads, kvH int
	hd, maxT         int
	seq, pos         []int32
	scale            float32
	group            int // query heads per KV head
	hb               int // query heads per task (divides heads)
	kvW              int
}

// Attention computes causal grouped-query attention against the caches.
//
// q and out are [rows][heads][hd]; kc and vc are [S][maxT][kvHeads*hd] (S =
// len(kc) / (maxT*kvHeads*hd) sequences). Row r belongs to sequence seq[r],
// sits at position pos[r] and attends to cache positions 0..pos[r] of that
// sequence (the caller has already appended the row's own K/V). Query head
// h uses KV head h / (heads/kvHeads).
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
// the same bits. Tasks are (row, block of query heads sharing whole KV
// heads); a task walks the cache rows in chunks of 64 positions so that
// the heads of a group reuse each chunk from cache.
//
// out may alias q (same offset); it must not overlap the caches. The score
// scratch lives in the Ctx (heads*maxT floats per worker) and is
// reallocated only when maxT (or heads) grows beyond earlier calls.
//
// It returns an error (computing nothing) on bad shapes or when a seq or pos
// value is out of range.
func (c *Ctx) Attention(out, q, kc, vc []float32, rows, heads, kvHeads, hd, maxT int, seq, pos []int32, scale float32) error {
	if rows < 0 || heads <= 0 || kvHeads <= 0 || hd <= 0 || maxT <= 0 || heads%kvHeads != 0 {
		return fmt.Errorf("kernels: Attention: bad shape rows=%d heads=%d kvHeads=%d hd=%d maxT=%d", rows, heads, kvHeads, hd, maxT)
	}
	kvW := kvHeads * hd
	if len(q) < rows*heads*hd || len(out) < rows*heads*hd {
		return fmt.Errorf("kernels: Attention: len(q)=%d len(out)=%d, need %d", len(q), len(out), rows*heads*hd)
	}
	if len(kc) != len(vc) || len(kc) < maxT*kvW {
		return fmt.Errorf("kernels: Attention: cache lengths %d (k) and %d (v), need equal multiples of %d", len(kc), len(vc), maxT*kvW)
	}
	nseq := len(kc) / (maxT * kvW)
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
	j.rows, j.heads, j.kvH, j.hd, j.maxT, j.kvW = rows, heads, kvHeads, hd, maxT, kvW
	j.seq, j.pos, j.scale = seq, pos, scale
	j.group = heads / kvHeads
	j.hb = attnHeadBlock(rows, heads, j.group, c.workers)
	// Room for all heads, so that the buffers change only with maxT (or a
	// model with more heads), not with the batch size.
	for i, s := range c.scores {
		if len(s) < heads*maxT {
			c.scores[i] = make([]float32, heads*maxT)
		}
	}
	c.run(j, rows*(heads/j.hb))
	j.out, j.q, j.kc, j.vc, j.seq, j.pos = nil, nil, nil, nil, nil, nil
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
	r, h0 := task/nblk, (task%nblk)*j.hb
	nh, G := j.hb, j.group
	hd, kvW, maxT := j.hd, j.kvW, j.maxT
	T := int(j.pos[r]) + 1
	// The KV heads used by heads [h0, h0+nh) are [g0, g1): a contiguous
	// piece of every cache row.
	g0, g1 := h0/G, (h0+nh-1)/G+1
	base := int(j.seq[r])*maxT*kvW + g0*hd
	width := (g1 - g0) * hd
	K := j.kc[base : base+(T-1)*kvW+width]
	V := j.vc[base : base+(T-1)*kvW+width]
	qr := j.q[(r*j.heads+h0)*hd:]
	or := j.out[(r*j.heads+h0)*hd:]
	sc := c.scores[worker]
	// koff(i): offset in K/V of the KV head of query head h0+i.
	koff := func(i int) int { return ((h0+i)/G - g0) * hd }

	// Scores. The cache rows are visited in chunks of attnChunk rows and
	// every head of the task goes through a chunk while it is in cache (the
	// heads of a group share their K and V rows).
	if T < 8 {
		for i := 0; i < nh; i++ {
			for t := 0; t < T; t++ {
				sc[i*maxT+t] = dot(qr[i*hd:], K[t*kvW+koff(i):], hd)
			}
		}
	} else {
		full := T / 8
		for t0 := 0; t0 < full; t0 += attnChunk / 8 {
			nt := min(attnChunk/8, full-t0)
			for i := 0; i < nh; i++ {
				gemv1x8(qr[i*hd:], K[8*t0*kvW+koff(i):], kvW, hd, nt, sc[i*maxT+8*t0:])
			}
		}
		if 8*full < T {
			// Tail tile shifted back to end at T (recomputes bit-identically).
			for i := 0; i < nh; i++ {
				gemv1x8(qr[i*hd:], K[(T-8)*kvW+koff(i):], kvW, hd, 1, sc[i*maxT+T-8:])
			}
		}
	}
	for i := 0; i < nh; i++ {
		softmaxScaled(sc[i*maxT:i*maxT+T], j.scale)
	}
	// Weighted sums of V, continued chunk by chunk (the accumulators go
	// through out unchanged, so the order per element stays t ascending).
	for t0 := 0; t0 < T; t0 += attnChunk {
		tc := min(attnChunk, T-t0)
		for i := 0; i < nh; i++ {
			wsum(or[i*hd:], sc[i*maxT+t0:], V[t0*kvW+koff(i):], kvW, tc, hd, t0 > 0)
		}
	}
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

// KVAppend copies row r of x ([rows][width]) to cache[seq[r]][pos[r]] of
// cache [S][maxT][width], S = len(cache)/(maxT*width). It returns an error
// (copying nothing) if a seq or pos value is out of range.
func (c *Ctx) KVAppend(cache, x []float32, rows, width, maxT int, seq, pos []int32) error {
	if rows < 0 || width <= 0 || maxT <= 0 || len(x) < rows*width || len(cache) < maxT*width {
		return fmt.Errorf("kernels: KVAppend: bad shape rows=%d width=%d maxT=%d len(x)=%d len(cache)=%d", rows, width, maxT, len(x), len(cache))
	}
	if len(seq) < rows || len(pos) < rows {
		return fmt.Errorf("kernels: KVAppend: %d seq and %d pos entries for %d rows", len(seq), len(pos), rows)
	}
	nseq := len(cache) / (maxT * width)
	for r := 0; r < rows; r++ {
		if seq[r] < 0 || int(seq[r]) >= nseq {
			return fmt.Errorf("kernels: KVAppend: sequence %d of row %d out of range [0,%d)", seq[r], r, nseq)
		}
		if pos[r] < 0 || int(pos[r]) >= maxT {
			return fmt.Errorf("kernels: KVAppend: position %d of row %d out of range [0,%d)", pos[r], r, maxT)
		}
	}
	for r := 0; r < rows; r++ {
		o := (int(seq[r])*maxT + int(pos[r])) * width
		copy(cache[o:o+width], x[r*width:(r+1)*width])
	}
	return nil
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
