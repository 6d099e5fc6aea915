package quant

import (
	"github.com/x448/float16"

	"gelo/device/wire"
)

// Portable kernels. Each output is computed in the canonical order of the
// package documentation with exact int32 block sums and explicit float32
// roundings (the conversions keep the compiler from fusing a multiply-add on
// any architecture), so they are bit-identical to the assembly.

// scaleF16 reads the little-endian fp16 scale at the start of a block.
func scaleF16(blk []byte) float32 {
	return float16.Frombits(uint16(blk[0]) | uint16(blk[1])<<8).Float32()
}

// dotQ8Go returns the canonical product of an activation row (x, dx: nb
// blocks) with a row of nb block_q8_0.
func dotQ8Go(x []int8, dx []float32, w []byte, nb int) float32 {
	x, dx, w = x[:nb*wire.QK:nb*wire.QK], dx[:nb:nb], w[:nb*wire.BlockBytesQ8_0:nb*wire.BlockBytesQ8_0]
	var acc float32
	for b := 0; b < nb; b++ {
		blk := w[b*wire.BlockBytesQ8_0 : (b+1)*wire.BlockBytesQ8_0 : (b+1)*wire.BlockBytesQ8_0]
		qs := blk[2:wire.BlockBytesQ8_0:wire.BlockBytesQ8_0]
		xs := x[b*wire.QK : (b+1)*wire.QK : (b+1)*wire.QK]
		var s0, s1, s2, s3 int32
		for t := 0; t < wire.QK; t += 4 {
			s0 += int32(int8(qs[t])) * int32(xs[t])
			s1 += int32(int8(qs[t+1])) * int32(xs[t+1])
			s2 += int32(int8(qs[t+2])) * int32(xs[t+2])
			s3 += int32(int8(qs[t+3])) * int32(xs[t+3])
		}
		isum := (s0 + s1) + (s2 + s3)
		s := float32(scaleF16(blk) * dx[b])
		acc = float32(acc + float32(float32(isum)*s))
	}
	return acc
}

// dotQ4Go returns the canonical product of an activation row (x, dx: nb
// blocks) with a row of nb block_q4_0.
func dotQ4Go(x []int8, dx []float32, w []byte, nb int) float32 {
	x, dx, w = x[:nb*wire.QK:nb*wire.QK], dx[:nb:nb], w[:nb*wire.BlockBytesQ4_0:nb*wire.BlockBytesQ4_0]
	var acc float32
	for b := 0; b < nb; b++ {
		blk := w[b*wire.BlockBytesQ4_0 : (b+1)*wire.BlockBytesQ4_0 : (b+1)*wire.BlockBytesQ4_0]
		qs := blk[2:wire.BlockBytesQ4_0:wire.BlockBytesQ4_0]
		xs := x[b*wire.QK : (b+1)*wire.QK : (b+1)*wire.QK]
		var s0, s1 int32
		for j := 0; j < wire.QK/2; j++ {
			s0 += (int32(qs[j]&0x0f) - 8) * int32(xs[j])
			s1 += (int32(qs[j]>>4) - 8) * int32(xs[j+wire.QK/2])
		}
		isum := s0 + s1
		s := float32(scaleF16(blk) * dx[b])
		acc = float32(acc + float32(float32(isum)*s))
	}
	return acc
}

// dotQ4KGo returns the canonical product of an activation row (x, dx, sx:
// nb blocks of 32) with a row of nb/8 block_q4_K: per super-block, per
// sub-block j (activation block b = 8s+j) in increasing order,
//
//	d1 = fl32(d * sc_j), m1 = fl32(dmin * m_j)      (the dequantizer's)
//	isum = sum_t q[t] * qx[t]                        (exact int32)
//	acc = fl32(acc + fl32(fl32(isum * fl32(d1*dx_b)) - fl32(sx_b * fl32(m1*dx_b))))
func dotQ4KGo(x []int8, dx []float32, sx []int32, w []byte, nb int) float32 {
	ns := nb / 8
	x, dx, sx = x[:nb*wire.QK:nb*wire.QK], dx[:nb:nb], sx[:nb:nb]
	w = w[: ns*wire.BlockBytesQ4_K : ns*wire.BlockBytesQ4_K]
	var acc float32
	for s := 0; s < ns; s++ {
		acc = q4kSuper(acc, w[s*wire.BlockBytesQ4_K:(s+1)*wire.BlockBytesQ4_K:(s+1)*wire.BlockBytesQ4_K], x, dx, sx, s)
	}
	return acc
}

