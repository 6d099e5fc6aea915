//go:build amd64 && !purego

package lwe

import "golang.org/x/sys/cpu"

// useAsm selects the AVX2 column-sum kernel, decided once from CPU feature
// detection (tests flip it to compare with the portable Go form).
var useAsm = cpu.X86.HasAVX2

// use512 selects the AVX-512 form of the tile kernel (addTile64AVX512)
// where the CPU has AVX-512F: a sub-tile's slices come from L2, and half
// the instructions an output chunk read them 1.3x faster (278 against 352
// ns a row's 80 slices of a 1 MiB sub-tile, -bench PadBatch's kernel).
var use512 = cpu.X86.HasAVX512F

//go:noescape
func addCols4AVX2(dst *uint32, n8 int, base *uint32, stride int, idx *int32, sgn *uint32, k4 int)

// addCols4 sets dst += the signed columns of t (see addColumnsAt) in AVX2,
// four columns a pass over dst: len(dst) and len(idx) are positive
// multiples of 8 and 4, and checkColumns has passed for them.
func addCols4(dst, t []uint32, off, stride int, idx []int32, sgn []uint32) {
	addCols4AVX2(&dst[0], len(dst), &t[off], stride*4, &idx[0], &sgn[0], len(idx)/4)
}

// addTile64 sets dst += the signed columns of t (see addColumnsAt) in
// AVX2, 64 words at a time held in registers: len(dst) is a positive
// multiple of 64, len(idx) is positive, and checkColumns has passed.
func addTile64(dst, t []uint32, off, stride int, idx []int32, sgn []uint32) {
	if use512 {
		for i := 0; i < len(dst); i += 64 {
			addTile64AVX512(&dst[i], &t[off+i], stride*4, &idx[0], &sgn[0], len(idx), &dst[i])
		}
		return
	}
	for i := 0; i < len(dst); i += 64 {
		addTile64PfAVX2(&dst[i], &t[off+i], stride*4, &idx[0], &sgn[0], len(idx), 0)
	}
}

//go:noescape
func addTile64PfAVX2(dst *uint32, base *uint32, stride int, idx *int32, sgn *uint32, h int, pf int)

// addTile64Pf is addTile64 for one 64-word chunk (dst: 64 words at off)
// that also prefetches each column's run pf bytes further on.
func addTile64Pf(dst, t []uint32, off, stride int, idx []int32, sgn []uint32, pf int) {
	addTile64PfAVX2(&dst[0], &t[off], stride*4, &idx[0], &sgn[0], len(idx), pf)
}

//go:noescape
func addTile64AVX512(dst *uint32, base *uint32, stride int, idx *int32, sgn *uint32, h int, next *uint32)

// addTileNext is addTileChecked for one sub-tile (off 0, stride len(dst))
// in a batch, prefetching next (the next row's chunk, as long as dst) for
// the following call.
func addTileNext(dst, next, t []uint32, idx []int32, sgn []uint32) {
	n64 := 0
	if use512 {
		n64 = len(dst) &^ 63
		next = next[:n64]
		for i := 0; i < n64; i += 64 {
			addTile64AVX512(&dst[i], &t[i], len(dst)*4, &idx[0], &sgn[0], len(idx), &next[i])
		}
	}
	addTileChecked(dst[n64:], t, n64, len(dst), idx, sgn)
}
