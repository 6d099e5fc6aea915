//go:build amd64 && !purego

package lwe

//go:noescape
func dot4AVX2(a0, a1, a2, a3 *uint32, b *uint32, n8 int, out *uint32)

// dot4Asm sets out[j] = a[j] . b[:n8] mod 2^32 (n8 a positive multiple of
// 8, every a[j] and b at least n8 long).
func dot4Asm(a *[4][]uint32, b []uint32, n8 int, out *[4]uint32) {
	_ = b[n8-1]
	for j := range a {
		_ = a[j][n8-1]
	}
	dot4AVX2(&a[0][0], &a[1][0], &a[2][0], &a[3][0], &b[0], n8, &out[0])
}
