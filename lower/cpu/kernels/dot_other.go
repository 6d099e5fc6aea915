//go:build !amd64 || purego

package kernels

// useAsm is always false without assembly kernels.
var useAsm = false

var useAVX512 = false

var useF16C = false

// prefetchL2 has no kernels to select here.
var prefetchL2 = false

const haveAsm = false

func gemm6x8(x []float32, ldx int, w []float32, ldw, k, ntiles int, y []float32, ldy int) {
	panic("kernels: gemm6x8 without AVX-512")
}

func packTiles(dst, w32 []float32, wb []uint16, ldw, k, ntiles int) {
	panic("kernels: packTiles without AVX-512")
}

func gemm6x8Packed(x []float32, ldx int, wp []float32, k, ntiles int, y []float32, ldy int) {
	panic("kernels: gemm6x8Packed without AVX-512")
}

func gemm4x3(x0, x1, x2, x3, w []float32, ldw, k, ntiles int, y0, y1, y2, y3 []float32) {
	gemm4x3Go(x0, x1, x2, x3, w, ldw, k, ntiles, y0, y1, y2, y3)
}

func gemv1x8(x, w []float32, ldw, k, ntiles int, y []float32) {
	gemv1x8Go(x, w, ldw, k, ntiles, y)
}

func dot(x, w []float32, k int) float32 { return dotGo(x, w, k) }

func sum64(p []float32, n int) float32 { return sumGo(p, n) }

func fmaLoop(iters int) { fmaLoopGo(iters) }

func wsum(out, p, v []float32, ldv, t, d int, acc bool) { wsumGo(out, p, v, ldv, t, d, acc) }

func vecPrefix(n int) int { return 0 }

func scaleMaxVec(s []float32, n int, scale float32) float32 { panic("unreachable") }

func expSumVec(s []float32, n int, m float32, sums *[4]float64) { panic("unreachable") }

func scaleVec(s []float32, n int, f float32) { panic("unreachable") }

func siluVec(y, x, u []float32, n int) { panic("unreachable") }

func widenBF16AVX2(dst *float32, src *uint16, n int) { panic("kernels: no assembly") }

func gemv1x8BF16(x []float32, w []uint16, ldw, k, ntiles int, y []float32) {
	panic("kernels: gemv1x8BF16 without assembly")
}

func gemm6x8BF16(x []float32, ldx int, w []uint16, ldw, k, ntiles int, y []float32, ldy int) {
	panic("kernels: gemm6x8BF16 without AVX-512")
}

func widenF16AVX2(dst *float32, src *uint16, n int) { panic("kernels: no assembly") }

func kv16Asm(f KVFormat, hd int) bool { return false }

func gemv1x8H16(f KVFormat, x []float32, w []uint16, ldw, k, ntiles int, y []float32) {
	panic("kernels: gemv1x8H16 without assembly")
}

func wsumH16(f KVFormat, out, p []float32, v []uint16, ldv, t, d int, acc bool) {
	panic("kernels: wsumH16 without assembly")
}

// useBF16Dot is always false without assembly kernels.
var useBF16Dot = false

func bf16Dot1x8([]uint16, []uint16, int, int, int, []float32) { panic("kernels: no assembly") }
func bf16Dot4x6([]uint16, int, []uint16, int, int, int, []float32, int) {
	panic("kernels: no assembly")
}

func wsum2Asm(f KVFormat, d int) bool { return false }

func wsum2(f KVFormat, out0, out1, p0, p1 []float32, v []float32, h []uint16, ldv, t, d int, acc bool) {
	panic("kernels: wsum2 without assembly")
}

func gemv2Asm(f KVFormat, k int) bool { return false }

func gemv2x8F32(x0, x1, w []float32, ldw, k, ntiles int, y0, y1 []float32) {
	panic("kernels: gemv2x8F32 without assembly")
}

func gemv2x8H16(f KVFormat, x0, x1 []float32, w []uint16, ldw, k, ntiles int, y0, y1 []float32) {
	panic("kernels: gemv2x8H16 without assembly")
}

func f32ToF16F16C(dst *uint16, src *float32, n int) {
	panic("kernels: f32ToF16F16C without its assembly")
}

func f32ToBF16AVX2(dst *uint16, src *float32, n int) {
	panic("kernels: f32ToBF16AVX2 without its assembly")
}

func wsum6Asm(f KVFormat, d int) bool { return false }

func wsum6(f KVFormat, out []float32, ldo, oh int, p []float32, ldp, ph int, v []float32, h []uint16, ldv, t, d int, acc bool) {
	panic("kernels: wsum6 without assembly")
}

func bf16DotLoop(iters int) { panic("kernels: bf16DotLoop without assembly") }
