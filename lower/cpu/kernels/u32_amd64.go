//go:build amd64 && !purego

package kernels

//go:noescape
func u32Lanes4AVX2(x *uint32, w *byte, ldw, k8 int, acc *uint32)

// u32Lanes4 sets acc[8r+l] to the wrapping sum over i = l mod 8, i < k8,
// of int32(int8(w[r*ldw+i])) * x[i] for the four weight rows w[r*ldw:]
// (k8 > 0, a multiple of 8; useAsm).
func u32Lanes4(x []uint32, w []byte, ldw, k8 int, acc *[32]uint32) {
	_ = x[k8-1]
	_ = w[3*ldw+k8-1]
	u32Lanes4AVX2(&x[0], &w[0], ldw, k8, &acc[0])
}
