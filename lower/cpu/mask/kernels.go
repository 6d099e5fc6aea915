package mask

import "math"

// This file holds the portable reference kernels. Every AVX2 kernel in
// kernels_amd64.s computes exactly the same IEEE operations in exactly the
// same order as its Go twin here, so results are bit-identical whether or
// not the assembly is used (kernels_test.go checks this), and whichever
// code path processes a given column.

// fma32 returns a*b+c rounded once to float32, matching VFMADD231PS.
// a*b is exact in float64; the float64 sum is rounded to odd (exact error
// from TwoSum) so the final rounding to float32 is a single correct
// rounding (53 >= 2*24+2).
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	cc := float64(c)
	s := p + cc
	bb := s - p
	e := (p - (s - bb)) + (cc - bb)
	if e != 0 && !math.IsInf(s, 0) && !math.IsNaN(e) {
		bits := math.Float64bits(s)
		if bits&1 == 0 {
			if (e > 0) == (s > 0) {
				bits++
			} else {
				bits--
			}
			s = math.Float64frombits(bits)
		}
	}
	return float32(s)
}

// sgemmGo is the reference for sgemm4x16/sgemm4x8/sgemm1x16: for r < mr,
// c < nc: acc = y[r][c]; for k < kc: acc = fma(a(r,k), x[k][c], acc);
// y[r][c] = acc, with a(r,k) = a[r*rs+k*ks]. Strides are in elements.
func sgemmGo(a []float32, rs, ks int, x []float32, ldx int, y []float32, ldy int, mr, nc, kc int) {
	for r := 0; r < mr; r++ {
		yr := y[r*ldy : r*ldy+nc]
		for c := range yr {
			acc := yr[c]
			ai, xi := r*rs, c
			for k := 0; k < kc; k++ {
				acc = fma32(a[ai], x[xi], acc)
				ai += ks
				xi += ldx
			}
			yr[c] = acc
		}
	}
}

// fwhtGo is the reference for the FWHT butterfly passes. radix is 2 or 4;
// the pass combines rows g+j, g+j+h, (g+j+2h, g+j+3h) for every group start
// g (step radix*h) and j < h, over columns [0, n) of a block with row
// stride ld. If fac is non-nil, fac[2*row] multiplies the inputs and
// fac[2*row+1] multiplies the outputs of each row (interleaved pre/post).
func fwhtGo(p []float32, ld, s, h, n, radix int, fac []float32) {
	for g := 0; g < s; g += radix * h {
		for j := 0; j < h; j++ {
			i0 := g + j
			if radix == 2 {
				r0 := p[i0*ld : i0*ld+n]
				r1 := p[(i0+h)*ld : (i0+h)*ld+n]
				if fac == nil {
					for c := range r0 {
						x0, x1 := r0[c], r1[c]
						r0[c], r1[c] = x0+x1, x0-x1
					}
					continue
				}
				f0, f1 := fac[2*i0], fac[2*(i0+h)]
				q0, q1 := fac[2*i0+1], fac[2*(i0+h)+1]
				for c := range r0 {
					x0, x1 := float32(r0[c]*f0), float32(r1[c]*f1)
					r0[c], r1[c] = float32(x0+x1)*q0, float32(x0-x1)*q1
				}
				continue
			}
			r0 := p[i0*ld : i0*ld+n]
			r1 := p[(i0+h)*ld : (i0+h)*ld+n]
			r2 := p[(i0+2*h)*ld : (i0+2*h)*ld+n]
			r3 := p[(i0+3*h)*ld : (i0+3*h)*ld+n]
			if fac == nil {
				for c := range r0 {
					x0, x1, x2, x3 := r0[c], r1[c], r2[c], r3[c]
					a, b := x0+x1, x0-x1
					cc, e := x2+x3, x2-x3
					r0[c], r1[c], r2[c], r3[c] = a+cc, b+e, a-cc, b-e
				}
				continue
			}
			f0, f1, f2, f3 := fac[2*i0], fac[2*(i0+h)], fac[2*(i0+2*h)], fac[2*(i0+3*h)]
			q0, q1, q2, q3 := fac[2*i0+1], fac[2*(i0+h)+1], fac[2*(i0+2*h)+1], fac[2*(i0+3*h)+1]
			for c := range r0 {
				x0, x1 := float32(r0[c]*f0), float32(r1[c]*f1)
				x2, x3 := float32(r2[c]*f2), float32(r3[c]*f3)
				a, b := x0+x1, x0-x1
				cc, e := x2+x3, x2-x3
				r0[c] = float32(a+cc) * q0
				r1[c] = float32(b+e) * q1
				r2[c] = float32(a-cc) * q2
				r3[c] = float32(b-e) * q3
			}
		}
	}
}

