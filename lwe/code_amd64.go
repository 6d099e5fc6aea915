//go:build amd64 && !purego

package lwe

//go:noescape
func sumSquaresAVX2(x *float32, n8 int) float64

//go:noescape
func encodeAVX2(x *float32, m *uint32, c *uint32, n4 int, inv float64, delta uint32) int64

//go:noescape
func decodeAVX2(y, u *uint32, v *int32, norm *float64, scale *float32, out *float32, n4 int, lim, f float64) bool
