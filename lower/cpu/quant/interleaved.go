package quant

import "gelo/device/wire"

// Products with wire.Interleaved8 weights: the same canonical order per
// output, read from the interleaved group (see wire.Interleaved8).

// LayoutFor returns the layout this machine's kernels read matrices of
// format f fastest in (wire.Matrix.InterleaveTo): with the AVX-512 VNNI
// kernels, in 16-row groups (wire.Interleaved16); with AVX2, in 8-row
// groups (wire.Interleaved8); Q8_0, Q4_0 and Q4_K alike;
// row-major where only the portable kernels run.
func LayoutFor(f wire.Format) wire.Layout {
	switch {
	case !useAsm:
		return wire.RowMajor
	case f != wire.Q8_0 && f != wire.Q4_0 && f != wire.Q4_K:
		return wire.RowMajor
	case useAVX512:
		return wire.Interleaved16
	}
	return wire.Interleaved8
}

// groupBytes is the size of an Interleaved8 group of rows of nb 32-value
// blocks.
func groupBytes(f wire.Format, nb int) int {
	return wire.InterleaveRows * nb * wire.QK / f.BlockValues() * f.BlockBytes()
}

// mv16Rows is the group size of wire.Interleaved16.
const mv16Rows = 16

// dotILGo returns row rr (< gr) of the interleaved group g of gr rows (nb
// blocks of format f, Q8_0 or Q4_0) times the activation row (x, dx, nb
// blocks).
func dotILGo(f wire.Format, gr int, x []int8, dx []float32, g []byte, rr, nb int) float32 {
	bb := f.BlockBytes()
	gb := gr * bb
	var acc float32
	for b := 0; b < nb; b++ {
		blk := g[b*gb : (b+1)*gb : (b+1)*gb]
		xs := x[b*wire.QK : (b+1)*wire.QK : (b+1)*wire.QK]
		var isum int32
		for p := 0; p < (bb-2)/4; p++ {
			at := 2*gr + 4*gr*p + 4*rr
			q := blk[at : at+4 : at+4]
			for t := 0; t < 4; t++ {
				if f == wire.Q8_0 {
					isum += int32(int8(q[t])) * int32(xs[4*p+t])
				} else {
					isum += (int32(q[t]&0x0f) - 8) * int32(xs[4*p+t])
					isum += (int32(q[t]>>4) - 8) * int32(xs[16+4*p+t])
				}
			}
		}
		s := float32(scaleF16(blk[2*rr:]) * dx[b])
		acc = float32(acc + float32(float32(isum)*s))
	}
	return acc
}

// mv8ILGo: y[r] = row r of group g times x, r < 8.
func mv8ILGo(f wire.Format, x []int8, dx []float32, sx []int32, g []byte, nb int, y []float32) {
	for r := 0; r < wire.InterleaveRows; r++ {
		if f == wire.Q4_K {
			y[r] = dotQ4KILGo(x, dx, sx, g, wire.InterleaveRows, r, nb)
		} else {
			y[r] = dotILGo(f, wire.InterleaveRows, x, dx, g, r, nb)
		}
	}
}

// mv8IL sets y[r] = row r of the Interleaved8 group g times x, r < 8.
func mv8IL(f wire.Format, x []int8, dx []float32, sx []int32, g []byte, nb int, y []float32) {
	_, _, _ = x[nb*wire.QK-1], dx[nb-1], sx[nb-1]
	_ = g[groupBytes(f, nb)-1]
	_ = y[7]
	if !useAsm {
		mv8ILGo(f, x, dx, sx, g, nb, y)
		return
	}
	switch f {
	case wire.Q4_K:
		q4kmm8ILAVX2(&x[0], &dx[0], &sx[0], &g[0], nb/8, 1, &y[0], wire.InterleaveRows)
	case wire.Q8_0:
		q8mv8ILAVX2(&x[0], &dx[0], &g[0], nb, &y[0])
	default:
		q4mv8ILAVX2(&x[0], &dx[0], &sx[0], &g[0], nb, &y[0])
	}
}

// mm48IL sets y[r*ldy+c] = row c of the Interleaved8 group g (Q8_0 or
// Q4_0) times activation row r (x[r*32*nb:], dx[r*nb:], sx[r*nb:]), r < 4,
// c < 8: each piece read once for the 4 rows.
func mm48IL(f wire.Format, x []int8, dx []float32, sx []int32, g []byte, nb int, y []float32, ldy int) {
	_, _, _ = x[4*nb*wire.QK-1], dx[4*nb-1], sx[4*nb-1]
	_ = g[groupBytes(f, nb)-1]
	_ = y[3*ldy+7]
	if !useAsm {
		k := nb * wire.QK
		for r := 0; r < 4; r++ {
			mv8ILGo(f, x[r*k:], dx[r*nb:], sx[r*nb:], g, nb, y[r*ldy:])
		}
		return
	}
	if f == wire.Q8_0 {
		q8mm48ILAVX2(&x[0], &dx[0], &g[0], nb, &y[0], ldy)
	} else {
		q4mm48ILAVX2(&x[0], &dx[0], &sx[0], &g[0], nb, &y[0], ldy)
	}
}

