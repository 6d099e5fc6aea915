package lwe

// tiles holds a public matrix of lambda columns of n words (A's columns,
// or a hint's) in the layout the pads' column sums read: sub-tile s covers
// words [s w, s w + sw) of every column (w = tileWords(lambda), sw = w but
// for a narrower last one) and is one run of memory, lambda slices of sw
// words, column k's at k sw. A batch of pads adds every row's h slices
// from one sub-tile (1 MiB at lambda 4096: in L2) before the next, so the
// matrix streams from memory once a batch, in order, and no copy is made:
// held column by column, the same words would have to be copied into such
// sub-tiles for every batch (a column's slices lie a column apart, in
// other pages and in the same few L2 sets), which cost up to 45 % of a
// pool's batch of 308 pads at the Qwen3-8B widths.
//
// Row by row the layout is worse: a pad's h columns are read as 256-byte
// runs a sub-tile apart, not as h streams, measured 1.6-2x slower than
// column-major at the 8B gate|up shape (1.0 against 0.55 ms a pad). Decode
// pads come in pool batches; a short prompt's pads are the ones that pay.
type tiles struct {
	n, lambda, w int
	p            []uint32
}

// newTiles allocates an all-zero matrix of lambda columns of n words.
func newTiles(n, lambda int) tiles { return newTilesW(n, lambda, tileWords(lambda)) }

// newTilesW is newTiles with sub-tiles of w >= 1 words (tests try others).
func newTilesW(n, lambda, w int) tiles {
	return tiles{n: n, lambda: lambda, w: w, p: make([]uint32, n*lambda)}
}

// packRows returns the matrix whose column k is row k of rows (lambda rows
// of n words, row-major: the form the device returns a hint in).
func packRows(rows []uint32, n, lambda int) tiles {
	return packRowsW(rows, n, lambda, tileWords(lambda))
}

// packRowsW is packRows with sub-tiles of w words.
func packRowsW(rows []uint32, n, lambda, w int) tiles {
	t := newTilesW(n, lambda, w)
	for k := range lambda {
		t.setCol(k, rows[k*n:(k+1)*n])
	}
	return t
}

// subs is the number of sub-tiles.
func (t *tiles) subs() int { return (t.n + t.w - 1) / t.w }

// sub returns sub-tile s: its first word i0, its width sw and its words.
func (t *tiles) sub(s int) (i0, sw int, tile []uint32) {
	i0 = s * t.w
	sw = min(t.w, t.n-i0)
	return i0, sw, t.p[t.lambda*i0 : t.lambda*(i0+sw)]
}

// setCol writes column k (n words).
func (t *tiles) setCol(k int, col []uint32) {
	for s := range t.subs() {
		i0, sw, tile := t.sub(s)
		copy(tile[k*sw:(k+1)*sw], col[i0:i0+sw])
	}
}

// col copies column k into dst (n words).
func (t *tiles) col(k int, dst []uint32) {
	for s := range t.subs() {
		i0, sw, tile := t.sub(s)
		copy(dst[i0:i0+sw], tile[k*sw:(k+1)*sw])
	}
}

// rows returns the matrix unpacked, column k as row k of lambda rows of n
// words (a new slice).
func (t *tiles) rows() []uint32 {
	out := make([]uint32, t.n*t.lambda)
	for k := range t.lambda {
		t.col(k, out[k*t.n:(k+1)*t.n])
	}
	return out
}

// checkAll panics unless every idx_k (k < len(idx) <= len(sgn)) is a
// column: one check for every sub-tile (each holds lambda slices of sw
// words at stride sw, so the condition is idx_k < lambda for all).
func (t *tiles) checkAll(idx []int32, sgn []uint32) {
	checkColumns(t.lambda*t.w, t.w, 0, t.w, idx, sgn)
}

// addColumns sets dst += sum_k sgn_k col_{idx_k} mod 2^32 (dst: n words),
// sub-tile by sub-tile; each sub-tile's sum prefetches the same slices of
// the next (see addTilePf).
func (t *tiles) addColumns(dst []uint32, idx []int32, sgn []uint32) {
	if len(idx) == 0 {
		return
	}
	t.checkAll(idx, sgn)
	t.addChecked(dst, 0, t.subs(), idx, sgn)
}

// addChecked is addColumns over sub-tiles [s0, s1) once checkAll has
// passed for idx.
func (t *tiles) addChecked(dst []uint32, s0, s1 int, idx []int32, sgn []uint32) {
	last := t.subs() - 1
	for s := s0; s < s1; s++ {
		i0, sw, tile := t.sub(s)
		pf := 0
		if s+1 < last || (s+1 == last && t.n%t.w == 0) { // the next sub-tile is as wide
			pf = 4 * t.lambda * t.w
		}
		addTilePf(dst[i0:i0+sw], tile, sw, idx, sgn, pf)
	}
}

// colCombine sets dst[j] = sum_k rs[j][k] col_k mod 2^32 (dst[j]: n
// words) for every j in one pass over the matrix: each sub-tile's slice of
// a column is read once and used len(rs) times from L1 (a pass per r
// streamed the whole matrix from memory each time), the sub-tiles split
// over workers. Exact, so neither order nor workers changes a word.
func (t *tiles) colCombine(dst, rs [][]uint32, workers int) {
	for _, d := range dst {
		clear(d[:t.n])
	}
	parallel(t.subs(), workers, func(_, s0, s1 int) {
		for s := s0; s < s1; s++ {
			i0, sw, tile := t.sub(s)
			for k := range t.lambda {
				col := tile[k*sw : (k+1)*sw]
				for j, r := range rs {
					rk := r[k]
					d := dst[j][i0 : i0+sw]
					d = d[:len(col)]
					for i, v := range col {
						d[i] += rk * v
					}
				}
			}
		}
	})
}
