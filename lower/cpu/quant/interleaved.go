package quant

import "gelo/device/wire"

// Products with wire.Interleaved8 weights: the same canonical order per
// output, read from the interleaved group (see wire.Interleaved8).

// Interleaves reports whether this machine's kernels read matrices of
// format f faster interleaved (wire.Matrix.Interleave): the AVX2 kernels,
// Q8_0, Q4_0 and Q4_K. Where the AVX-512 VNNI 16-row GEMM kernels run
// (they read the row-major layout), Q8_0 and Q4_0 matrices stay
// row-major; Q4_K has no AVX-512 kernel.
func Interleaves(f wire.Format) bool {
	return useAsm && (f == wire.Q4_K || !useAVX512 && (f == wire.Q8_0 || f == wire.Q4_0))
}

// q4kILPrefetch is how far ahead of the super-block it reads the Q4_K
// group kernels prefetch, in bytes along the group's one stream.
const q4kILPrefetch = 2 * wire.InterleaveRows * wire.BlockBytesQ4_K

// groupBytes is the size of an Interleaved8 group of rows of nb 32-value
// blocks.
func groupBytes(f wire.Format, nb int) int {
	return wire.InterleaveRows * nb * wire.QK / f.BlockValues() * f.BlockBytes()
}

// dotQ4KILGo is dotQ4KGo of row rr (< 8) of the Interleaved8 group g.
func dotQ4KILGo(x []int8, dx []float32, sx []int32, g []byte, rr, nb int) float32 {
	const sb = wire.InterleaveRows * wire.BlockBytesQ4_K
	var acc float32
	for s := 0; s < nb/8; s++ {
		at := s*sb + rr*wire.BlockBytesQ4_K
		acc = q4kSuper(acc, g[at:at+wire.BlockBytesQ4_K:at+wire.BlockBytesQ4_K], x, dx, sx, s)
	}
	return acc
}

// dotILGo returns row rr (< 8) of the Interleaved8 group g (nb blocks of
// format f, Q8_0 or Q4_0) times the activation row (x, dx, nb blocks).
func dotILGo(f wire.Format, x []int8, dx []float32, g []byte, rr, nb int) float32 {
	bb := f.BlockBytes()
	gb := wire.InterleaveRows * bb
	var acc float32
	for b := 0; b < nb; b++ {
		blk := g[b*gb : (b+1)*gb : (b+1)*gb]
		xs := x[b*wire.QK : (b+1)*wire.QK : (b+1)*wire.QK]
		var isum int32
		for p := 0; p < (bb-2)/4; p++ {
			q := blk[16+32*p+4*rr : 16+32*p+4*rr+4 : 16+32*p+4*rr+4]
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
			y[r] = dotQ4KILGo(x, dx, sx, g, r, nb)
		} else {
			y[r] = dotILGo(f, x, dx, g, r, nb)
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
		q4kmv8AVX2(&x[0], &dx[0], &sx[0], &g[0], wire.BlockBytesQ4_K, nb/8,
			wire.InterleaveRows*wire.BlockBytesQ4_K, q4kILPrefetch, &y[0])
		return
	case wire.Q8_0:
		q8mv8ILAVX2(&x[0], &dx[0], &g[0], nb, &y[0])
	default:
		q4mv8ILAVX2(&x[0], &dx[0], &sx[0], &g[0], nb, &y[0])
	}
}

// mm28IL sets y[r*ldy+c] = row c of the Interleaved8 group g times
// activation row r (x[r*32*nb:], dx[r*nb:], sx[r*nb:]), r < 2, c < 8.
func mm28IL(f wire.Format, x []int8, dx []float32, sx []int32, g []byte, nb int, y []float32, ldy int) {
	_, _, _ = x[2*nb*wire.QK-1], dx[2*nb-1], sx[2*nb-1]
	_ = g[groupBytes(f, nb)-1]
	_ = y[ldy+7]
	if !useAsm {
		k := nb * wire.QK
		mv8ILGo(f, x, dx, sx, g, nb, y)
		mv8ILGo(f, x[k:], dx[nb:], sx[nb:], g, nb, y[ldy:])
		return
	}
	switch f {
	case wire.Q4_K:
		q4kmm28AVX2(&x[0], &dx[0], &sx[0], &g[0], wire.BlockBytesQ4_K, nb/8,
			wire.InterleaveRows*wire.BlockBytesQ4_K, q4kILPrefetch, &y[0], ldy)
	case wire.Q8_0:
		q8mm28ILAVX2(&x[0], &dx[0], &g[0], nb, &y[0], ldy)
	default:
		q4mm28ILAVX2(&x[0], &dx[0], &sx[0], &g[0], nb, &y[0], ldy)
	}
}

// doInterleaved computes the task's block of y, rows i0..i1 of the
// activations by weight rows j0..j1 (j0 a multiple of 8), from an
// Interleaved8 matrix: whole groups through the 8-row kernels (two
// activation rows per call, the last odd row alone), rows past the last
// whole group (row-major) one by one.
func (j *matmulJob) doInterleaved(i0, i1, j0, j1 int) {
	f, n, nb, ldw := j.w.Format, j.n, j.nb, j.ldw
	k := nb * wire.QK
	wd := j.w.Data
	full := min(j1, j.w.Rows/wire.InterleaveRows*wire.InterleaveRows)
	for jg := j0; jg < full; jg += wire.InterleaveRows {
		g := wd[jg*ldw:]
		i := i0
		for ; i+2 <= i1; i += 2 {
			mm28IL(f, j.q[i*k:], j.dx[i*nb:], j.sx[i*nb:], g, nb, j.y[i*n+jg:], n)
		}
		if i < i1 {
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
