//go:build !amd64 || purego

package quant

import "gelo/device/wire"

// useAsm is always false without assembly kernels.
var useAsm = false

const haveAsm = false

// useAVX512 is always false without assembly kernels.
var useAVX512 = false

// useAMX is always false without assembly kernels.
var useAMX = false

// prefetchL2 has no kernels to select here.
var prefetchL2 = false

func mv8(f wire.Format, x []int8, dx []float32, sx []int32, w []byte, ldw, nb int, y []float32) {
	mv8Go(f, x, dx, sx, w, ldw, nb, y)
}

func mm28(x []int8, dx []float32, sx []int32, w []byte, ldw, nb int, y []float32, ldy int) {
	mm28Go(x, dx, sx, w, ldw, nb, y, ldy)
}

func mm24(f wire.Format, x []int8, dx []float32, sx []int32, w []byte, ldw, nb int, y []float32, ldy int) {
	mm24Go(f, x, dx, sx, w, ldw, nb, y, ldy)
}

func mm16(f wire.Format, x []int8, dx []float32, sx []int32, w []byte, ldw, nb, rows int, y []float32, ldy int) {
	mm16Go(f, x, dx, sx, w, ldw, nb, rows, y, ldy)
}

func q8mv8ILAVX2(*int8, *float32, *byte, int, *float32)               { panic("no assembly") }
func q4mv8ILAVX2(*int8, *float32, *int32, *byte, int, *float32)       { panic("no assembly") }
func q8mm48ILAVX2(*int8, *float32, *byte, int, *float32, int)         { panic("no assembly") }
func q4mm48ILAVX2(*int8, *float32, *int32, *byte, int, *float32, int) { panic("no assembly") }
func q4kmm8ILAVX2(*int8, *float32, *int32, *byte, int, int, *float32, int) {
	panic("no assembly")
}
func q8mv16ILAVX512(*int8, *float32, *int32, *byte, int, *float32) { panic("no assembly") }
func q4mv16ILAVX512(*int8, *float32, *int32, *byte, int, *float32) { panic("no assembly") }
func q4mv16ILAVX512L2(*int8, *float32, *int32, *byte, int, *float32) {
	panic("no assembly")
}
func q8mm16ILAVX512(*int8, *float32, *int32, *byte, int, int, *float32, int) {
	panic("no assembly")
}
func q4mm16ILAVX512(*int8, *float32, *int32, *byte, int, int, *float32, int) {
	panic("no assembly")
}
func q4kmm16ILAVX512(*int8, *float32, *int32, *byte, int, int, *float32, int) {
	panic("no assembly")
}
func q4kmv16ILAVX512(*int8, *float32, *int32, *byte, int, *float32) {
	panic("no assembly")
}
func q4kmv16ILAVX512L2(*int8, *float32, *int32, *byte, int, *float32) {
	panic("no assembly")
}

func quantizeActAsm(q []int8, d []float32, s []int32, x []float32) int { return 0 }
func q8mm16ILAMX(*int8, *float32, *byte, int, int, *float32, int, *int32, *byte) {
	panic("no assembly")
}
func q4mm16ILAMX(*int8, *float32, *byte, int, int, *float32, int, *int32, *byte) {
	panic("no assembly")
}
func q4kmm16ILAMX(*int8, *float32, *byte, int, int, *float32, int, *int32, *byte) {
	panic("no assembly")
}
