package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"
)

// TensorType is a ggml tensor type.
type TensorType uint32

// The ggml types gelo reads.
const (
	F32  TensorType = 0
	F16  TensorType = 1
	Q4_0 TensorType = 2
	Q8_0 TensorType = 8
	Q4_K TensorType = 12
	Q5_K TensorType = 13
	Q6_K TensorType = 14
	Q8_K TensorType = 15
	BF16 TensorType = 30
)

type typeInfo struct {
	name         string
	block, bytes int // values per block, bytes per block
}

var types = map[TensorType]typeInfo{
	F32: {"F32", 1, 4}, F16: {"F16", 1, 2}, BF16: {"BF16", 1, 2},
	Q4_0: {"Q4_0", 32, 18}, Q8_0: {"Q8_0", 32, 34},
	Q4_K: {"Q4_K", 256, 144}, Q5_K: {"Q5_K", 256, 176}, Q6_K: {"Q6_K", 256, 210}, Q8_K: {"Q8_K", 256, 292},
}

func (t TensorType) info() (typeInfo, bool) {
	i, ok := types[t]
	return i, ok
}

func (t TensorType) String() string {
	if i, ok := types[t]; ok {
		return i.name
	}
	return fmt.Sprintf("ggml type %d", uint32(t))
}

// IsKQuant reports a K-quant (256-value super-blocks).
func (t TensorType) IsKQuant() bool { return t == Q4_K || t == Q5_K || t == Q6_K || t == Q8_K }

func typeNames() []string {
	return []string{"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K", "Q8_K"}
}

func f16(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }

// Dequantize writes the values of data (a tensor of type t) into dst, as
// ggml defines each block: exact in float32 for F32, F16, BF16, Q8_0 and
// Q4_0 (a quant times its block's f16 scale), and for the K-quants the
// products and differences of the block formulas in float32.
func Dequantize(t TensorType, data []byte, dst []float32) error {
	info, ok := t.info()
	if !ok {
		return fmt.Errorf("dequantize: %v is not supported", t)
	}
	if len(dst)%info.block != 0 || len(data) != len(dst)/info.block*info.bytes {
		return fmt.Errorf("dequantize %v: %d bytes for %d values", t, len(data), len(dst))
	}
	n := len(dst) / info.block
	for b := range n {
		blk := data[b*info.bytes : (b+1)*info.bytes]
		y := dst[b*info.block : (b+1)*info.block]
		switch t {
		case F32:
			y[0] = math.Float32frombits(binary.LittleEndian.Uint32(blk))
		case F16:
			y[0] = f16(blk)
		case BF16:
			y[0] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(blk)) << 16)
		case Q8_0:
			d := f16(blk)
			for i, q := range blk[2:34] {
				y[i] = float32(int8(q)) * d
			}
		case Q4_0:
			d := f16(blk)
			for i, q := range blk[2:18] {
				y[i] = float32(int(q&0xF)-8) * d
				y[i+16] = float32(int(q>>4)-8) * d
			}
		case Q4_K:
			dequantQ4K(blk, y)
		case Q5_K:
			dequantQ5K(blk, y)
		case Q6_K:
			dequantQ6K(blk, y)
		case Q8_K:
			d := math.Float32frombits(binary.LittleEndian.Uint32(blk))
			for i, q := range blk[4:260] {
				y[i] = float32(int8(q)) * d
			}
		}
	}
	return nil
}

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) from
// the 12 packed bytes of a Q4_K or Q5_K super-block: sub-blocks 0-3 keep
// their low 6 bits in bytes j and j+4; 4-7 keep their low 4 bits in byte
// j+4's nibbles and their top 2 bits in the top bits of bytes j-4 and j.
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// Q4_K: f16 d, f16 dmin, 12 bytes of scales and mins, 128 bytes of 4-bit
// quants; each 64 values share a byte range, low nibbles first:
// y = d * scale * q - dmin * min.
func dequantQ4K(blk []byte, y []float32) {
	d, dmin := f16(blk[0:2]), f16(blk[2:4])
	scales, qs := blk[4:16], blk[16:144]
	for g := range 4 { // 64 values each
		sc1, m1 := scaleMinK4(2*g, scales)
		sc2, m2 := scaleMinK4(2*g+1, scales)
		d1, mn1 := d*float32(sc1), dmin*float32(m1)
		d2, mn2 := d*float32(sc2), dmin*float32(m2)
		q := qs[32*g : 32*g+32]
		for l := range 32 {
			y[64*g+l] = float32(d1*float32(q[l]&0xF)) - mn1 // no fused multiply-add
			y[64*g+32+l] = float32(d2*float32(q[l]>>4)) - mn2
		}
	}
}

// Q5_K: Q4_K's layout plus 32 bytes holding each value's fifth bit: bit
// 2g of qh[l] for the low nibbles of group g, bit 2g+1 for the high.
func dequantQ5K(blk []byte, y []float32) {
	d, dmin := f16(blk[0:2]), f16(blk[2:4])
	scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
	for g := range 4 {
		sc1, m1 := scaleMinK4(2*g, scales)
		sc2, m2 := scaleMinK4(2*g+1, scales)
		d1, mn1 := d*float32(sc1), dmin*float32(m1)
		d2, mn2 := d*float32(sc2), dmin*float32(m2)
		q := qs[32*g : 32*g+32]
		u1, u2 := byte(1)<<(2*g), byte(2)<<(2*g)
		for l := range 32 {
			lo, hi := q[l]&0xF, q[l]>>4
			if qh[l]&u1 != 0 {
				lo += 16
			}
			if qh[l]&u2 != 0 {
				hi += 16
			}
			y[64*g+l] = d1*float32(lo) - mn1
			y[64*g+32+l] = d2*float32(hi) - mn2
		}
	}
}

// Q6_K: 128 bytes of low 4 bits, 64 bytes of high 2 bits, 16 int8 scales,
// f16 d; two halves of 128 values, each with 64 low-bit bytes, 32 high-bit
// bytes and 8 scales: y = d * scale * (q - 32).
func dequantQ6K(blk []byte, y []float32) {
	ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
	d := f16(blk[208:210])
	for h := range 2 {
		l0, h0, s0, y0 := ql[64*h:], qh[32*h:], sc[8*h:], y[128*h:]
		for l := range 32 {
			is := l / 16
			q1 := int(l0[l]&0xF|(h0[l]>>0&3)<<4) - 32
			q2 := int(l0[l+32]&0xF|(h0[l]>>2&3)<<4) - 32
			q3 := int(l0[l]>>4|(h0[l]>>4&3)<<4) - 32
			q4 := int(l0[l+32]>>4|(h0[l]>>6&3)<<4) - 32
			y0[l] = d * float32(int8(s0[is])) * float32(q1)
			y0[l+32] = d * float32(int8(s0[is+2])) * float32(q2)
			y0[l+64] = d * float32(int8(s0[is+4])) * float32(q3)
			y0[l+96] = d * float32(int8(s0[is+6])) * float32(q4)
		}
	}
}
