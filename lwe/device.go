package lwe

import "fmt"

// MulRef is the device's product, reference form: for each of the
// len(c) / d_in rows of c, y_row = W_q c_row mod 2^32, with every int8
// weight sign-extended to 32 bits and every multiply-add wrapping in
// uint32 (which is arithmetic mod 2^32: Go's, and SPIR-V's OpIMul/OpIAdd).
// y must hold rows * d_out words.
func MulRef(w *Weights, c, y []uint32) error {
	if err := mulShape(w, c, y); err != nil {
		return err
	}
	mulRef(w, c, y)
	return nil
}

func mulShape(w *Weights, c, y []uint32) error {
	if len(c)%w.In != 0 || len(y) != len(c)/w.In*w.Out {
		return fmt.Errorf("lwe: device product: %d input words for width %d, %d output words for %d rows of %d",
			len(c), w.In, len(y), len(c)/w.In, w.Out)
	}
	return nil
}

// mulRef computes MulRef's product four rows of c at a time, so each
// weight row is read once per four rows.
func mulRef(w *Weights, c, y []uint32) {
	rows := len(c) / w.In
	in, out := w.In, w.Out
	r := 0
	for ; r+4 <= rows; r += 4 {
		c0, c1 := c[r*in:(r+1)*in], c[(r+1)*in:(r+2)*in]
		c2, c3 := c[(r+2)*in:(r+3)*in], c[(r+3)*in:(r+4)*in]
		for j := 0; j < out; j++ {
			wr := w.Q[j*in : (j+1)*in]
			var a0, a1, a2, a3 uint32
			for i, q := range wr {
				wq := uint32(int32(q))
				a0 += wq * c0[i]
				a1 += wq * c1[i]
				a2 += wq * c2[i]
				a3 += wq * c3[i]
			}
			y[r*out+j], y[(r+1)*out+j], y[(r+2)*out+j], y[(r+3)*out+j] = a0, a1, a2, a3
		}
	}
	for ; r < rows; r++ {
		cr := c[r*in : (r+1)*in]
		for j := 0; j < out; j++ {
			var acc uint32
			for i, q := range w.Q[j*in : (j+1)*in] {
				acc += uint32(int32(q)) * cr[i]
			}
			y[r*out+j] = acc
		}
	}
}

// SplitLimbs writes the signed byte limbs of each word of c:
// c = b0 + 2^8 b1 + 2^16 b2 + 2^24 b3 mod 2^32 with every b in
// [-128, 127]. Each limb is the low byte of what is left, read as int8;
// subtracting it leaves a multiple of 256 (the carry a negative limb
// borrows), and the top limb's carry out is 2^32 = 0 mod 2^32. limbs[l]
// must hold len(c) bytes.
func SplitLimbs(c []uint32, limbs *[4][]int8) {
	for i, v := range c {
		for l := range 4 {
			b := int8(v)
			limbs[l][i] = b
			v = (v - uint32(int32(b))) >> 8
		}
	}
}

// LimbMaxIn is the widest input for which a limb dot product cannot leave
// int32: |w| <= 127 and |b| <= 128, so d_in * 16256 < 2^31. Go's int32
// wraps, so MulLimbs is exact mod 2^32 past it too; a GPU's s8 x s8 -> s32
// GEMM may saturate instead.
const LimbMaxIn = (1<<31 - 1) / (QMax * 128)

// MulLimbs is the device's product in the form a GPU runs it: c split by
// SplitLimbs into four int8 limbs, four int8 x int8 -> int32 products with
// W_q, recombined as y = sum_l (uint32(p_l) << 8l) with wrapping uint32
// arithmetic. It equals MulRef bit for bit (TestLimbsEqualDirect).
func MulLimbs(w *Weights, c, y []uint32) error {
	if err := mulShape(w, c, y); err != nil {
		return err
	}
	var limbs [4][]int8
	for l := range limbs {
		limbs[l] = make([]int8, len(c))
	}
	SplitLimbs(c, &limbs)
	rows := len(c) / w.In
	for r := 0; r < rows; r++ {
		for j := 0; j < w.Out; j++ {
			wr := w.Row(j)
			var acc uint32
			for l := range limbs {
				b := limbs[l][r*w.In : (r+1)*w.In]
				var p int32
				for i, q := range wr {
					p += int32(q) * int32(b[i])
				}
				acc += uint32(p) << (8 * l)
			}
			y[r*w.Out+j] = acc
		}
	}
	return nil
}
