package lwe

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// packBudget is the bytes of one sub-tile of FillBatch (lambda column
// slices): half of a 2 MiB L2, so it stays there while every row of the
// batch reads its h slices from it.
const packBudget = 1 << 20

// tileWords is FillBatch's sub-tile width for lambda columns: the widest
// multiple of 8 words whose lambda column slices fit packBudget, between 8
// and colBlock (64 at lambda = 4096, addTile64's width).
func tileWords(lambda int) int {
	return min(colBlock, max(8, packBudget/(4*lambda)&^7))
}

// batchScratch is FillBatch's scratch: every row's support and signs
// (secret: wiped and released after each batch, 8 h bytes a row) and the
// streams of workers past the first (kept between batches, each keyed per
// counter and wiped after each batch).
type batchScratch struct {
	idx     []int32
	sgn     []uint32
	drawers []*drawer // worker w >= 1 draws with drawers[w-1]
	sink    []uint32  // each worker's sum of the public words touch read
}

// FillBatch writes into pads[r] the pad of counter start + r, bit for bit
// what Fill(start + r, pads[r]) writes (the sums are exact mod 2^32, so
// neither the tiling nor workers changes a word). Each row's s and e come
// from its counter's own stream, drawn by up to workers goroutines (a
// stream each). Then M = A s + E and every U_i = H_i S are summed for all
// rows together. When the batch reads at least tileColumns lambda columns
// in all (rows h >= 6 lambda: 308 rows at lambda 4096, h 80), the sums are
// tiled over the output words: each page of A^T or H_i^T (a 4 KiB run of
// every column) is copied once into sub-tiles of tileWords words, and
// each sub-tile (1 MiB at lambda 4096) stays in L2 while every row adds
// its h signed slices from it, so each public matrix is streamed from
// memory once per batch instead of once per row; sub-tiles and the copy
// are split over the workers. Smaller batches sum each row as Fill does.
//
// The pads must be distinct and of the generator's shape (New), the
// counters must not wrap past 2^64 - 1 and the generator must not be
// forgotten; otherwise nothing is written. If a stream cannot be keyed
// every pad is wiped. The rows' supports and signs, and the streams, are
// wiped before FillBatch returns. Cost: Fill's additions per row, plus one
// copy of each public matrix per tiled batch; memory: 8 h bytes a row of
// secrets (wiped and released), a 4.3 KiB stream per worker and, shared
// through a pool, lambda colBlock 4 bytes of copied public words (16 MiB
// at lambda 4096).
func (g *PadGen) FillBatch(start uint64, pads []*Pad, workers int) error {
	return g.fillBatch(start, 1, pads, workers)
}

// fillBatch is FillBatch for the counters start + r step (step >= 1): a
// Pool worker's counters are its worker count apart.
func (g *PadGen) fillBatch(start, step uint64, pads []*Pad, workers int) error {
	if err := g.checkBatch(start, step, pads); err != nil {
		return err
	}
	rows := len(pads)
	if rows == 0 {
		return nil
	}
	workers = max(1, workers)
	g.growBatch(rows, min(workers, rows))
	defer g.wipeBatch()
	for _, p := range pads { // being overwritten: not fresh until the end
		p.mFresh = false
		clear(p.uFresh)
	}
	if err := g.drawBatch(start, step, pads, workers); err != nil {
		for _, p := range pads {
			p.Wipe()
		}
		return err
	}
	g.sumBatch(g.a.T, g.a.In, rows, workers, func(r int) []uint32 { return pads[r].M })
	for i, h := range g.hints {
		g.sumBatch(h.T, h.Out, rows, workers, func(r int) []uint32 { return pads[r].U[i] })
	}
	for r, p := range pads {
		p.Counter, p.mFresh, p.err = start+uint64(r)*step, true, nil
		for i := range p.uFresh {
			p.uFresh[i] = true
		}
	}
	return nil
}

