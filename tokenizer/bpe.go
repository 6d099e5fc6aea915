package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
)

// bpeCache remembers the ids of recently seen pre-tokenized words. It is a
// direct-mapped table of a fixed number of slots: a word hashes to one slot,
// and a newer word that hashes there replaces the older one. That bounds it,
// needs no locks (slots are swapped atomically) and costs one hash and one
// string comparison per lookup.
type bpeCache struct {
	slots []atomic.Pointer[cacheEntry]
	mask  uint64
	seed  maphash.Seed
	max   int
}

type cacheEntry struct {
	word string
	ids  []int32
}

// newBPECache returns a cache of at least max slots (rounded up to a power
// of two); max <= 0 disables it.
func newBPECache(max int) *bpeCache {
	if max <= 0 {
		return &bpeCache{}
	}
	n := 1
	for n < max {
		n *= 2
	}
	return &bpeCache{slots: make([]atomic.Pointer[cacheEntry], n), mask: uint64(n - 1), seed: maphash.MakeSeed(), max: n}
}

func (c *bpeCache) slot(k string) *atomic.Pointer[cacheEntry] {
	return &c.slots[maphash.String(c.seed, k)&c.mask]
}

func (c *bpeCache) get(k string) ([]int32, bool) {
	if e := c.slot(k).Load(); e != nil && e.word == k {
		return e.ids, true
	}
	return nil, false
}

func (c *bpeCache) put(k string, v []int32) {
	c.slot(k).Store(&cacheEntry{strings.Clone(k), v})
}

// len counts the occupied slots.
func (c *bpeCache) len() int {
	n := 0
	for i := range c.slots {
		if c.slots[i].Load() != nil {
			n++
		}
	}
	return n
}

// SetCacheSize replaces the BPE word cache by an empty one holding at most n
// words (rounded up to a power of two); n <= 0 turns caching off. It must not
// be called concurrently with encoding.
func (t *Tokenizer) SetCacheSize(n int) { t.cache = newBPECache(n) }

// Words longer than this are not cached (they are rare, and would let one
// huge input pin a lot of memory).
const maxCachedWord = 256

// Words of at most this many bytes use the quadratic array merge, longer
// ones the heap merge.
const smallWord = 48

// appendWord appends the ids of one pre-tokenized piece (raw bytes) to dst.
func (t *Tokenizer) appendWord(dst []int32, w string, sc *scratch) []int32 {
	if len(w) == 1 {
		if id := t.byteID[w[0]]; id >= 0 {
			return append(dst, id)
		}
	}
	cacheable := t.cache != nil && t.cache.max > 0 && len(w) <= maxCachedWord
	if cacheable {
		if ids, ok := t.cache.get(w); ok {
			return append(dst, ids...)
		}
	}
	if t.ignoreMrg {
		// ignore_merges: a word that is a whole token is taken as is.
		if id, ok := t.vocab[byteLevelEncode(w)]; ok {
			dst = append(dst, id)
			if cacheable {
				t.cache.put(w, []int32{id})
			}
			return dst
		}
	}
	start := len(dst)
	if len(w) <= smallWord {
		dst = t.mergeSmall(dst, w, sc)
	} else {
		dst = t.mergeHeap(dst, w, sc)
	}
	if cacheable {
		ids := make([]int32, len(dst)-start)
		copy(ids, dst[start:])
		t.cache.put(w, ids)
	}
	return dst
}

// initialSymbols fills ids with the byte tokens of w. Bytes without a token
// become the unk token, or are dropped when there is none (Hugging Face BPE
// without byte_fallback and unk_token does the same); consecutive unknowns are
// not fused.
func (t *Tokenizer) initialSymbols(ids []int32, w string) []int32 {
	ids = ids[:0]
	for i := 0; i < len(w); i++ {
		id := t.byteID[w[i]]
		if id < 0 {
			id = t.unkID
			if id < 0 {
				continue
			}
		}
		ids = append(ids, id)
	}
	return ids
}

const noRank = int32(1<<31 - 1)

func (t *Tokenizer) lookup(a, b int32) merge {
	if m, ok := t.merges.get(pairKey(a, b)); ok {
		return m
	}
	return merge{noRank, -1}
}