// ddot4x2Go is the reference for ddot4x2: out[(q*2+c)*4+l] is the FMA
// chain over t < n4 of v_q[4t+l]*a_c[4t+l] (v_q = v[q*ldv:], a_c = a[c*lda:]).
func ddot4x2Go(v []float64, ldv int, a []float64, lda int, n4 int, out *[32]float64) {
	*out = [32]float64{}
	for q := 0; q < 4; q++ {
		for c := 0; c < 2; c++ {
			o := out[(q*2+c)*4 : (q*2+c)*4+4]
			vq := v[q*ldv:]
			ac := a[c*lda:]
			for t := 0; t < n4; t++ {
				for l := 0; l < 4; l++ {
					o[l] = math.FMA(vq[4*t+l], ac[4*t+l], o[l])
				}
			}
		}
	}
}

// daxpy4x2Go is the reference for daxpy4x2: for c < 2 and i < n:
// a_c[i] -= w[q*2+c]*v_q[i] for q = 0..3 in order (fused).
func daxpy4x2Go(v []float64, ldv int, a []float64, lda int, n int, w *[8]float64) {
	for c := 0; c < 2; c++ {
		ac := a[c*lda : c*lda+n]
		for i := range ac {
			x := ac[i]
			for q := 0; q < 4; q++ {
				x = math.FMA(-w[q*2+c], v[q*ldv+i], x)
			}
			ac[i] = x
		}
	}
}

// ddot16Go is the reference for ddot16: 16 lanes, lane l accumulates
// elements i = 16t+l (t < n16) with FMA; returns the lane vector.
func ddot16Go(x, y []float64, n16 int, out *[16]float64) {
	*out = [16]float64{}
	for t := 0; t < n16; t++ {
		for l := 0; l < 16; l++ {
			out[l] = math.FMA(x[16*t+l], y[16*t+l], out[l])
		}
	}
}

// daxpyGo: y[i] = fma(alpha, x[i], y[i]).
func daxpyGo(alpha float64, x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = math.FMA(alpha, v, y[i])
	}
}

// reduce4 sums a 4-lane accumulator as (l0+l1)+(l2+l3).
func reduce4(l []float64) float64 { return (l[0] + l[1]) + (l[2] + l[3]) }

// reduce16 sums a 16-lane accumulator (four 4-lane vectors v0..v3) as
// vector ((v0+v1)+(v2+v3)) followed by reduce4.
func reduce16(l *[16]float64) float64 {
	var v [4]float64
	for i := 0; i < 4; i++ {
		v[i] = (l[i] + l[4+i]) + (l[8+i] + l[12+i])
	}
	return reduce4(v[:])
}

// dot returns sum x[i]*y[i] with the fixed 16-lane order (see ddot16Go)
// followed by a sequential fused tail. len(y) >= len(x).
func dot(x, y []float64) float64 {
	n := len(x)
	y = y[:n]
	n16 := n / 16
	var lanes [16]float64
	if n16 > 0 {
		ddot16(x, y, n16, &lanes)
	}
	s := reduce16(&lanes)
	for i := 16 * n16; i < n; i++ {
		s = math.FMA(x[i], y[i], s)
	}
	return s
}

// axpy: y[i] = fma(alpha, x[i], y[i]).
func axpy(alpha float64, x, y []float64) {
	if len(x) == 0 {
		return
	}
	y = y[:len(x)]
	daxpy(alpha, x, y)
}

// sgemmTile updates the mr x nc tile y (row stride ldy) with the fused
// chain y[r][c] = fma(a(r,k), x[k][c], ...) over k < kc, a(r,k) =
// a[r*rs+k*ks]. mr is 1..4. Columns are processed in 16- then 8-wide
// assembly chunks and a Go tail; all paths give the same bits.
func sgemmTile(a []float32, rs, ks int, x []float32, ldx int, y []float32, ldy int, mr, nc, kc int) {
	if mr <= 0 || nc <= 0 || kc <= 0 {
		return
	}
	// Bounds: these index expressions fault (an internal bug, never bad
	// caller input) before any assembly touches memory out of range.
	_ = a[(mr-1)*rs+(kc-1)*ks]
	_ = x[(kc-1)*ldx+nc-1]
	_ = y[(mr-1)*ldy+nc-1]
	c := 0
	if useAsm {
		for ; c+16 <= nc; c += 16 {
			if mr == 4 {
				sgemm4x16(&a[0], rs, ks, &x[c], ldx, &y[c], ldy, kc)
				continue
			}
			for r := 0; r < mr; r++ {
				sgemm1x16(&a[r*rs], ks, &x[c], ldx, &y[r*ldy+c], kc)
			}
		}
		if c+8 <= nc && mr == 4 {
			sgemm4x8(&a[0], rs, ks, &x[c], ldx, &y[c], ldy, kc)
			c += 8
		}
	}
	if c < nc {
		sgemmGo(a, rs, ks, x[c:], ldx, y[c:], ldy, mr, nc-c, kc)
	}
}