// q4kIL8Rows is the most activation rows one Q4_K Interleaved8 group
// call takes (its output tile: 2 KiB on the stack, which the Interleaved16
// GEMMs' mm16Rows x 16 tile shares).
const q4kIL8Rows = 64

// The shared tile holds the Interleaved16 GEMMs' too.
const _ = uint(q4kIL8Rows*wire.InterleaveRows - mm16Rows*mv16Rows)

// mm8ILQ4K sets y[r*ldy+c] = row c of the Q4_K Interleaved8 group g
// times activation row r (x[r*32*nb:], dx[r*nb:], sx[r*nb:]), r < rows,
// c < 8.
func mm8ILQ4K(x []int8, dx []float32, sx []int32, g []byte, nb, rows int, y []float32, ldy int) {
	_, _, _ = x[rows*nb*wire.QK-1], dx[rows*nb-1], sx[rows*nb-1]
	_ = g[groupBytes(wire.Q4_K, nb)-1]
	_ = y[(rows-1)*ldy+wire.InterleaveRows-1]
	if !useAsm {
		k := nb * wire.QK
		for i := 0; i < rows; i++ {
			mv8ILGo(wire.Q4_K, x[i*k:], dx[i*nb:], sx[i*nb:], g, nb, y[i*ldy:])
		}
		return
	}
	q4kmm8ILAVX2(&x[0], &dx[0], &sx[0], &g[0], nb/8, rows, &y[0], ldy)
}

// dotQ4KILGo is dotQ4KGo of row rr (< gr) of the Q4_K group g of an
// Interleaved8 (gr = 8) or Interleaved16 (gr = 16) matrix: each
// super-block gathered back from its pieces.
func dotQ4KILGo(x []int8, dx []float32, sx []int32, g []byte, gr, rr, nb int) float32 {
	sb := gr * wire.BlockBytesQ4_K
	var acc float32
	var blk [wire.BlockBytesQ4_K]byte
	for s := 0; s < nb/8; s++ {
		src := g[s*sb : (s+1)*sb]
		for p := 0; p < wire.BlockBytesQ4_K/4; p++ {
			copy(blk[4*p:4*p+4], src[4*gr*p+4*rr:])
		}
		acc = q4kSuper(acc, blk[:], x, dx, sx, s)
	}
	return acc
}

// dotIL16Go is row rr (< 16) of the Interleaved16 group g times x.
func dotIL16Go(f wire.Format, x []int8, dx []float32, sx []int32, g []byte, rr, nb int) float32 {
	if f == wire.Q4_K {
		return dotQ4KILGo(x, dx, sx, g, mv16Rows, rr, nb)
	}
	return dotILGo(f, mv16Rows, x, dx, g, rr, nb)
}

// q4kmv16 picks the one-row Q4_K kernel for decode (benchmarks flip it
// to compare with the GEMM kernel at one row).
var q4kmv16 = true

// mv16IL sets y[r] = row r of the Interleaved16 group g (Q8_0, Q4_0 or
// Q4_K) times x, r < 16.
func mv16IL(f wire.Format, x []int8, dx []float32, sx []int32, g []byte, nb int, y []float32) {
	_, _, _ = x[nb*wire.QK-1], dx[nb-1], sx[nb-1]
	_ = g[mv16Rows*nb*wire.QK/f.BlockValues()*f.BlockBytes()-1]
	_ = y[mv16Rows-1]
	if !useAsm || !useAVX512 {
		for r := 0; r < mv16Rows; r++ {
			y[r] = dotIL16Go(f, x, dx, sx, g, r, nb)
		}
		return
	}
	if f == wire.Q4_K {
		switch {
		case q4kmv16 && prefetchL2:
			q4kmv16ILAVX512L2(&x[0], &dx[0], &sx[0], &g[0], nb/8, &y[0])
		case q4kmv16:
			q4kmv16ILAVX512(&x[0], &dx[0], &sx[0], &g[0], nb/8, &y[0])
		default:
			q4kmm16ILAVX512(&x[0], &dx[0], &sx[0], &g[0], nb/8, 1, &y[0], mv16Rows)
		}
		return
	}
	switch {
	case f == wire.Q8_0:
		q8mv16ILAVX512(&x[0], &dx[0], &sx[0], &g[0], nb, &y[0])
	case prefetchL2:
		q4mv16ILAVX512L2(&x[0], &dx[0], &sx[0], &g[0], nb, &y[0])
	default:
		q4mv16ILAVX512(&x[0], &dx[0], &sx[0], &g[0], nb, &y[0])
	}
}

