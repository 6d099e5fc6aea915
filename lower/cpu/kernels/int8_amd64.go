//go:build amd64 && !purego

package kernels

//go:noescape
func int8Lanes4AVX2(x *float32, w *byte, ldw, k8 int, acc *float32)

// int8Lanes4 sets acc[8r+l] to lane l of dotInt8 for the four weight rows
// w[r*ldw:] over the first k8 values (k8 > 0, a multiple of 8; useAsm).
func int8Lanes4(x []float32, w []byte, ldw, k8 int, acc *[32]float32) {
	_ = x[k8-1]
	_ = w[3*ldw+k8-1]
	int8Lanes4AVX2(&x[0], &w[0], ldw, k8, &acc[0])
}
