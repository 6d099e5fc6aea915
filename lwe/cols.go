package lwe

import (
	"fmt"
	"math/bits"
)

// addColumnsAt sets dst += sum_k sgn_k col_k mod 2^32 for the columns
// col_k = t[idx_k*stride+off : idx_k*stride+off+len(dst)] (sgn_k is 0 for
// +1, all ones for -1). It is the one kernel of the pads' column sums:
// Fill calls it on a block of a column-major matrix (stride = the column
// length), FillBatch on a packed tile (stride = the tile width). The sign
// is applied without a branch, (x ^ sgn) - sgn; the addresses read depend
// on idx (the secret support), as they must for a sparse sum.
//
// With AVX2 the columns go four at a time through addCols4 over the
// multiple-of-8 head of dst; the remainder columns and the tail words are
// summed in Go. The sums are exact mod 2^32, so both paths give the same
// words. Every idx_k must be a column of t; one that is not is a
// programmer error (idx comes from the sampler) and panics before any
// memory is read.
func addColumnsAt(dst, t []uint32, off, stride int, idx []int32, sgn []uint32) {
	n := len(dst)
	if n == 0 || len(idx) == 0 {
		return
	}
	checkColumns(len(t), n, off, stride, idx, sgn)
	k4, n8 := 0, 0
	if useAsm {
		k4, n8 = len(idx)&^3, n&^7
	}
	if k4 > 0 && n8 > 0 {
		addCols4(dst[:n8], t, off, stride, idx[:k4], sgn[:k4])
		// The tail words of the four-column groups.
		addColsGo(dst[n8:], t, off+n8, stride, idx[:k4], sgn[:k4])
	} else {
		k4 = 0
	}
	addColsGo(dst, t, off, stride, idx[k4:], sgn[k4:])
}

// addTileAt is addColumnsAt for a packed tile's short rows (FillBatch's
// sub-tiles, 64 words at lambda 4096): with AVX2 each 64-word chunk of dst
// sums all h columns in registers (addTile64) and reads dst once, at the
// end, so a cache miss on it (each row's dst is another pad) overlaps the
// column loads; what is left goes to addColumnsAt. The same words as
// addColumnsAt.
func addTileAt(dst, t []uint32, off, stride int, idx []int32, sgn []uint32) {
	n := len(dst)
	if n == 0 || len(idx) == 0 {
		return
	}
	checkColumns(len(t), n, off, stride, idx, sgn)
	addTileChecked(dst, t, off, stride, idx, sgn)
}

// addTileChecked is addTileAt once checkColumns has passed for (len(t),
// len(dst), off, stride, idx, sgn), or for a wider dst at off.
func addTileChecked(dst, t []uint32, off, stride int, idx []int32, sgn []uint32) {
	n := len(dst)
	n64 := 0
	if useAsm {
		n64 = n &^ 63
		if n64 > 0 {
			addTile64(dst[:n64], t, off, stride, idx, sgn[:len(idx)])
		}
	}
	addColumnsAt(dst[n64:], t, off+n64, stride, idx, sgn)
}

// addTilePf is addTileChecked for one sub-tile (off 0, stride len(dst)),
// prefetching for each column it reads the run pf bytes further on (0:
// none): row-by-row pads over tiles read 256-byte runs whose addresses the
// hardware prefetchers cannot follow, and their misses dominate.
func addTilePf(dst, t []uint32, stride int, idx []int32, sgn []uint32, pf int) {
	n64 := 0
	if useAsm && pf > 0 {
		n64 = len(dst) &^ 63
		for i := 0; i < n64; i += 64 {
			addTile64Pf(dst[i:i+64], t, i, stride, idx, sgn[:len(idx)], pf)
		}
	}
	addTileChecked(dst[n64:], t, n64, stride, idx, sgn)
}

// checkColumns panics unless every column idx_k (k < len(idx) <= len(sgn))
// of n words lies inside a matrix of tlen words. The comparisons are
// accumulated without a branch on idx.
func checkColumns(tlen, n, off, stride int, idx []int32, sgn []uint32) {
	if off < 0 || stride < 0 || len(sgn) < len(idx) || off+n > tlen {
		panic(fmt.Sprintf("lwe: column sum: %d words at offset %d stride %d of %d, %d signs for %d columns",
			n, off, stride, tlen, len(sgn), len(idx)))
	}
	cols := uint64(tlen - off - n) // every start idx*stride must be <= cols
	var bad uint64
	for _, v := range idx {
		// v < 0, or v*stride > cols (a high word, or a borrow).
		hi, lo := bits.Mul64(uint64(uint32(v)), uint64(stride))
		_, borrow := bits.Sub64(cols, lo, 0)
		bad |= uint64(uint32(v)>>31) | hi | borrow
	}
	if bad != 0 {
		panic(fmt.Sprintf("lwe: column sum: a column index outside a %d-word matrix (stride %d)", tlen, stride))
	}
}

// addColsGo is addColumnsAt in portable Go: four columns a pass over dst
// (so dst is loaded and stored len(idx) / 4 times), then one at a time.
// (x ^ s0) + (y ^ s1) + ... + (number of negative terms) is the signed sum:
// -x = ^x + 1.
func addColsGo(dst, t []uint32, off, stride int, idx []int32, sgn []uint32) {
	n := len(dst)
	if n == 0 {
		return
	}
	col := func(k int) []uint32 {
		o := int(idx[k])*stride + off
		return t[o : o+n : o+n]
	}
	k := 0
	for ; k+4 <= len(idx); k += 4 {
		a, b, c, d := col(k), col(k+1), col(k+2), col(k+3)
		na, nb, nc, nd := sgn[k], sgn[k+1], sgn[k+2], sgn[k+3]
		one := na&1 + nb&1 + nc&1 + nd&1
		for i := range dst {
			dst[i] += (a[i] ^ na) + (b[i] ^ nb) + (c[i] ^ nc) + (d[i] ^ nd) + one
		}
	}
	for ; k < len(idx); k++ {
		a, neg := col(k), sgn[k]
		one := neg & 1
		for i := range dst {
			dst[i] += a[i] ^ neg + one
		}
	}
}