// amxScratch is the int32 count of the AMX kernels' scratch: twice (one
// pair of blocks' while the next pair's is written) the two C tiles (16 x
// 16 block sums) they store between the tile multiply and the float part
// and Q4_0's or Q4_K's two unpacked B tiles (512 bytes each), then Q4_K's
// d1 and m1 of a super-block (16 vectors) and its spilled accumulators (16
// more).
const amxScratch = 2*(2*mv16Rows*mm16Rows+2*512/4) + 2*16*16

// amxTable returns tab (grown if short) holding, for each of chunks
// 16-row chunks of the activations and each of their nb blocks, the 16
// rows' dx and then their block sums sx as float32 (exact: |sx| < 2^12),
// 32 floats a block: the Q4_K AMX kernel's operands, read from one
// pointer.
func amxTable(tab, dx []float32, sx []int32, chunks, nb int) []float32 {
	need := chunks * nb * 2 * mm16Rows
	if cap(tab) < need {
		tab = make([]float32, need)
	}
	tab = tab[:need]
	for c := range chunks {
		for r := range mm16Rows {
			row := (c*mm16Rows + r) * nb
			for b := range nb {
				at := (c*nb + b) * 2 * mm16Rows
				tab[at+r] = dx[row+b]
				tab[at+mm16Rows+r] = float32(sx[row+b])
			}
		}
	}
	return tab
}

// amxConfig is the AMX kernels' tile configuration (palette 1; see
// amx_amd64.s): tmm0 and tmm3 the C tiles (16 rows of 16 int32), tmm1 and
// tmm4 the A tiles (16 activation rows of a block's 32 quants), tmm2 and
// tmm5 the B tiles (8 rows of 64 bytes: a block's pieces).
var amxConfig = func() (c [64]byte) {
	c[0] = 1
	for _, t := range []struct{ tile, rows, colBytes int }{
		{0, 16, 64}, {3, 16, 64}, {1, 16, 32}, {4, 16, 32}, {2, 8, 64}, {5, 8, 64},
	} {
		c[16+2*t.tile], c[17+2*t.tile] = byte(t.colBytes), byte(t.colBytes>>8)
		c[48+t.tile] = byte(t.rows)
	}
	return c
}()

// mm16IL sets y[r*ldy+c] = row c of the Interleaved16 group g (Q8_0,
// Q4_0 or Q4_K) times activation row r (x[r*32*nb:], dx[r*nb:], sx[r*nb:]), r <
// rows, c < 16.
func mm16IL(f wire.Format, x []int8, dx []float32, sx []int32, g []byte, nb, rows int, y []float32, ldy int) {
	_, _, _ = x[rows*nb*wire.QK-1], dx[rows*nb-1], sx[rows*nb-1]
	_ = g[mv16Rows*nb*wire.QK/f.BlockValues()*f.BlockBytes()-1]
	_ = y[(rows-1)*ldy+mv16Rows-1]
	if !useAsm || !useAVX512 {
		k := nb * wire.QK
		for i := 0; i < rows; i++ {
			for r := 0; r < mv16Rows; r++ {
				y[i*ldy+r] = dotIL16Go(f, x[i*k:], dx[i*nb:], sx[i*nb:], g, r, nb)
			}
		}
		return
	}
	if f == wire.Q4_K {
		q4kmm16ILAVX512(&x[0], &dx[0], &sx[0], &g[0], nb/8, rows, &y[0], ldy)
		return
	}
	if f == wire.Q8_0 {
		q8mm16ILAVX512(&x[0], &dx[0], &sx[0], &g[0], nb, rows, &y[0], ldy)
	} else {
		q4mm16ILAVX512(&x[0], &dx[0], &sx[0], &g[0], nb, rows, &y[0], ldy)
	}
}

// amxRows is how many of the activation rows i0..i1 the AMX kernel
// takes (whole 16-row chunks from i0) for a format f matrix in groups of
// gr rows: Q8_0, Q4_0 and Q4_K on Interleaved16 where useAMX (Q4_K's
// chunks those of its table: from a multiple of 16).
func amxRows(f wire.Format, gr, i0, i1 int) int {
	if !useAMX || (f != wire.Q8_0 && f != wire.Q4_0 && f != wire.Q4_K) || gr != mv16Rows || (f == wire.Q4_K && i0%mm16Rows != 0) {
		return 0
	}
	return (i1 - i0) / mm16Rows * mm16Rows
}

