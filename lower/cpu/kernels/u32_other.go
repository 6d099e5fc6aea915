//go:build !amd64 || purego

package kernels

// u32Lanes4 has no assembly here (useAsm is false, so it is never
// called).
func u32Lanes4(x []uint32, w []byte, ldw, k8 int, acc *[32]uint32) {
	panic("kernels: u32Lanes4 without AVX2")
}
