package kernels

import (
	"fmt"

	"gelo/models/safetensors"
)

// KVFormat is the element format of a KV cache. K and V are computed in
// float32; a 16-bit cache stores them rounded to nearest even on append,
// and attention reads them widened back to float32 (exact), so the
// arithmetic after the read is the f32 cache's on the rounded values.
type KVFormat uint8

const (
	KVF32  KVFormat = iota // float32: the values as computed
	KVF16                  // IEEE binary16 (F16C's VCVTPS2PH with mode 0)
	KVBF16                 // bfloat16, the upper half of a float32
)

// String names the format as the --kv-dtype flag does.
func (f KVFormat) String() string {
	switch f {
	case KVF32:
		return "f32"
	case KVF16:
		return "f16"
	case KVBF16:
		return "bf16"
	}
	return fmt.Sprintf("KVFormat(%d)", uint8(f))
}

// KV is one layer's K or V cache: S sequences, each laid out head-major
// [kvHeads][maxT][hd], so that the positions of one KV head are contiguous
// and decode attention streams them as one run. F32 holds the values of an
// f32 cache; H16 the bits of an f16 or bf16 one.
type KV struct {
	Format KVFormat
	F32    []float32
	H16    []uint16
}

// KVOf wraps f32 cache storage.
func KVOf(f32 []float32) KV { return KV{Format: KVF32, F32: f32} }

// KV16 wraps 16-bit cache storage of format f (KVF16 or KVBF16).
func KV16(h []uint16, f KVFormat) KV { return KV{Format: f, H16: h} }

// Len is the number of elements the cache holds.
func (k KV) Len() int {
	if k.Format == KVF32 {
		return len(k.F32)
	}
	return len(k.H16)
}

// check reports a cache whose format and storage do not agree.
func (k KV) check(what string) error {
	switch {
	case k.Format == KVF32 && k.H16 == nil:
	case (k.Format == KVF16 || k.Format == KVBF16) && k.F32 == nil:
	default:
		return fmt.Errorf("kernels: %s: %v cache with %d f32 and %d 16-bit values", what, k.Format, len(k.F32), len(k.H16))
	}
	return nil
}

// KVOffset is the offset of (sequence s, KV head g, position t) in a cache
// of kvHeads heads of hd values and capacity maxT: the head-major layout.
func KVOffset(s, g, t, kvHeads, hd, maxT int) int { return ((s*kvHeads+g)*maxT + t) * hd }

// store writes src (len(src) values) at element offset o, converted to the
// cache's format: f16 and bf16 round to nearest, ties to even.
func (k KV) store(o int, src []float32) {
	switch k.Format {
	case KVF32:
		copy(k.F32[o:o+len(src)], src)
	case KVF16:
		narrowF16(k.H16[o:o+len(src)], src)
	case KVBF16:
		dst := k.H16[o : o+len(src)]
		for i, v := range src {
			dst[i] = safetensors.F32ToBF16(v)
		}
	}
}

// narrowF16 stores src rounded to binary16 in dst (len(dst) >= len(src)),
// bit for bit safetensors.F32ToF16: F16C's VCVTPS2PH 8 at a time where
// present, the tail in Go. A prefill's K and V pass through here; one value
// at a time in Go they cost about what the prefill's attention did.
func narrowF16(dst []uint16, src []float32) {
	n := 0
	if useF16C && len(src) >= 8 {
		n = len(src) &^ 7
		_ = dst[n-1]
		f32ToF16F16C(&dst[0], &src[0], n)
	}
	for i := n; i < len(src); i++ {
		dst[i] = safetensors.F32ToF16(src[i])
	}
}

// storeRow writes one row of width kvHeads*hd (the K or V of a token, head
// after head) at (s, t).
func (k KV) storeRow(row []float32, s, t, kvHeads, hd, maxT int) {
	for g := 0; g < kvHeads; g++ {
		k.store(KVOffset(s, g, t, kvHeads, hd, maxT), row[g*hd:(g+1)*hd])
	}
}

// rows returns n cached rows of hd values from element offset o as f32:
// a view of an f32 cache, or the rows widened (exactly) into buf.
func (k KV) rows(o, n, hd int, buf []float32) []float32 {
	if k.Format == KVF32 {
		return k.F32[o : o+n*hd]
	}
	dst, src := buf[:n*hd], k.H16[o:o+n*hd]
	if k.Format == KVBF16 {
		widenBF16(dst, src)
	} else {
		widenF16(dst, src)
	}
	return dst
}

// widenF16 sets dst[i] to the float32 value of the binary16 src[i]
// (exact; VCVTPH2PS where present).
func widenF16(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	v := 0
	if useAsm && useF16C {
		if v = len(src) &^ 7; v > 0 {
			widenF16AVX2(&dst[0], &src[0], v)
		}
	}
	for i := v; i < len(src); i++ {
		dst[i] = safetensors.F16ToF32(src[i])
	}
}

// KVAppend writes row r of x ([rows][kvHeads*hd]) to cache position pos[r]
// of sequence seq[r], converted to the cache's format. The cache holds S =
// Len/(maxT*kvHeads*hd) sequences. It returns an error (writing nothing)
// if a seq or pos value is out of range.
func (c *Ctx) KVAppend(cache KV, x []float32, rows, kvHeads, hd, maxT int, seq, pos []int32) error {
	width := kvHeads * hd
	if rows < 0 || kvHeads <= 0 || hd <= 0 || maxT <= 0 || len(x) < rows*width || cache.Len() < maxT*width {
		return fmt.Errorf("kernels: KVAppend: bad shape rows=%d kvHeads=%d hd=%d maxT=%d len(x)=%d len(cache)=%d", rows, kvHeads, hd, maxT, len(x), cache.Len())
	}
	if err := cache.check("KVAppend"); err != nil {
		return err
	}
	if len(seq) < rows || len(pos) < rows {
		return fmt.Errorf("kernels: KVAppend: %d seq and %d pos entries for %d rows", len(seq), len(pos), rows)
	}
	nseq := cache.Len() / (maxT * width)
	for r := 0; r < rows; r++ {
		if seq[r] < 0 || int(seq[r]) >= nseq {
			return fmt.Errorf("kernels: KVAppend: sequence %d of row %d out of range [0,%d)", seq[r], r, nseq)
		}
		if pos[r] < 0 || int(pos[r]) >= maxT {
			return fmt.Errorf("kernels: KVAppend: position %d of row %d out of range [0,%d)", pos[r], r, maxT)
		}
	}
	for r := 0; r < rows; r++ {
		cache.storeRow(x[r*width:(r+1)*width], int(seq[r]), int(pos[r]), kvHeads, hd, maxT)
	}
	return nil
}
