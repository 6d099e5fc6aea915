package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/x448/float16"
)

func h(v float32) []byte {
	b := make([]byte, 2)
	binary.LittleEndian.PutUint16(b, float16.Fromfloat32(v).Bits())
	return b
}

// A file written by Writer parses back to the same metadata and tensor
// bytes, aligned.
func TestWriteParseRoundTrip(t *testing.T) {
	w := &Writer{}
	w.String("general.architecture", "qwen3")
	w.Uint32("qwen3.block_count", 2)
	w.Float32("qwen3.rope.freq_base", 1e6)
	w.Bool("flag", true)
	w.Strings("tokenizer.ggml.tokens", []string{"a", "b", "ab"})
	w.Int32s("tokenizer.ggml.token_type", []int64{1, 1, 3})
	vec := make([]byte, 4*3)
	for i := range 3 {
		binary.LittleEndian.PutUint32(vec[4*i:], math.Float32bits(float32(i)+0.5))
	}
	if err := w.Tensor("v", F32, []int{3}, vec); err != nil {
		t.Fatal(err)
	}
	q := make([]byte, 2*34) // two q8_0 blocks: a [1, 64] matrix
	copy(q, h(0.5))
	q[2] = 3
	if err := w.Tensor("m", Q8_0, []int{1, 64}, q); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Meta["qwen3.block_count"].Int(); n != 2 {
		t.Errorf("block_count %d", n)
	}
	if x, _ := f.Meta["qwen3.rope.freq_base"].Float(); x != 1e6 {
		t.Errorf("freq_base %v", x)
	}
	if s, _ := f.Meta["tokenizer.ggml.tokens"].Strings(); strings.Join(s, ",") != "a,b,ab" {
		t.Errorf("tokens %v", s)
	}
	m, ok := f.Tensor("m")
	if !ok || !bytes.Equal(f.Data(m), q) || m.Shape()[0] != 1 || m.Shape()[1] != 64 {
		t.Fatalf("tensor m: %+v", m)
	}
	if m.Offset%32 != 0 {
		t.Errorf("offset %d not aligned", m.Offset)
	}
	y := make([]float32, 64)
	if err := Dequantize(Q8_0, f.Data(m), y); err != nil || y[0] != 1.5 || y[1] != 0 {
		t.Errorf("dequantized %v, %v", y[:2], err)
	}
}

// K-quant blocks built by hand from the published layouts, with the
// values each position must dequantize to.
func TestKQuantBlocks(t *testing.T) {
	// Q4_K: d = 1, dmin = 0.5; sub-block j has scale j+1 and min j (6-bit,
	// packed as scaleMinK4 reads them); quant at value i is i % 16.
	blk := make([]byte, 144)
	copy(blk[0:], h(1))
	copy(blk[2:], h(0.5))
	sc := blk[4:16]
	for j := range 8 {
		s, m := uint8(j+1), uint8(j)
		if j < 4 {
			sc[j] |= s
			sc[j+4] |= m
		} else {
			sc[j+4] |= s&0xF | (m&0xF)<<4
			sc[j-4] |= (s >> 4) << 6
			sc[j] |= (m >> 4) << 6
		}
	}
	// give sub-blocks 4..7 scales and mins above 15 so the high bits count
	for j := 4; j < 8; j++ {
		s, m := uint8(40+j), uint8(20+j)
		sc[j+4] = s&0xF | (m&0xF)<<4
		sc[j-4] = sc[j-4]&63 | (s>>4)<<6
		sc[j] = sc[j]&63 | (m>>4)<<6
	}
	scale := func(j int) (float32, float32) {
		if j < 4 {
			return float32(j + 1), float32(j)
		}
		return float32(40 + j), float32(20 + j)
	}
	qs := blk[16:]
	for g := range 4 {
		for l := range 32 {
			lo, hi := uint8((64*g+l)%16), uint8((64*g+32+l)%16)
			qs[32*g+l] = lo | hi<<4
		}
	}
	y := make([]float32, 256)
	if err := Dequantize(Q4_K, blk, y); err != nil {
		t.Fatal(err)
	}
	for i, v := range y {
		s, m := scale(i / 32)
		if want := s*float32(i%16) - 0.5*m; v != want {
			t.Fatalf("Q4_K value %d = %v, want %v", i, v, want)
		}
	}
	// Q5_K: the same plus fifth bits set on every odd value.
	blk5 := make([]byte, 176)
	copy(blk5[0:16], blk[0:16])
	copy(blk5[48:], qs)
	qh := blk5[16:48]
	for i := 1; i < 256; i += 2 {
		g, half, l := i/64, (i%64)/32, i%32
		qh[l] |= 1 << (2*g + half)
	}
	if err := Dequantize(Q5_K, blk5, y); err != nil {
		t.Fatal(err)
	}
	for i, v := range y {
		s, m := scale(i / 32)
		q := float32(i % 16)
		if i%2 == 1 {
			q += 16
		}
		if want := s*q - 0.5*m; v != want {
			t.Fatalf("Q5_K value %d = %v, want %v", i, v, want)
		}
	}
	// Q6_K: d = 0.25, scale of each 16 values = (index - 8), quant at value
	// i = i % 64 (6 bits: low 4 in ql, high 2 in qh).
	blk6 := make([]byte, 210)
	ql, qh6, sc6 := blk6[0:128], blk6[128:192], blk6[192:208]
	copy(blk6[208:], h(0.25))
	for k := range 16 {
		sc6[k] = byte(int8(k - 8))
	}
	for i := range 256 {
		q := uint8(i % 64)
		hh, r := i/128, i%128
		l, quarter := r%32, r/32 // quarter 0..3: which nibble / bit pair
		lo := ql[64*hh:]
		hi := qh6[32*hh:]
		switch quarter {
		case 0:
			lo[l] |= q & 0xF
		case 1:
			lo[l+32] |= q & 0xF
		case 2:
			lo[l] |= (q & 0xF) << 4
		case 3:
			lo[l+32] |= (q & 0xF) << 4
		}
		hi[l] |= (q >> 4) << (2 * quarter)
	}
	if err := Dequantize(Q6_K, blk6, y); err != nil {
		t.Fatal(err)
	}
	for i, v := range y {
		hh, r := i/128, i%128
		l, quarter := r%32, r/32
		s := float32(8*hh + l/16 + 2*quarter - 8)
		if want := 0.25 * s * float32(i%64-32); v != want {
			t.Fatalf("Q6_K value %d = %v, want %v", i, v, want)
		}
	}
	// Q8_K: f32 d, int8 quants.
	blk8 := make([]byte, 292)
	binary.LittleEndian.PutUint32(blk8, math.Float32bits(0.125))
	for i := range 256 {
		blk8[4+i] = byte(int8(i - 128))
	}
	if err := Dequantize(Q8_K, blk8, y); err != nil {
		t.Fatal(err)
	}
	for i, v := range y {
		if want := 0.125 * float32(i-128); v != want {
			t.Fatalf("Q8_K value %d = %v, want %v", i, v, want)
		}
	}
	// Q4_0: d = 2, low nibbles are values 0..15, high 16..31, offset 8.
	blk40 := make([]byte, 18)
	copy(blk40, h(2))
	for i := range 16 {
		blk40[2+i] = uint8(i) | uint8(15-i)<<4
	}
	y = y[:32]
	if err := Dequantize(Q4_0, blk40, y); err != nil {
		t.Fatal(err)
	}
	for i := range 16 {
		if y[i] != 2*float32(i-8) || y[i+16] != 2*float32(7-i) {
			t.Fatalf("Q4_0 values %d: %v %v", i, y[i], y[i+16])
		}
	}
}

