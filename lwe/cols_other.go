//go:build !amd64 || purego

package lwe

// useAsm is false: no assembly column sums in this build.
var useAsm = false

// addCols4 has no assembly here (useAsm is false, so it is never called).
func addCols4(dst, t []uint32, off, stride int, idx []int32, sgn []uint32) {
	panic("lwe: addCols4 without AVX2")
}

// addTile64 has no assembly here (useAsm is false, so it is never called).
func addTile64(dst, t []uint32, off, stride int, idx []int32, sgn []uint32) {
	panic("lwe: addTile64 without AVX2")
}

// addTile64Pf has no assembly here (useAsm is false, so it is never called).
func addTile64Pf(dst, t []uint32, off, stride int, idx []int32, sgn []uint32, pf int) {
	panic("lwe: addTile64Pf without AVX2")
}
