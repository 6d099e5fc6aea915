package lwe

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// packBudget is the bytes of public columns FillBatch packs per worker and
// tile: half of a 2 MiB L2, so the packed tile stays there while every
// row of the batch reads its h columns from it.
const packBudget = 1 << 20

// tileWords is FillBatch's tile width for lambda columns: the widest
// multiple of 8 words whose lambda column slices fit packBudget, between 8
// and colBlock (64 at lambda = 4096).
func tileWords(lambda int) int {
	return min(colBlock, max(8, packBudget/(4*lambda)&^7))
}

// batchScratch is what FillBatch keeps between calls: every row's support
// and signs (secret: wiped after each batch), the streams of workers past
// the first (keyed per counter, wiped after each batch) and each worker's
// packed tile (public words).
type batchScratch struct {
	idx     []int32
	sgn     []uint32
	drawers []*drawer // worker w >= 1 draws with drawers[w-1]
	packs   [][]uint32
}

// FillBatch writes into pads[r] the pad of counter start + r, bit for bit
// what Fill(start + r, pads[r]) writes (the sums are exact mod 2^32, so
// neither the tiling nor workers changes a word). Each row's s and e come
// from its counter's own stream, drawn by up to workers goroutines (a
// stream each). Then M = A s + E and every U_i = H_i S are summed for all
// rows together: when the batch reads at least lambda columns in all
// (rows h >= lambda), tiled over the output words, each tile of A^T or
// H_i^T (lambda slices of tileWords words) copied once into a contiguous
// buffer that stays in L2 while every row adds its h signed slices from
// it, so each public matrix is streamed from memory once per batch instead
// of once per row; tiles are split over the workers. Smaller batches sum
// each row as Fill does.
//
// The pads must be distinct, of the generator's shape (New), and the
// counters must not wrap past 2^64 - 1; otherwise nothing is written. If
// a stream cannot be keyed (after Forget) every pad is wiped. The rows'
// supports and signs are wiped before FillBatch returns. Cost: Fill's
// additions per row, plus a copy of each public matrix per batch when
// tiled; memory: 8 h bytes a row of secrets (wiped) and, per worker,
// lambda tileWords 4 bytes of packed columns (1 MiB).
func (g *PadGen) FillBatch(start uint64, pads []*Pad, workers int) error {
	if err := g.checkBatch(start, pads); err != nil {
		return err
	}
	rows := len(pads)
	if rows == 0 {
		return nil
	}
	workers = max(1, workers)
	g.growBatch(rows, workers)
	defer g.wipeBatch()
	for _, p := range pads { // being overwritten: not fresh until the end
		p.mFresh = false
		clear(p.uFresh)
	}
	if err := g.drawBatch(start, pads, workers); err != nil {
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
		p.Counter, p.mFresh, p.err = start+uint64(r), true, nil
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
func (g *PadGen) checkBatch(start uint64, pads []*Pad) error {
	rows := len(pads)
	if rows == 0 {
		return nil
	}
	if g.key == nil {
		return fmt.Errorf("lwe: pads %d..: the generator's key is forgotten", start)
	}
	if uint64(rows-1) > math.MaxUint64-start {
		return fmt.Errorf("lwe: pads %d..: %d counters wrap past 2^64 - 1", start, rows)
	}
	seen := make(map[*Pad]int, rows)
	for r, p := range pads {
		if !g.fits(p) {
			return fmt.Errorf("lwe: pad %d (row %d of a batch): shape does not match its generator", start+uint64(r), r)
		}
		if q, ok := seen[p]; ok {
			return fmt.Errorf("lwe: pad %d (row %d of a batch): the same pad as row %d", start+uint64(r), r, q)
		}
		seen[p] = r
	}
	return nil
}

// growBatch sizes the scratch for rows rows and workers workers.
func (g *PadGen) growBatch(rows, workers int) {
	b := &g.batch
	if n := rows * g.p.H; len(b.idx) < n {
		b.idx, b.sgn = make([]int32, n), make([]uint32, n)
	}
	for len(b.drawers) < workers-1 {
		b.drawers = append(b.drawers, newDrawer(g.name))
	}
	for len(b.packs) < workers {
		b.packs = append(b.packs, nil) // allocated by the worker that tiles
	}
}

// wipeBatch clears every row's support and signs and the workers' streams.
func (g *PadGen) wipeBatch() {
	clear(g.batch.idx)
	clear(g.batch.sgn)
	for _, d := range g.batch.drawers {
		d.s.Wipe()
	}
	g.d.s.Wipe()
}

// drawBatch draws every row's s (into the batch scratch) and e (into
// pads[r].M), and clears each U, over up to workers goroutines.
func (g *PadGen) drawBatch(start uint64, pads []*Pad, workers int) error {
	h := g.p.H
	errs := make([]error, workers)
	parallel(len(pads), workers, func(w, r0, r1 int) {
		d := &g.d
		if w > 0 {
			d = g.batch.drawers[w-1]
		}
		for r := r0; r < r1; r++ {
			p := pads[r]
			if err := d.draw(g.key, g.p.Lambda, start+uint64(r), g.batch.idx[r*h:(r+1)*h], g.batch.sgn[r*h:(r+1)*h], p.M); err != nil {
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
// at least lambda columns, row by row otherwise (see FillBatch).
func (g *PadGen) sumBatch(t []uint32, n, rows, workers int, dst func(int) []uint32) {
	h, lambda := g.p.H, g.p.Lambda
	idx, sgn := g.batch.idx, g.batch.sgn
	if rows*h < lambda {
		parallel(rows, workers, func(_, r0, r1 int) {
			for r := r0; r < r1; r++ {
				addColumns(dst(r), t, idx[r*h:(r+1)*h], sgn[r*h:(r+1)*h])
			}
		})
		return
	}
	tw := min(g.tile, n)
	tiles := (n + tw - 1) / tw
	parallel(tiles, workers, func(w, t0, t1 int) {
		if len(g.batch.packs[w]) < lambda*tw {
			g.batch.packs[w] = make([]uint32, lambda*tw)
		}
		for tile := t0; tile < t1; tile++ {
			i0 := tile * tw
			width := min(tw, n-i0)
			buf := g.batch.packs[w][:lambda*width]
			packTile(buf, t, n, i0, width)
			for r := range rows {
				addColumnsAt(dst(r)[i0:i0+width], buf, 0, width, idx[r*h:(r+1)*h], sgn[r*h:(r+1)*h])
			}
		}
	})
}

// packTile copies words [i0, i0 + width) of each of the columns of t (of n
// words each) into buf, column after column: the tile's public words,
// contiguous, so that reading them back does not hit the cache-set
// conflicts of a power-of-two column stride.
func packTile(buf, t []uint32, n, i0, width int) {
	for k := range len(buf) / width {
		copy(buf[k*width:(k+1)*width], t[k*n+i0:k*n+i0+width])
	}
}

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