// fwhtPass runs one butterfly pass (radix 2 or 4, stride h) over the s x n
// block p with row stride ld; fac as in fwhtGo (nil for a plain radix-4
// pass).
func fwhtPass(p []float32, ld, s, h, n, radix int, fac []float32) {
	if n <= 0 {
		return
	}
	_ = p[(s-1)*ld+n-1]
	if fac != nil {
		_ = fac[2*s-1]
	}
	c := 0
	if useAsm && n >= 8 && (fac != nil || radix == 4) {
		c = n &^ 7
		ng := s / (radix * h)
		switch {
		case radix == 4 && fac == nil:
			fwht4(&p[0], ld*4, h, ng, c*4)
		case radix == 4:
			fwht4f(&p[0], ld*4, h, ng, c*4, &fac[0])
		default:
			fwht2f(&p[0], ld*4, h, ng, c*4, &fac[0])
		}
	}
	if c < n {
		fwhtGo(p[c:], ld, s, h, n-c, radix, fac)
	}
}

// dot4x2 fills w[q*2+c] (q < 4, c < 2) with dot(v_q, a_c) over n elements
// using the fixed lane order: 4-lane fused accumulators over the first
// n&^3 elements, reduced as (l0+l1)+(l2+l3), then a fused sequential tail.
func dot4x2(v []float64, ldv int, a []float64, lda int, n int, w *[8]float64) {
	var lanes [32]float64
	n4 := n / 4
	if n4 > 0 {
		_ = v[3*ldv+n-1]
		_ = a[lda+n-1]
		if useAsm {
			ddot4x2(&v[0], ldv*8, &a[0], lda*8, n4, &lanes)
		} else {
			ddot4x2Go(v, ldv, a, lda, n4, &lanes)
		}
	}
	for q := 0; q < 4; q++ {
		for c := 0; c < 2; c++ {
			s := reduce4(lanes[(q*2+c)*4:])
			vq, ac := v[q*ldv:], a[c*lda:]
			for i := 4 * n4; i < n; i++ {
				s = math.FMA(vq[i], ac[i], s)
			}
			w[q*2+c] = s
		}
	}
}

// dot1 is dot4x2's arithmetic for a single (v, a) pair: the result is
// bit-identical to the corresponding entry of dot4x2.
func dot1(v, a []float64, n int) float64 {
	var o [4]float64
	n4 := n / 4
	for t := 0; t < n4; t++ {
		for l := 0; l < 4; l++ {
			o[l] = math.FMA(v[4*t+l], a[4*t+l], o[l])
		}
	}
	s := reduce4(o[:])
	for i := 4 * n4; i < n; i++ {
		s = math.FMA(v[i], a[i], s)
	}
	return s
}

// axpy4x2 applies a_c[i] -= sum_q w[q*2+c]*v_q[i] (q = 0..3 in order,
// fused) for c < 2, i < n.
func axpy4x2(v []float64, ldv int, a []float64, lda int, n int, w *[8]float64) {
	if n <= 0 {
		return
	}
	_ = v[3*ldv+n-1]
	_ = a[lda+n-1]
	i := 0
	if useAsm {
		i = n &^ 15
		if i > 0 {
			daxpy4x2(&v[0], ldv*8, &a[0], lda*8, i/16, w)
		}
	}
	if i < n {
		daxpy4x2Go(v[i:], ldv, a[i:], lda, n-i, w)
	}
}

// axpy1 is axpy4x2's arithmetic for one column and one group of up to
// four vectors (nq <= 4): a[i] -= w[q]*v_q[i], q in order, fused.
func axpy1(v []float64, ldv int, a []float64, n int, w []float64, nq int) {
	a = a[:n]
	for i := range a {
		x := a[i]
		for q := 0; q < nq; q++ {
			x = math.FMA(-w[q], v[q*ldv+i], x)
		}
		a[i] = x
	}
}

func ddot16(x, y []float64, n16 int, out *[16]float64) {
	if useAsm {
		ddot16asm(&x[0], &y[0], n16, out)
		return
	}
	ddot16Go(x, y, n16, out)
}

func daxpy(alpha float64, x, y []float64) {
	n := len(x)
	i := 0
	if useAsm {
		i = n &^ 15
		if i > 0 {
			daxpyasm(alpha, &x[0], &y[0], i/16)
		}
	}
	if i < n {
		daxpyGo(alpha, x[i:], y[i:n])
	}
}
