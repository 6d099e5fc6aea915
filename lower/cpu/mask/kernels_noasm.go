//go:build !amd64 || purego

package mask

// useAsm is false without assembly; the stubs below are never reached.
var useAsm = false

const noAsm = "mask: assembly kernel called on a build without assembly"

func sgemm4x16(a *float32, rs, ks int, x *float32, ldx int, y *float32, ldy int, kc int) {
	panic(noAsm)
}
func sgemm4x8(a *float32, rs, ks int, x *float32, ldx int, y *float32, ldy int, kc int) {
	panic(noAsm)
}
func sgemm1x16(a *float32, ks int, x *float32, ldx int, y *float32, kc int) { panic(noAsm) }
func fwht4(p *float32, ldb, h, ng, nb int)                                  { panic(noAsm) }
func fwht4f(p *float32, ldb, h, ng, nb int, fac *float32)                   { panic(noAsm) }
func fwht2f(p *float32, ldb, h, ng, nb int, fac *float32)                   { panic(noAsm) }
func ddot4x2(v *float64, ldvb int, a *float64, ldab int, n4 int, out *[32]float64) {
	panic(noAsm)
}
func daxpy4x2(v *float64, ldvb int, a *float64, ldab int, n16 int, w *[8]float64) {
	panic(noAsm)
}
func ddot16asm(x, y *float64, n16 int, out *[16]float64) { panic(noAsm) }
func daxpyasm(alpha float64, x, y *float64, n16 int)     { panic(noAsm) }
