package kernels

// Portable kernels. They follow exactly the lane structure of the assembly
// (see the package documentation). `acc += x*w` is fused into an FMA only
// where the Go compiler chooses to (arm64, amd64 with GOAMD64=v3), so the
// results may differ from the assembly in the last bits.

// dotGo returns dot(x[0:k], w[0:k]) in the canonical order.
func dotGo(x, w []float32, k int) float32 {
	x, w = x[:k:k], w[:k:k]
	c := k &^ 7
	var a0, a1, a2, a3, a4, a5, a6, a7 float32
	if r := k - c; r > 0 {
		var t [8]float32
		xt, wt := x[c:], w[c:]
		for l := range xt {
			t[l] = xt[l] * wt[l]
		}
		a0, a1, a2, a3, a4, a5, a6, a7 = t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]
	}
	for i := 0; i < c; i += 8 {
		xs, ws := x[i:i+8:i+8], w[i:i+8:i+8]
		a0 += xs[0] * ws[0]
		a1 += xs[1] * ws[1]
		a2 += xs[2] * ws[2]
		a3 += xs[3] * ws[3]
		a4 += xs[4] * ws[4]
		a5 += xs[5] * ws[5]
		a6 += xs[6] * ws[6]
		a7 += xs[7] * ws[7]
	}
	return ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))
}

func gemm4x3Go(x0, x1, x2, x3, w []float32, ldw, k, ntiles int, y0, y1, y2, y3 []float32) {
	for t := 0; t < ntiles; t++ {
		for c := 0; c < 3; c++ {
			j := 3*t + c
			wr := w[j*ldw : j*ldw+k]
			y0[j] = dotGo(x0, wr, k)
			y1[j] = dotGo(x1, wr, k)
			y2[j] = dotGo(x2, wr, k)
			y3[j] = dotGo(x3, wr, k)
		}
	}
}

func gemv1x8Go(x, w []float32, ldw, k, ntiles int, y []float32) {
	for j := 0; j < 8*ntiles; j++ {
		y[j] = dotGo(x, w[j*ldw:j*ldw+k], k)
	}
}

func wsumGo(out, p, v []float32, ldv, t, d int, acc bool) {
	out = out[:d:d]
	if !acc {
		clear(out)
	}
	for s := 0; s < t; s++ {
		ps := p[s]
		vs := v[s*ldv : s*ldv+d]
		for c := range out {
			out[c] += ps * vs[c]
		}
	}
}

func sumGo(p []float32, n int) float32 {
	var a [8]float32
	for i := 0; i+8 <= n; i += 8 {
		q := p[i : i+8 : i+8]
		a[0] += q[0]
		a[1] += q[1]
		a[2] += q[2]
		a[3] += q[3]
		a[4] += q[4]
		a[5] += q[5]
		a[6] += q[6]
		a[7] += q[7]
	}
	return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

var sink float32

func fmaLoopGo(iters int) {
	var a [12]float32
	b, c := float32(1e-9), float32(1)
	for i := 0; i < iters; i++ {
		for l := 0; l < 8; l++ {
			for j := range a {
				a[j] += b * c
			}
		}
	}
	for _, v := range a {
		sink += v
	}
}
