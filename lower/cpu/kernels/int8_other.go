//go:build !amd64 || purego

package kernels

// int8Lanes4 has no assembly here (useAsm is false, so it is never
// called).
func int8Lanes4(x []float32, w []byte, ldw, k8 int, acc *[32]float32) {
	panic("kernels: int8Lanes4 without AVX2")
}
