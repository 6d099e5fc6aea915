//go:build amd64 && !purego

package mask

import "golang.org/x/sys/cpu"

// useAsm selects the AVX2+FMA kernels. It is a variable only so tests can
// compare the assembly against the Go reference kernels.
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// All strides of the assembly kernels are noted per function; pointers must
// address memory the Go wrappers in kernels.go have bounds-checked.

// sgemm4x16: 4 rows x 16 columns, element strides rs, ks, ldx, ldy.
//
//go:noescape
func sgemm4x16(a *float32, rs, ks int, x *float32, ldx int, y *float32, ldy int, kc int)

// sgemm4x8: 4 rows x 8 columns, element strides.
//
//go:noescape
func sgemm4x8(a *float32, rs, ks int, x *float32, ldx int, y *float32, ldy int, kc int)

// sgemm1x16: 1 row x 16 columns, element strides.
//
//go:noescape
func sgemm1x16(a *float32, ks int, x *float32, ldx int, y *float32, kc int)

// fwht4 / fwht4f / fwht2f: one butterfly pass; ldb and nb are in bytes, ng
// is the number of radix*h row groups, nb a positive multiple of 32.
//
//go:noescape
func fwht4(p *float32, ldb, h, ng, nb int)

//go:noescape
func fwht4f(p *float32, ldb, h, ng, nb int, fac *float32)

//go:noescape
func fwht2f(p *float32, ldb, h, ng, nb int, fac *float32)

// ddot4x2: strides in bytes, n4 >= 1 chunks of 4 elements.
//
//go:noescape
func ddot4x2(v *float64, ldvb int, a *float64, ldab int, n4 int, out *[32]float64)

// daxpy4x2: strides in bytes, n16 >= 1 chunks of 16 elements.
//
//go:noescape
func daxpy4x2(v *float64, ldvb int, a *float64, ldab int, n16 int, w *[8]float64)

// ddot16asm: n16 >= 1 chunks of 16 elements.
//
//go:noescape
func ddot16asm(x, y *float64, n16 int, out *[16]float64)

// daxpyasm: y = fma(alpha, x, y) over n16 >= 1 chunks of 16 elements.
//
//go:noescape
func daxpyasm(alpha float64, x, y *float64, n16 int)
