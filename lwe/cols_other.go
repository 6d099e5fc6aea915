//go:build !amd64 || purego

package lwe

// useAsm is false: no assembly column sums in this build.
var useAsm = false

// use512 is false: no assembly here.
var use512 = false

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

// dot4Asm has no assembly here (useAsm is false, so it is never called).
func dot4Asm(a *[4][]uint32, b []uint32, n8 int, out *[4]uint32) {
	panic("lwe: dot4Asm without AVX2")
}

// sumSquaresAVX2 has no assembly here (useAsm is false, so it is never called).
func sumSquaresAVX2(x *float32, n8 int) float64 { panic("lwe: sumSquaresAVX2 without AVX2") }

// encodeAVX2 has no assembly here (useAsm is false, so it is never called).
func encodeAVX2(x *float32, m *uint32, c *uint32, n4 int, inv float64, delta uint32) int64 {
	panic("lwe: encodeAVX2 without AVX2")
}

// decodeAVX2 has no assembly here (useAsm is false, so it is never called).
func decodeAVX2(y, u *uint32, v *int32, norm *float64, scale *float32, out *float32, n4 int, lim, f float64) bool {
	panic("lwe: decodeAVX2 without AVX2")
}

// addTileNext is addTileChecked for one sub-tile here (no prefetch).
func addTileNext(dst, next, t []uint32, idx []int32, sgn []uint32) {
	addTileChecked(dst, t, 0, len(dst), idx, sgn)
}