// q4kSuper adds super-block s of a row (blk, one block_q4_K) times the
// activation row to acc, in dotQ4KGo's order.
func q4kSuper(acc float32, blk []byte, x []int8, dx []float32, sx []int32, s int) float32 {
	d, dmin := scaleF16(blk), scaleF16(blk[2:])
	scales, qs := blk[4:16], blk[16:wire.BlockBytesQ4_K]
	for j := 0; j < 8; j++ {
		sc, m := wire.ScaleMinQ4_K(j, scales)
		d1, m1 := float32(d*float32(sc)), float32(dmin*float32(m))
		b := 8*s + j
		xs := x[b*wire.QK : (b+1)*wire.QK : (b+1)*wire.QK]
		q := qs[32*(j/2) : 32*(j/2)+32 : 32*(j/2)+32]
		shift := 4 * uint(j&1)
		var s0, s1 int32
		for t := 0; t < wire.QK; t += 2 {
			s0 += int32(q[t]>>shift&0xF) * int32(xs[t])
			s1 += int32(q[t+1]>>shift&0xF) * int32(xs[t+1])
		}
		isum := s0 + s1
		a, bm := float32(d1*dx[b]), float32(m1*dx[b])
		acc = float32(acc + float32(float32(float32(isum)*a)-float32(float32(sx[b])*bm)))
	}
	return acc
}

// dotGo dispatches on the format.
func dotGo(f wire.Format, x []int8, dx []float32, sx []int32, w []byte, nb int) float32 {
	switch f {
	case wire.Q8_0:
		return dotQ8Go(x, dx, w, nb)
	case wire.Q4_K:
		return dotQ4KGo(x, dx, sx, w, nb)
	}
	return dotQ4Go(x, dx, w, nb)
}

// mv8Go: y[r] = dot(x, w[r*ldw:]) for r < 8.
func mv8Go(f wire.Format, x []int8, dx []float32, sx []int32, w []byte, ldw, nb int, y []float32) {
	for r := 0; r < 8; r++ {
		y[r] = dotGo(f, x, dx, sx, w[r*ldw:], nb)
	}
}

// mm28Go: for r < 2, c < 8: y[r*ldy+c] = dot(x[r*k:], w[c*ldw:]) for
// block_q4_K weights (k = 32*nb).
func mm28Go(x []int8, dx []float32, sx []int32, w []byte, ldw, nb int, y []float32, ldy int) {
	k := nb * wire.QK
	for r := 0; r < 2; r++ {
		mv8Go(wire.Q4_K, x[r*k:], dx[r*nb:], sx[r*nb:], w, ldw, nb, y[r*ldy:])
	}
}

// mm24Go: for r < 2, c < 4: y[r*ldy+c] = dot(x[r*k:], w[c*ldw:]) (k = 32*nb).
func mm24Go(f wire.Format, x []int8, dx []float32, sx []int32, w []byte, ldw, nb int, y []float32, ldy int) {
	k := nb * wire.QK
	for r := 0; r < 2; r++ {
		for c := 0; c < 4; c++ {
			y[r*ldy+c] = dotGo(f, x[r*k:], dx[r*nb:], sx[r*nb:], w[c*ldw:], nb)
		}
	}
}

// mm16Go: for r < rows, c < 16: y[r*ldy+c] = dot(x[r*k:], w[c*ldw:]) for
// block_q8_0 or block_q4_0 weights (k = 32*nb).
func mm16Go(f wire.Format, x []int8, dx []float32, sx []int32, w []byte, ldw, nb, rows int, y []float32, ldy int) {
	k := nb * wire.QK
	for r := 0; r < rows; r++ {
		for c := 0; c < 16; c++ {
			y[r*ldy+c] = dotGo(f, x[r*k:], dx[r*nb:], sx[r*nb:], w[c*ldw:], nb)
		}
	}
}
