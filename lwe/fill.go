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
// neither the order nor the workers changes a word). Each row's s and e
// come from its counter's own stream, drawn by up to workers goroutines
// (a stream each). Then M = A s + E and every U_i = H_i S are summed for
// all rows together, sub-tile by sub-tile of the public matrices' tiled
// layout (see tiles), the sub-tiles split over the workers: every row adds
// its h slices from one sub-tile before the next. When the batch reads at
// least touchColumns lambda columns in all (rows h >= lambda: 52 rows at
// lambda 4096, h 80), each sub-tile is first read in order (touch), so it
// streams into L2 once for the batch and each row's slices come from
// there; a smaller batch reads only its rows' slices, prefetched a
// sub-tile ahead (the row-by-row cost of Fill).
//
// The pads must be distinct and of the generator's shape (New), the
// counters must not wrap past 2^64 - 1 and the generator must not be
// forgotten; otherwise nothing is written. If a stream cannot be keyed
// every pad is wiped. The rows' supports and signs, and the streams, are
// wiped before FillBatch returns. Cost: Fill's additions per row, plus one
// ordered read of each public matrix per large batch; memory: 8 h bytes a
// row of secrets (wiped and released) and a 4.3 KiB stream per worker.
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
	g.growBatch(rows, min(workers, rows), workers)
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
	g.sumBatch(&g.a.t, rows, workers, func(r int) []uint32 { return pads[r].M })
	for i, h := range g.hints {
		g.sumBatch(&h.t, rows, workers, func(r int) []uint32 { return pads[r].U[i] })
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

// growBatch makes the scratch for rows rows drawn by drawers streams and
// summed by workers goroutines.
func (g *PadGen) growBatch(rows, drawers, workers int) {
	b := &g.batch
	b.idx, b.sgn = make([]int32, rows*g.p.H), make([]uint32, rows*g.p.H)
	for len(b.drawers) < drawers-1 {
		b.drawers = append(b.drawers, newDrawer(g.name))
	}
	if len(b.sink) < workers {
		b.sink = make([]uint32, workers)
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

// sumBatch adds, for every row r < rows, its signed columns of t into
// dst(r), sub-tile by sub-tile, the sub-tiles split over the workers (see
// FillBatch).
func (g *PadGen) sumBatch(t *tiles, rows, workers int, dst func(int) []uint32) {
	h := g.p.H
	idx, sgn := g.batch.idx[:rows*h], g.batch.sgn[:rows*h]
	// Once for the batch, not per sub-tile and row (a tenth of a batch's
	// time at 2048 rows in go test -bench PadBatch's profile when it was).
	t.checkAll(idx, sgn)
	if !touched(rows, h, g.p.Lambda) {
		parallel(t.subs(), workers, func(_, s0, s1 int) {
			for r := range rows {
				t.addChecked(dst(r), s0, s1, idx[r*h:(r+1)*h], sgn[r*h:(r+1)*h])
			}
		})
		return
	}
	parallel(t.subs(), workers, func(w, s0, s1 int) {
		for s := s0; s < s1; s++ {
			i0, sw, tile := t.sub(s)
			// Read the sub-tile in order first, so the prefetchers bring
			// it into L2 at streaming speed instead of each row's first
			// touch of a slice waiting on memory (10-20 % of a batch of
			// 308 to 2048 rows, interleaved runs of -bench PadBatch).
			g.batch.sink[w] += touch(tile)
			d := dst(0)[i0 : i0+sw]
			for r := range rows {
				next := d // the next row's chunk, prefetched while this one sums
				if r+1 < rows {
					next = dst(r + 1)[i0 : i0+sw]
				}
				addTileNext(d, next, tile, idx[r*h:(r+1)*h], sgn[r*h:(r+1)*h])
				d = next
			}
		}
	})
}

// touched reports whether FillBatch reads every sub-tile in order before
// the rows add from it: when the rows read at least touchColumns lambda
// columns in all. Public: it depends on the batch's shape only.
func touched(rows, h, lambda int) bool { return rows*h >= touchColumns*lambda }

// touchColumns is the columns read, in units of lambda, from which a batch
// touches: the touch streams all lambda columns once, where the rows alone
// read rows h of them as scattered 256-byte runs. Measured at the gate|up
// shape (d_in 4096, d_out 24576, lambda 4096, h 80, one worker, a shared
// 2-core box): untouched 1.5 ms a pad at 16 to 128 rows; touched 2.0 /
// 1.4 / 1.2 / 0.83 ms at 16 / 32 / 64 / 128 rows: so from rows h = lambda
// (52 rows).
const touchColumns = 1

// poolColumns is a Pool's batch in units of lambda columns (TiledRows): a
// touched batch costs 0.83 / 0.56 / 0.39 ms a pad at 128 / 308 / 2048
// rows at the gate|up shape, and a pool holds a batch of pads for each
// crossing, so 6 lambda (308 rows) is where the memory stops paying.
const poolColumns = 6

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

// TiledRows is the batch a Pool fills at once under p (poolColumns lambda
// columns read): each public matrix streams once for that many pads.
func TiledRows(p Params) int { return (poolColumns*p.Lambda + p.H - 1) / p.H }

// PoolSize is the pads a decode crossing's Pool holds at rows rows a
// pass: two batches of TiledRows and 4 passes' rows. Its worker starts a
// batch as soon as TiledRows buffers are back, while TiledRows + 4 rows
// pads are still ready, so a steady decode never waits for a batch (with
// one batch and 4 passes, every 308th token at B = 1 waited for the whole
// refill: 170 ms of gate|up pads at the 8B widths) and each batch is a
// full one.
func PoolSize(p Params, rows int) int { return 2*TiledRows(p) + 4*rows }

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
