package lwe

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// batchCase is one generator shape for FillBatch's tests.
type batchCase struct {
	lambda, h, in int
	outs          []int // the hints' widths
}

func (c batchCase) String() string {
	return fmt.Sprintf("lambda%d-h%d-in%d-outs%v", c.lambda, c.h, c.in, c.outs)
}

// batchScheme builds A, hints of random-looking words (Fill and FillBatch
// sum any words alike; the true hints are TestPadDefinition's) and a
// generator for c.
func batchScheme(t testing.TB, c batchCase) *PadGen {
	t.Helper()
	p := Params{Lambda: c.lambda, H: c.h, Delta: 16}
	a, err := NewPublic(testSeed(9), c.in, c.lambda)
	if err != nil {
		t.Fatal(err)
	}
	var hints []*Hint
	for i, out := range c.outs {
		b, _ := NewPublic(testSeed(byte(20+i)), out, c.lambda) // words to sum
		h, err := NewHint(out, c.lambda, b.Rows())
		if err != nil {
			t.Fatal(err)
		}
		hints = append(hints, h)
	}
	g, err := NewPadGen(p, a, hints, testKey, "batch")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestFillBatchEqualsFill: FillBatch's pads equal Fill's word for word (M,
// every U, the counter, freshness) for shapes with odd widths, h = lambda,
// no hint and two hints; rows 1..300 (below and above the tiling's
// threshold, both paths checked to run), workers 1..4 and sub-tile widths
// of one sub-tile, 64 (addTile64's), several and a ragged last one, in
// one or two pages. Its scratch holds no secret afterwards.
func TestFillBatchEqualsFill(t *testing.T) {
	cases := []batchCase{
		{lambda: 40, h: 7, in: 24, outs: []int{6, 3}},
		{lambda: 100, h: 70, in: 21, outs: []int{17, 5}},
		{lambda: 16, h: 16, in: 9, outs: nil},
		{lambda: 4096, h: 80, in: 33, outs: []int{9}},
		{lambda: 64, h: 8, in: 1031, outs: []int{77}},
	}
	paths := map[bool]int{} // batches by touched()
	for _, c := range cases {
		g := batchScheme(t, c)
		widths := []int{tileWords(c.lambda), 64, 8, 5}
		for _, rows := range []int{1, 2, 3, 17, 64, 300} {
			const start = 1000
			want := make([]*Pad, rows)
			for r := range want {
				want[r] = g.New()
				if err := g.Fill(start+uint64(r), want[r]); err != nil {
					t.Fatal(err)
				}
			}
			paths[touched(rows, c.h, c.lambda)]++
			for _, tile := range widths {
				retile(g, tile)
				for r := range rows { // the row-by-row path over this layout
					p := g.New()
					if err := g.Fill(start+uint64(r), p); err != nil {
						t.Fatal(err)
					}
					samePad(t, fmt.Sprintf("%v/tile%d: Fill row %d", c, tile, r), p, want[r])
				}
				for workers := 1; workers <= 4; workers++ {
					name := fmt.Sprintf("%v/rows%d/tile%d/workers%d", c, rows, tile, workers)
					got := make([]*Pad, rows)
					for r := range got {
						got[r] = g.New()
						fillWords(got[r], 0xdead) // overwritten, not added to
					}
					if err := g.FillBatch(start, got, workers); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					for r := range rows {
						samePad(t, fmt.Sprintf("%s: row %d", name, r), got[r], want[r])
					}
					if g.batch.idx != nil || g.batch.sgn != nil {
						t.Fatalf("%s: supports or signs kept after the batch", name)
					}
					if len(g.batch.drawers) > 3 {
						t.Fatalf("%s: %d worker streams for at most 4 workers", name, len(g.batch.drawers))
					}
					for i, d := range g.batch.drawers {
						if d.s.Live() {
							t.Fatalf("%s: worker %d's stream left keyed", name, i+1)
						}
					}
				}
			}
			retile(g, tileWords(c.lambda))
		}
		g.Forget()
	}
	if paths[true] == 0 || paths[false] == 0 {
		t.Fatalf("batches tiled / not tiled: %d / %d: both paths must run", paths[true], paths[false])
	}
}

// retile repacks g's public matrices (A and every hint) into sub-tiles of
// w words: the same columns in another layout.
func retile(g *PadGen, w int) {
	for _, t := range append([]*tiles{&g.a.t}, hintTiles(g.hints)...) {
		*t = packRowsW(t.rows(), t.n, t.lambda, w)
	}
}

func hintTiles(hs []*Hint) []*tiles {
	var ts []*tiles
	for _, h := range hs {
		ts = append(ts, &h.t)
	}
	return ts
}

// TestWipeBatch: the batch's supports and signs are zeroed before they are
// released, and every worker's stream is unkeyed.
func TestWipeBatch(t *testing.T) {
	g := batchScheme(t, batchCase{lambda: 40, h: 7, in: 24})
	g.growBatch(3, 2, 2)
	idx, sgn := g.batch.idx, g.batch.sgn
	for i := range idx {
		idx[i], sgn[i] = int32(i+1), 0xffffffff
	}
	d := g.batch.drawers[0]
	if err := d.draw(g.key, 40, 5, idx[:7], sgn[:7], make([]uint32, 24)); err != nil || !d.s.Live() {
		t.Fatalf("draw: %v, stream keyed %v", err, d.s.Live())
	}
	g.wipeBatch()
	if slices.ContainsFunc(idx, func(v int32) bool { return v != 0 }) || slices.ContainsFunc(sgn, func(v uint32) bool { return v != 0 }) {
		t.Fatal("supports or signs not zeroed")
	}
	if g.batch.idx != nil || d.s.Live() {
		t.Fatal("scratch kept or a worker's stream keyed after the wipe")
	}
}

// samePad fails unless got is want's pad: counter, M, every U and their
// freshness.
func samePad(t *testing.T, what string, got, want *Pad) {
	t.Helper()
	if got.Counter != want.Counter || got.mFresh != want.mFresh || !slices.Equal(got.uFresh, want.uFresh) {
		t.Fatalf("%s: counter %d fresh %v %v, want %d %v %v", what, got.Counter, got.mFresh, got.uFresh, want.Counter, want.mFresh, want.uFresh)
	}
	if i := firstDiff(got.M, want.M); i >= 0 {
		t.Fatalf("%s: M[%d] = %#x, Fill's %#x", what, i, got.M[i], want.M[i])
	}
	for u := range want.U {
		if i := firstDiff(got.U[u], want.U[u]); i >= 0 {
			t.Fatalf("%s: U[%d][%d] = %#x, Fill's %#x", what, u, i, got.U[u][i], want.U[u][i])
		}
	}
}

// TestFillBatchRefuses: a batch with a pad of another shape (short M, a
// missing or short U, nil), one pad twice, counters that wrap, or a
// forgotten generator is refused by a message that names it, and no pad
// of the batch is written or made fresh.
func TestFillBatchRefuses(t *testing.T) {
	g := batchScheme(t, batchCase{lambda: 40, h: 7, in: 24, outs: []int{6, 3}})
	twice := g.New()
	for _, tc := range []struct {
		name  string
		start uint64
		bad   func() *Pad // the batch's last pad
		want  string
	}{
		{"short M", 0, func() *Pad { p := g.New(); p.M = p.M[:23]; return p }, "shape does not match"},
		{"missing U", 0, func() *Pad { p := g.New(); p.U = p.U[:1]; return p }, "shape does not match"},
		{"short U", 0, func() *Pad { p := g.New(); p.U[1] = p.U[1][:2]; return p }, "shape does not match"},
		{"nil", 0, func() *Pad { return nil }, "shape does not match"},
		{"twice", 0, func() *Pad { return twice }, "the same pad as row 0"},
		{"wrap", 1<<64 - 2, func() *Pad { return g.New() }, "wrap past 2^64 - 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pads := []*Pad{twice, g.New(), tc.bad()}
			err := g.FillBatch(tc.start, pads, 2)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			for r, p := range pads {
				if p != nil && (p.mFresh || slices.ContainsFunc(p.M, func(v uint32) bool { return v != 0 })) {
					t.Fatalf("row %d written by a refused batch", r)
				}
			}
		})
	}
	ok := []*Pad{g.New(), g.New()}
	if err := g.FillBatch(1<<64-2, ok, 2); err != nil { // the last two counters
		t.Fatalf("counters 2^64-2, 2^64-1: %v", err)
	}
	if err := g.FillBatch(5, nil, 3); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	g.Forget()
	fresh := []*Pad{g.New()}
	if err := g.FillBatch(0, fresh, 1); err == nil || !strings.Contains(err.Error(), "forgotten") || fresh[0].mFresh {
		t.Fatalf("FillBatch after Forget: %v (fresh %v)", err, fresh[0].mFresh)
	}
}

// fillWords sets every word of p's M and U to v.
func fillWords(p *Pad, v uint32) {
	for i := range p.M {
		p.M[i] = v
	}
	for _, u := range p.U {
		for i := range u {
			u[i] = v
		}
	}
}

// TestPoolBatches: a pool whose workers are behind by enough buffers
// fills them with FillBatch (counters a worker count apart) and still
// hands out the generator's pads of counters start, start + 1, ... in
// order; a pool whose workers hold too few buffers to touch never batches.
func TestPoolBatches(t *testing.T) {
	p := Params{Lambda: 16, H: 4, Delta: 16} // touched from 4 rows (rows h >= touchColumns lambda)
	w := quantized(t, wGauss, 7, 20, 1)
	sc := newScheme(t, p, w)
	const start, count = 7, 100
	for _, tc := range []struct {
		size, workers int
		batches       bool
	}{{24, 1, true}, {50, 2, true}, {75, 3, true}, {3, 1, false}, {6, 2, false}} {
		t.Run(fmt.Sprintf("size%d-workers%d", tc.size, tc.workers), func(t *testing.T) {
			pl, err := NewPool(p, sc.a, sc.hints, testKey, "test", start, tc.size, tc.workers)
			if err != nil {
				t.Fatal(err)
			}
			defer pl.Close()
			for i := range count {
				pad, err := pl.Get()
				if err != nil {
					t.Fatal(err)
				}
				want := sc.gen.New()
				if err := sc.gen.Fill(start+uint64(i), want); err != nil {
					t.Fatal(err)
				}
				samePad(t, fmt.Sprintf("pad %d", i), pad, want)
				if err := pl.Put(pad); err != nil {
					t.Fatal(err)
				}
			}
			if got := pl.batches.Load() > 0; got != tc.batches {
				t.Fatalf("%d batches filled, want batching %v", pl.batches.Load(), tc.batches)
			}
		})
	}
}

// TestPoolSteadyBatches: a pool of TiledRows + 4B pads serving a decode
// (each step gives back its B pads, then takes B) keeps filling in tiled
// batches in the steady state, not one pad at a time as buffers come
// back: every pad after the first batch is filled in one, and the pads
// are still those of their counters.
func TestPoolSteadyBatches(t *testing.T) {
	p := Params{Lambda: 16, H: 4, Delta: 16} // pool batches of 24 rows (TiledRows)
	w := quantized(t, wGauss, 7, 20, 1)
	sc := newScheme(t, p, w)
	const B, steps = 2, 60
	pl, err := NewPool(p, sc.a, sc.hints, testKey, "test", 0, TiledRows(p)+4*B, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	var held []*Pad
	n := uint64(0)
	for range steps {
		for _, pad := range held {
			if err := pl.Put(pad); err != nil {
				t.Fatal(err)
			}
		}
		held = held[:0]
		for range B {
			pad, err := pl.Get()
			if err != nil {
				t.Fatal(err)
			}
			want := sc.gen.New()
			if err := sc.gen.Fill(n, want); err != nil {
				t.Fatal(err)
			}
			samePad(t, fmt.Sprintf("pad %d", n), pad, want)
			n++
			held = append(held, pad)
		}
	}
	// 120 pads taken: the first batch of 32 and batches of at least 24
	// after it; a pad at a time would count no more batches.
	filled := pl.filled.Load()
	if got := pl.batches.Load(); got < 3 || filled > pl.batches.Load()*int64(TiledRows(p)+4*B) {
		t.Errorf("%d batches for %d pads filled: the steady state does not batch", got, filled)
	}
	t.Logf("%d pads filled in %d batches", filled, pl.batches.Load())
}