// checkBatch refuses a batch FillBatch cannot fill without harm: a pad of
// another shape, one pad twice (its words would be summed twice, in
// parallel), counters past 2^64 - 1 (counter 0 again: a reused pad) or a
// forgotten generator.
func (g *PadGen) checkBatch(start, step uint64, pads []*Pad) error {
	rows := len(pads)
	if rows == 0 {
		return nil
	}
	if g.key == nil {
		return fmt.Errorf("lwe: pads %d..: the generator's key is forgotten", start)
	}
	if step == 0 || uint64(rows-1) > (math.MaxUint64-start)/step {
		return fmt.Errorf("lwe: pads %d..: %d counters wrap past 2^64 - 1", start, rows)
	}
	seen := make(map[*Pad]int, rows)
	for r, p := range pads {
		if !g.fits(p) {
			return fmt.Errorf("lwe: pad %d (row %d of a batch): shape does not match its generator", start+uint64(r)*step, r)
		}
		if q, ok := seen[p]; ok {
			return fmt.Errorf("lwe: pad %d (row %d of a batch): the same pad as row %d", start+uint64(r)*step, r, q)
		}
		seen[p] = r
	}
	return nil
}

// growBatch makes the scratch for rows rows drawn by drawers streams.
func (g *PadGen) growBatch(rows, drawers int) {
	b := &g.batch
	b.idx, b.sgn = make([]int32, rows*g.p.H), make([]uint32, rows*g.p.H)
	for len(b.drawers) < drawers-1 {
		b.drawers = append(b.drawers, newDrawer(g.name))
	}
	if len(b.sink) < drawers {
		b.sink = make([]uint32, drawers)
	}
}

// wipeBatch clears and releases every row's support and signs (a
// generator per crossing keeping a prefill's would hold megabytes each)
// and wipes the workers' streams.
func (g *PadGen) wipeBatch() {
	clear(g.batch.idx)
	clear(g.batch.sgn)
	g.batch.idx, g.batch.sgn = nil, nil
	for _, d := range g.batch.drawers {
		d.s.Wipe()
	}
	g.d.s.Wipe()
}

// drawBatch draws every row's s (into the batch scratch) and e (into
// pads[r].M), and clears each U, over up to workers goroutines.
func (g *PadGen) drawBatch(start, step uint64, pads []*Pad, workers int) error {
	h := g.p.H
	errs := make([]error, workers)
	parallel(len(pads), workers, func(w, r0, r1 int) {
		d := &g.d
		if w > 0 {
			d = g.batch.drawers[w-1]
		}
		for r := r0; r < r1; r++ {
			p := pads[r]
			if err := d.draw(g.key, g.p.Lambda, start+uint64(r)*step, g.batch.idx[r*h:(r+1)*h], g.batch.sgn[r*h:(r+1)*h], p.M); err != nil {
				errs[w] = err
				return
			}
			for i := range p.U {
				clear(p.U[i])
			}
		}
		d.s.Wipe()
	})
	return errors.Join(errs...)
}

// sumBatch adds, for every row r < rows, its signed columns of t (lambda
// columns of n words) into dst(r): tiled and packed when the batch reads
// enough columns (tiled), row by row otherwise (see FillBatch).
//
// The tiling has two levels, both for the memory system: a page tile of
// about colBlock words (a 4 KiB run of each column, so the copy reads
// whole pages in order, as Fill does) is split while it is copied into
// sub-tiles of g.tile words, each contiguous (lambda slices, 1 MiB at
// lambda 4096): one sub-tile stays in L2 while every row adds its h
// slices from it. A single g.tile-wide copy instead reads one 256-byte
// run per page, a TLB miss each: three times Fill's cost per byte.
func (g *PadGen) sumBatch(t []uint32, n, rows, workers int, dst func(int) []uint32) {
	h, lambda := g.p.H, g.p.Lambda
	idx, sgn := g.batch.idx, g.batch.sgn
	if !tiled(rows, h, lambda) {
		parallel(rows, workers, func(_, r0, r1 int) {
			for r := r0; r < r1; r++ {
				addColumns(dst(r), t, idx[r*h:(r+1)*h], sgn[r*h:(r+1)*h])
			}
		})
		return
	}
	sub := min(g.tile, n)
	page := min(n, max(sub, colBlock/sub*sub))
	subs := (page + sub - 1) / sub
	buf := getPack(lambda * sub * subs)
	defer putPack(buf)
	// Every sub-tile is lambda slices of sw <= sub words at stride sw, so
	// "column idx lies inside it" is idx < lambda for all of them: checked
	// once for the batch here, not per sub-tile (a tenth of the batch's
	// time at 2048 rows, in go test -bench PadBatch's profile).
	checkColumns(lambda*sub, sub, 0, sub, idx[:rows*h], sgn[:rows*h])
	for p0 := 0; p0 < n; p0 += page {
		width := min(page, n-p0)
		subs := (width + sub - 1) / sub
		parallel(lambda, workers, func(_, k0, k1 int) {
			packPage(buf, t, n, p0, width, sub, lambda, k0, k1)
		})
		parallel(subs, workers, func(w, s0, s1 int) {
			for s := s0; s < s1; s++ {
				i0 := p0 + s*sub
				sw := min(sub, n-i0)
				tile := buf[lambda*sub*s : lambda*sub*s+lambda*sw]
				// The copy left the sub-tile in L3 (a page of them is
				// 16 MiB): read it in order first, so the prefetchers
				// bring it into L2 at streaming speed instead of each row's
				// first touch of a slice waiting on L3 (10-20 % of a batch
				// of 308 to 2048 rows, interleaved runs of -bench PadBatch).
				g.batch.sink[w] += touch(tile)
				for r := range rows {
					addTileChecked(dst(r)[i0:i0+sw], tile, 0, sw, idx[r*h:(r+1)*h], sgn[r*h:(r+1)*h])
				}
			}
		})
	}
}