// Malformed files are errors naming what is wrong, never panics.
func TestMalformed(t *testing.T) {
	good := func() []byte {
		w := &Writer{}
		w.String("general.architecture", "qwen3")
		w.Strings("a", []string{"x"})
		_ = w.Tensor("t", F32, []int{2}, make([]byte, 8))
		var b bytes.Buffer
		_, _ = w.WriteTo(&b)
		return b.Bytes()
	}
	g := good()
	if _, err := Parse(g); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for _, tc := range []struct {
		name, want string
		edit       func([]byte) []byte
	}{
		{"bad magic", "bad magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"truncated header", "truncated", func(b []byte) []byte { return b[:30] }},
		{"truncated data", "past the end", func(b []byte) []byte { return b[:len(b)-28] }}, // the 8 tensor bytes are followed by 24 of padding
		{"huge tensor count", "tensors", func(b []byte) []byte { le.PutUint64(b[8:], 1<<40); return b }},
		{"unknown value type", "unknown value type", func(b []byte) []byte {
			i := bytes.Index(b, []byte("general.architecture")) + len("general.architecture")
			le.PutUint32(b[i:], 77)
			return b
		}},
		{"array past the end", "past the end of the file", func(b []byte) []byte {
			i := bytes.Index(b, []byte{'a', byte(TypeArray), 0, 0, 0}) + 5 + 4
			le.PutUint64(b[i:], 1<<27)
			return b
		}},
		{"offset overflow", "aligned", func(b []byte) []byte {
			i := bytes.LastIndex(b, []byte{'t', 1, 0, 0, 0}) + 5 + 8 + 4
			le.PutUint64(b[i:], math.MaxUint64)
			return b
		}},
	} {
		b := tc.edit(append([]byte(nil), g...))
		_, err := Parse(b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	w := &Writer{}
	w.String("general.architecture", "qwen3")
	w.Uint32("qwen3.block_count", 1)
	w.Strings("tokenizer.ggml.tokens", []string{"a", "b"})
	_ = w.Tensor("t", Q8_0, []int{1, 32}, make([]byte, 34))
	var b bytes.Buffer
	_, _ = w.WriteTo(&b)
	f.Add(b.Bytes())
	f.Add([]byte("GGUF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		for i := range file.Tensors {
			ti := &file.Tensors[i]
			if ti.Elems() > 1<<16 {
				continue
			}
			dst := make([]float32, ti.Elems())
			if err := Dequantize(ti.Type, file.Data(ti), dst); err != nil {
				t.Fatalf("a parsed tensor does not dequantize: %v", err)
			}
		}
	})
}
