//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// useAsm selects the AVX2+FMA assembly kernels. It is decided once at init
// from CPU feature detection (tests flip it to compare with the fallback).
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// haveAsm reports whether assembly kernels exist for this build at all.
const haveAsm = true

//go:noescape
func gemm4x3AVX2(x0, x1, x2, x3, w *float32, ldw, k, ntiles int, y0, y1, y2, y3 *float32)

//go:noescape
func gemv1x8AVX2(x, w *float32, ldw, k, ntiles int, y *float32)

//go:noescape
func dotAVX2(x, w *float32, k int) float32

//go:noescape
func sumAVX2(p *float32, n int) float32

func fmaLoopAVX2(iters int)

// The wrappers below check every bound the assembly relies on (a panic on
// an internal indexing bug, never a stray memory access) and dispatch.

// gemm4x3 computes, for t < ntiles, r < 4, c < 3:
// y_r[3t+c] = dot(x_r[0:k], w[(3t+c)*ldw:][0:k]). k >= 1, ntiles >= 1.
func gemm4x3(x0, x1, x2, x3, w []float32, ldw, k, ntiles int, y0, y1, y2, y3 []float32) {
	_, _, _, _ = x0[k-1], x1[k-1], x2[k-1], x3[k-1]
	_ = w[(3*ntiles-1)*ldw+k-1]
	_, _, _, _ = y0[3*ntiles-1], y1[3*ntiles-1], y2[3*ntiles-1], y3[3*ntiles-1]
	if useAsm {
		gemm4x3AVX2(&x0[0], &x1[0], &x2[0], &x3[0], &w[0], ldw, k, ntiles, &y0[0], &y1[0], &y2[0], &y3[0])
		return
	}
	gemm4x3Go(x0, x1, x2, x3, w, ldw, k, ntiles, y0, y1, y2, y3)
}

// gemv1x8 computes, for t < ntiles, c < 8: y[8t+c] = dot(x[0:k], w[(8t+c)*ldw:][0:k]).
func gemv1x8(x, w []float32, ldw, k, ntiles int, y []float32) {
	_ = x[k-1]
	_ = w[(8*ntiles-1)*ldw+k-1]
	_ = y[8*ntiles-1]
	if useAsm {
		gemv1x8AVX2(&x[0], &w[0], ldw, k, ntiles, &y[0])
		return
	}
	gemv1x8Go(x, w, ldw, k, ntiles, y)
}

// dot returns dot(x[0:k], w[0:k]) in the canonical order (k >= 1).
func dot(x, w []float32, k int) float32 {
	_, _ = x[k-1], w[k-1]
	if useAsm {
		return dotAVX2(&x[0], &w[0], k)
	}
	return dotGo(x, w, k)
}

// sum64 sums p[0:n] (n a multiple of 64) in an unspecified fixed order.
func sum64(p []float32, n int) float32 {
	_ = p[n-1]
	if useAsm {
		return sumAVX2(&p[0], n)
	}
	return sumGo(p, n)
}

// fmaLoop runs iters iterations of 192 flops in registers.
func fmaLoop(iters int) {
	if useAsm {
		fmaLoopAVX2(iters)
		return
	}
	fmaLoopGo(iters)
}

//go:noescape
func wsumAVX2(out, p, v *float32, ldv, t, d, acc int)

//go:noescape
func prefetchRowsAsm(p *float32, stride, rows, width int)

// wsum sets out[c] = a + sum_{s<t} p[s]*v[s*ldv+c] for c < d, with
// a = out[c] if acc, else 0, in the order documented on Attention (t, d >= 1).
func wsum(out, p, v []float32, ldv, t, d int, acc bool) {
	_, _ = out[d-1], p[t-1]
	_ = v[(t-1)*ldv+d-1]
	if useAsm {
		a := 0
		if acc {
			a = 1
		}
		wsumAVX2(&out[0], &p[0], &v[0], ldv, t, d, a)
		return
	}
	wsumGo(out, p, v, ldv, t, d, acc)
}

// prefetchRows hints that rows rows of width floats, row r at p[r*stride:],
// will be read soon. p must hold them all.
func prefetchRows(p []float32, stride, rows, width int) {
	if rows <= 0 || width <= 0 {
		return
	}
	_ = p[(rows-1)*stride+width-1]
	if useAsm {
		prefetchRowsAsm(&p[0], stride, rows, width)
	}
}