// tiled reports whether FillBatch packs tiles for rows rows: when they
// read at least tileColumns lambda columns in all. Below that, streaming
// each row's h columns (Fill's way) costs less than copying the whole
// matrix once. Public: it depends on the batch's shape only.
func tiled(rows, h, lambda int) bool { return rows*h >= tileColumns*lambda }

// tileColumns is the columns read, in units of lambda, from which a batch
// is tiled: the copy streams all lambda columns once and writes them
// again, where Fill streams only h of them per row. Measured at the qkv
// shape (d_in 4096, d_out 6144, lambda 4096, h 80, one worker, a shared
// 2-core box): tiled 78 / 93 / 138 / 407 ms against Fill's 42 / 84 / 153
// / 594 ms at 128 / 256 / 512 / 2048 rows, so tiling pays from about 300
// rows, rows h = 6 lambda.
const tileColumns = 6

// packPage copies words [p0, p0 + width) of columns k0..k1-1 of t (n
// words each) into buf as sub-tiles of sub words: sub-tile s, at
// buf[lambda sub s:], holds its sw words of column k at k sw, contiguous.
func packPage(buf, t []uint32, n, p0, width, sub, lambda, k0, k1 int) {
	for k := k0; k < k1; k++ {
		src := t[k*n+p0 : k*n+p0+width]
		for s, i := 0, 0; i < width; s, i = s+1, i+sub {
			sw := min(sub, width-i)
			copy(buf[lambda*sub*s+k*sw:lambda*sub*s+(k+1)*sw], src[i:i+sw])
		}
	}
}

// packBufs recycles the packed pages (public words, 16 MiB at lambda
// 4096) across batches and generators: a generator per crossing keeping
// its own would hold gigabytes at full depth.
var packBufs sync.Pool

func getPack(words int) []uint32 {
	if p, ok := packBufs.Get().(*[]uint32); ok && cap(*p) >= words {
		return (*p)[:words]
	}
	return make([]uint32, words)
}

func putPack(b []uint32) { packBufs.Put(&b) }

// parallel runs f(w, i0, i1) over [0, count) split into up to workers
// contiguous ranges, worker 0 in the calling goroutine, and waits.
func parallel(count, workers int, f func(w, i0, i1 int)) {
	workers = max(1, min(workers, count))
	per := (count + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 1; w*per < count; w++ {
		wg.Go(func() { f(w, w*per, min(count, (w+1)*per)) })
	}
	f(0, 0, min(count, per))
	wg.Wait()
}

// TiledRows is the smallest batch FillBatch tiles under p: a Pool that
// can fill this many pads at once streams its public matrices once per
// batch.
func TiledRows(p Params) int { return (tileColumns*p.Lambda + p.H - 1) / p.H }

// touch reads one word of each 64-byte line of t, in order (public words:
// the addresses do not depend on a secret), and returns their sum so the
// loads are kept.
func touch(t []uint32) uint32 {
	var x uint32
	for i := 0; i < len(t); i += 16 {
		x += t[i]
	}
	return x
}
