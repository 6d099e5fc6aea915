package lwebreak

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gelo/lwe"
)

// MitMOptions shape the meet-in-the-middle search.
type MitMOptions struct {
	// Keys is how many samples the table is keyed on (0: 2), KeyBits the
	// top bits kept of each (0: 16). Keys * KeyBits <= 64.
	Keys, KeyBits int
	// MaxTable bounds the enumerated half (0: 2^24 vectors), so that a
	// parameter set out of reach fails fast instead of filling memory.
	MaxTable int
}

// MitMResult is what one MitM search found and cost.
type MitMResult struct {
	S          []int8
	Table      int // half-weight vectors tabulated
	Lookups    int // half-weight vectors looked up
	Candidates int // table hits checked against every sample
	Elapsed    time.Duration
}

// half is every ternary vector of weight w over n coordinates: support
// (w indices each, ascending) and signs (bit i set: entry i is -1).
type half struct {
	w     int
	idx   []int32
	signs []uint8
}

// enumerate lists the C(n, w) 2^w ternary vectors of weight w, or fails
// when they are more than limit.
func enumerate(n, w, limit int) (*half, error) {
	count := math.Exp(lnChoose(n, w)) * math.Exp2(float64(w))
	if count > float64(limit) {
		return nil, fmt.Errorf("lwebreak: mitm: %.3g vectors of weight %d over %d coordinates exceed the table limit %d", count, w, n, limit)
	}
	hf := &half{w: w}
	comb := make([]int32, w)
	for i := range comb {
		comb[i] = int32(i)
	}
	for {
		for sg := range 1 << w {
			hf.idx = append(hf.idx, comb...)
			hf.signs = append(hf.signs, uint8(sg))
		}
		// next combination in lexicographic order
		i := w - 1
		for i >= 0 && int(comb[i]) == n-w+i {
			i--
		}
		if i < 0 {
			return hf, nil
		}
		comb[i]++
		for j := i + 1; j < w; j++ {
			comb[j] = comb[j-1] + 1
		}
	}
}

func (hf *half) len() int { return len(hf.signs) }

// product writes (A v)_r for the key samples rows of vector v (cols: A's
// columns).
func (hf *half) product(cols [][]uint32, v int, rows []int, dst []uint32) {
	clear(dst)
	sg := hf.signs[v]
	for t, k := range hf.idx[v*hf.w : (v+1)*hf.w] {
		col := cols[k]
		neg := -uint32(sg >> t & 1) // 0 or all ones
		for j, r := range rows {
			dst[j] += col[r] ^ neg + neg&1
		}
	}
}

// addTo adds vector v into s.
func (hf *half) addTo(v int, s []int8) {
	sg := hf.signs[v]
	for t, k := range hf.idx[v*hf.w : (v+1)*hf.w] {
		s[k] += 1 - 2*int8(sg>>t&1)
	}
}

type tableEntry struct {
	key uint64
	id  int32
}

// MitM recovers a sparse ternary s of weight h from samples b = A s + e
// (|e_i| <= 2) by meeting in the middle [HG07]: every s of weight h is
// v + u for v of weight floor(h/2) and u of weight ceil(h/2) with disjoint
// supports (C(h, h/2) ways, any one suffices), and A v = b - A u - e. It
// tabulates the top KeyBits of (A v)_r on Keys samples for every v, then
// for every u looks up the buckets of b_r - (A u)_r - 2 and + 2 (the error
// moves a word by at most 2, so these two buckets hold (A v)_r; a bucket is
// 2^(32 - KeyBits) wide), and checks each hit v + u against all samples
// (Solves). Exact: it finds s whenever the enumeration fits MaxTable. Cost:
// C(n, h/2) 2^(h/2) per half (333,312 vectors at n 64, h 6).
func MitM(a *lwe.Public, b []uint32, h int, opt MitMOptions) (MitMResult, error) {
	keys, kb := opt.Keys, opt.KeyBits
	if keys <= 0 {
		keys = 2
	}
	if kb <= 0 {
		kb = 16
	}
	limit := opt.MaxTable
	if limit <= 0 {
		limit = 1 << 24
	}
	switch {
	case len(b) != a.In:
		return MitMResult{}, fmt.Errorf("lwebreak: mitm: %d samples for A with %d rows", len(b), a.In)
	case keys > a.In || keys*kb > 64 || kb > 30 || h < 2 || h > a.Lambda:
		return MitMResult{}, fmt.Errorf("lwebreak: mitm: %d keys of %d bits, h %d, over %d samples and lambda %d", keys, kb, h, a.In, a.Lambda)
	}
	start := time.Now()
	cols := make([][]uint32, a.Lambda) // unpacked once: product reads them per vector
	for k := range cols {
		cols[k] = a.Col(k)
	}
	w1 := h / 2
	tab, err := enumerate(a.Lambda, w1, limit)
	if err != nil {
		return MitMResult{}, err
	}
	look := tab
	if h-w1 != w1 {
		if look, err = enumerate(a.Lambda, h-w1, limit); err != nil {
			return MitMResult{}, err
		}
	}
	rows := make([]int, keys)
	for j := range rows {
		rows[j] = j
	}
	shift := uint(32 - kb)
	key := func(words []uint32) uint64 {
		var k uint64
		for _, x := range words {
			k = k<<kb | uint64(x>>shift)
		}
		return k
	}
	res := MitMResult{Table: tab.len(), Lookups: look.len()}
	entries := make([]tableEntry, tab.len())
	buf := make([]uint32, keys)
	for v := range entries {
		tab.product(cols, v, rows, buf)
		entries[v] = tableEntry{key: key(buf), id: int32(v)}
	}
	slices.SortFunc(entries, func(x, y tableEntry) int {
		switch {
		case x.key < y.key:
			return -1
		case x.key > y.key:
			return 1
		}
		return 0
	})
	y, sub := make([]uint32, keys), make([]uint32, keys)
	s := make([]int8, a.Lambda)
	for u := range look.len() {
		look.product(cols, u, rows, buf)
		for j, r := range rows {
			y[j] = b[r] - buf[j]
		}
		// every combination of the low and high bucket per key sample
		for mask := range 1 << keys {
			dup := false
			for j := range keys {
				lo, hi := (y[j]-errBound)>>shift, (y[j]+errBound)>>shift
				if mask>>j&1 == 1 {
					if lo == hi {
						dup = true // the same bucket as with bit j clear
					}
					sub[j] = y[j] + errBound
				} else {
					sub[j] = y[j] - errBound
				}
			}
			if dup {
				continue
			}
			kk := key(sub)
			i, _ := slices.BinarySearchFunc(entries, kk, func(e tableEntry, k uint64) int {
				switch {
				case e.key < k:
					return -1
				case e.key > k:
					return 1
				}
				return 0
			})
			for ; i < len(entries) && entries[i].key == kk; i++ {
				res.Candidates++
				clear(s)
				tab.addTo(int(entries[i].id), s)
				look.addTo(u, s)
				if Solves(a, b, s) {
					res.S = slices.Clone(s)
					res.Elapsed = time.Since(start)
					return res, nil
				}
			}
		}
	}
	res.Elapsed = time.Since(start)
	return res, fmt.Errorf("lwebreak: mitm: %d x %d vectors searched: %w", res.Table, res.Lookups, errNotFound)
}

// lnChoose is ln C(n, k).
func lnChoose(n, k int) float64 {
	if k < 0 || k > n {
		return math.Inf(-1)
	}
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