// doInterleaved computes the task's block of y, rows i0..i1 of the
// activations by weight rows j0..j1 (j0 a multiple of the group size),
// from an interleaved matrix: whole groups through the group kernels
// (Interleaved8: four activation rows per call, the last 1-3 one at a
// time, Q4_K up to q4kIL8Rows per call into a contiguous tile;
// Interleaved16: up to mm16Rows activation rows per call, one row through
// the matvec kernel), rows past the last whole group (row-major) one by
// one.
func (j *matmulJob) doInterleaved(i0, i1, j0, j1 int) {
	f, n, nb, ldw := j.w.Format, j.n, j.nb, j.ldw
	k := nb * wire.QK
	wd := j.w.Data
	gr := j.w.Layout.GroupRows()
	full := min(j1, j.w.Rows/gr*gr)
	// The kernels that accumulate in their output (the Interleaved16 GEMMs
	// and Q4_K's on Interleaved8) write a contiguous tile, copied out after:
	// rows of y n floats apart (a multiple of 1 KiB for n = 3072) share one
	// L1 set, more than its ways. Each kernel zeroes the tile it writes.
	var tile [q4kIL8Rows * wire.InterleaveRows]float32
	tiled := gr == mv16Rows || f == wire.Q4_K
	per := q4kIL8Rows
	if gr == mv16Rows {
		per = mm16Rows
	}
	// The AMX kernel takes whole 16-row chunks of the activations through
	// every whole group of the task in one call, straight into y; the
	// VNNI kernels below take the rows past the last whole chunk.
	r0 := i0
	if amx := amxRows(f, gr, i0, i1); amx > 0 && full > j0 {
		var scr [amxScratch]int32
		for i := i0; i < i0+amx; i += mm16Rows {
			x, dx, w, y, groups := &j.q[i*k], &j.dx[i*nb], &wd[j0*ldw], &j.y[i*n+j0], (full-j0)/gr
			switch f {
			case wire.Q8_0:
				q8mm16ILAMX(x, dx, w, nb, groups, y, n, &scr[0], &amxConfig[0])
			case wire.Q4_0:
				q4mm16ILAMX(x, dx, w, nb, groups, y, n, &scr[0], &amxConfig[0])
			default:
				tab := &j.amxTab[i/mm16Rows*nb*2*mm16Rows]
				q4kmm16ILAMX(x, tab, w, nb/8, groups, y, n, &scr[0], &amxConfig[0])
			}
		}
		r0 += amx
	}
	for jg := j0; jg < full && r0 < i1; jg += gr {
		g := wd[jg*ldw:]
		if tiled && i1-r0 > 1 {
			for i := r0; i < i1; i += per {
				r := min(per, i1-i)
				if gr == mv16Rows {
					mm16IL(f, j.q[i*k:], j.dx[i*nb:], j.sx[i*nb:], g, nb, r, tile[:], gr)
				} else {
					mm8ILQ4K(j.q[i*k:], j.dx[i*nb:], j.sx[i*nb:], g, nb, r, tile[:], gr)
				}
				for t := range r {
					copy(j.y[(i+t)*n+jg:(i+t)*n+jg+gr], tile[t*gr:(t+1)*gr])
				}
			}
			continue
		}
		if gr == mv16Rows {
			mv16IL(f, j.q[r0*k:], j.dx[r0*nb:], j.sx[r0*nb:], g, nb, j.y[r0*n+jg:])
			continue
		}
		i := r0
		for ; i+4 <= i1; i += 4 {
			mm48IL(f, j.q[i*k:], j.dx[i*nb:], j.sx[i*nb:], g, nb, j.y[i*n+jg:], n)
		}
		for ; i < i1; i++ { // the last 1-3 rows (the group is in L1 by then)
			mv8IL(f, j.q[i*k:], j.dx[i*nb:], j.sx[i*nb:], g, nb, j.y[i*n+jg:])
		}
	}
	for jj := max(j0, full); jj < j1; jj++ {
		for i := i0; i < i1; i++ {
			j.y[i*n+jj] = dotGo(f, j.q[i*k:], j.dx[i*nb:], j.sx[i*nb:], wd[jj*ldw:], nb)
		}
	}
	if j.bias != nil {
		for i := i0; i < i1; i++ {
			addBias(j.y[i*n+j0:i*n+j1], j.bias[j0:j1])
		}
	}
}

// HasAMX reports whether the Q8_0, Q4_0 and Q4_K GEMMs (whole 16-row
// chunks of m >= 16 on this machine's Interleaved16 layout) run on the AMX
// tiles here (same bits as the VNNI kernels they replace).
func HasAMX() bool { return useAMX }
