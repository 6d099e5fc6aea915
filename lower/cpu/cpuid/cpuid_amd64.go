//go:build !purego

package cpuid

// cpuid0 returns CPUID leaf 0's EBX, EDX and ECX: the vendor string's
// three 4-byte parts in that order.
//
//go:noescape
func cpuid0() (ebx, edx, ecx uint32)

func vendor() string {
	b, d, c := cpuid0()
	var s [12]byte
	for i, r := range [3]uint32{b, d, c} {
		for j := 0; j < 4; j++ {
			s[4*i+j] = byte(r >> (8 * j))
		}
	}
	return string(s[:])
}