// mergeSmall runs BPE on a short word with plain arrays: repeatedly merge the
// lowest-ranked adjacent pair, leftmost first. This is the order of Hugging
// Face's heap-based merge loop.
func (t *Tokenizer) mergeSmall(dst []int32, w string, sc *scratch) []int32 {
	ids := t.initialSymbols(sc.ids, w)
	sc.ids = ids
	if len(ids) < 2 {
		return append(dst, ids...)
	}
	pairs := sc.pairs[:0]
	for i := 0; i+1 < len(ids); i++ {
		pairs = append(pairs, t.lookup(ids[i], ids[i+1]))
	}
	for {
		best := -1
		bestRank := noRank
		for i, p := range pairs {
			if p.rank < bestRank {
				best, bestRank = i, p.rank
			}
		}
		if best < 0 {
			break
		}
		ids[best] = pairs[best].id
		ids = append(ids[:best+1], ids[best+2:]...)
		pairs = append(pairs[:best], pairs[best+1:]...)
		if best > 0 {
			pairs[best-1] = t.lookup(ids[best-1], ids[best])
		}
		if best < len(pairs) {
			pairs[best] = t.lookup(ids[best], ids[best+1])
		}
	}
	sc.pairs = pairs
	return append(dst, ids...)
}

// The heap of candidate merges holds rank<<32 | position: the lowest rank
// first, and for equal ranks the leftmost position, which is the order of
// Hugging Face's merge loop.
type mergeHeap []uint64

func (h mergeHeap) down(i int) {
	n := len(h)
	x := h[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r] < h[l] {
			m = r
		}
		if h[m] >= x {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
}

func (h *mergeHeap) push(x uint64) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p] <= x {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = x
}

func (h *mergeHeap) pop() uint64 {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	if n > 0 {
		s.down(0)
	}
	*h = s
	return top
}

// mergeHeap runs BPE in O(n log n) with a doubly linked list of symbols and a
// heap of candidate merges, as Hugging Face tokenizers does.
func (t *Tokenizer) mergeHeap(dst []int32, w string, sc *scratch) []int32 {
	ids := t.initialSymbols(sc.ids, w)
	sc.ids = ids
	n := len(ids)
	if n < 2 {
		return append(dst, ids...)
	}
	prev := sc.prev[:0]
	next := sc.next[:0]
	for i := 0; i < n; i++ {
		prev = append(prev, int32(i-1))
		next = append(next, int32(i+1))
	}
	next[n-1] = -1
	h := mergeHeap(sc.heap[:0])
	for i := 0; i+1 < n; i++ {
		if m := t.lookup(ids[i], ids[i+1]); m.rank != noRank {
			h = append(h, uint64(m.rank)<<32|uint64(i))
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	for len(h) > 0 {
		it := h[0]
		rank, p := int32(it>>32), int32(uint32(it))
		q := next[p]
		if ids[p] < 0 || q < 0 {
			h.pop() // symbol merged away, or now last
			continue
		}
		// Ranks are unique per pair, so an unchanged rank means an
		// unchanged pair; otherwise the entry is stale.
		m := t.lookup(ids[p], ids[q])
		if m.rank != rank {
			h.pop()
			continue
		}
		ids[p] = m.id
		ids[q] = -1
		nq := next[q]
		next[p] = nq
		// The first new candidate replaces the top entry, which saves a
		// sift; the second is pushed.
		replaced := false
		if nq >= 0 {
			prev[nq] = p
			if m := t.lookup(ids[p], ids[nq]); m.rank != noRank {
				h[0] = uint64(m.rank)<<32 | uint64(p)
				h.down(0)
				replaced = true
			}
		}
		if !replaced {
			h.pop()
		}
		if pp := prev[p]; pp >= 0 {
			if m := t.lookup(ids[pp], ids[p]); m.rank != noRank {
				h.push(uint64(m.rank)<<32 | uint64(pp))
			}
		}
	}
	sc.prev, sc.next, sc.heap = prev, next, h
	for i := int32(0); i >= 0; i = next[i] {
		dst = append(dst, ids[i])
	}
	return dst
}

// scratch holds buffers reused across the words of one Encode call.
type scratch struct {
	out   []int32
	ids   []int32
	pairs []merge
	prev  []int32
	next  []int32
	heap  []uint64
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}
