package lwe

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTilesLayout: packing rows into sub-tiles of any width (one word, odd,
// 8, addTile64's 64, the whole column, wider than it) keeps every column
// (col), unpacks to the same rows, and sub-tiles cover the words in order
// with only the last one narrower.
func TestTilesLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, c := range []struct{ n, lambda int }{{1, 1}, {7, 3}, {64, 5}, {130, 9}, {1031, 4}} {
		rows := make([]uint32, c.n*c.lambda)
		for i := range rows {
			rows[i] = r.Uint32()
		}
		for _, w := range []int{1, 5, 8, 64, c.n, c.n + 3} {
			name := fmt.Sprintf("n%d-lambda%d-w%d", c.n, c.lambda, w)
			tl := packRowsW(rows, c.n, c.lambda, w)
			if !slices.Equal(tl.rows(), rows) {
				t.Fatalf("%s: rows() differs from the packed rows", name)
			}
			col := make([]uint32, c.n)
			for k := range c.lambda {
				tl.col(k, col)
				if !slices.Equal(col, rows[k*c.n:(k+1)*c.n]) {
					t.Fatalf("%s: column %d differs", name, k)
				}
			}
			next := 0
			for s := range tl.subs() {
				i0, sw, tile := tl.sub(s)
				if i0 != next || sw < 1 || (sw != min(w, c.n) && s != tl.subs()-1) || len(tile) != sw*c.lambda {
					t.Fatalf("%s: sub-tile %d at %d of %d words (%d held)", name, s, i0, sw, len(tile))
				}
				next += sw
			}
			if next != c.n {
				t.Fatalf("%s: sub-tiles cover %d of %d words", name, next, c.n)
			}
		}
	}
}
