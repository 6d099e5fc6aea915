package wire

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"gelo/ir"
)

// f16RefRound is a reference fp32 -> fp16 conversion: the nearest of all
// finite halves (ties to the even encoding), computed with exact float64
// distances; beyond the largest half it rounds to infinity as IEEE does.
var positiveHalves = func() []float64 {
	var v []float64
	for h := 0; h < 0x7c00; h++ {
		v = append(v, float64(f16ToF32(uint16(h))))
	}
	return v
}()

func f16RefRound(f float32) uint16 {
	sign := uint16(0)
	x := float64(f)
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	if math.IsNaN(x) {
		return 0x7e00
	}
	if x >= 65520 { // (65504 + 65536)/2: ties go to the even infinity
		return sign | 0x7c00
	}
	i := sort.SearchFloat64s(positiveHalves, x) // first half >= x
	if i == len(positiveHalves) {
		return sign | 0x7bff
	}
	if positiveHalves[i] == x || i == 0 {
		return sign | uint16(i)
	}
	lo, hi := positiveHalves[i-1], positiveHalves[i]
	switch dl, dh := x-lo, hi-x; {
	case dl < dh:
		return sign | uint16(i-1)
	case dh < dl:
		return sign | uint16(i)
	}
	if (i-1)%2 == 0 {
		return sign | uint16(i-1)
	}
	return sign | uint16(i)
}

func TestF16(t *testing.T) {
	// Every finite half round-trips; halves decode exactly.
	for h := 0; h < 0x10000; h++ {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			f := f16ToF32(uint16(h))
			if !math.IsNaN(float64(f)) || math.Float32bits(f)&0x400000 == 0 {
				t.Fatalf("half %#04x: NaN decodes to %#08x", h, math.Float32bits(f))
			}
			continue
		}
		if got := f32ToF16(f16ToF32(uint16(h))); got != uint16(h) {
			t.Fatalf("half %#04x: round trip gives %#04x", h, got)
		}
	}
	if f16ToF32(0x3c00) != 1 || f16ToF32(0xc000) != -2 || f16ToF32(0x0001) != 1.0/(1<<24) || f16ToF32(0x7bff) != 65504 {
		t.Fatal("known half values")
	}
	// Midpoints between neighbouring halves and their float32 neighbours.
	for h := 0; h < 0x7bff; h++ {
		lo, hi := float64(f16ToF32(uint16(h))), float64(f16ToF32(uint16(h+1)))
		mid := float32((lo + hi) / 2) // exact
		for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			for _, s := range []float32{1, -1} {
				if got, want := f32ToF16(s*f), f16RefRound(s*f); got != want {
					t.Fatalf("f32ToF16(%g) = %#04x, want %#04x", s*f, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		// Exponents around the half range, random mantissas and signs.
		e := uint32(90 + rng.IntN(60))
		f := math.Float32frombits(rng.Uint32()&0x807fffff | e<<23)
		if got, want := f32ToF16(f), f16RefRound(f); got != want {
			t.Fatalf("f32ToF16(%g) = %#04x, want %#04x", f, got, want)
		}
	}
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {65504, 0x7bff}, {65519.996, 0x7bff}, {65520, 0x7c00},
		{float32(math.Inf(1)), 0x7c00}, {float32(math.Inf(-1)), 0xfc00}, {1.0 / (1 << 25), 0}, {1.0000001 / (1 << 25), 1},
		{3.0 / (1 << 25), 2}, {1.0 / 127, 0x2008},
	} {
		if got := f32ToF16(c.f); got != c.h {
			t.Errorf("f32ToF16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if h := f32ToF16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN -> %#04x", h)
	}
}

// TestQ8_0Known checks hand-computed block_q8_0 bytes.
func TestQ8_0Known(t *testing.T) {
	// Block 0: amax = 127 -> d = 1 (fp16 0x3C00), id = 1, q = roundf(x):
	// halves go away from zero.
	// Block 1: amax = 63.5 -> d = 0.5 (0x3800), id = 2.
	// Block 2: amax = 1 -> d = 1/127 = 0x3C010204 in float32, stored as
	// fp16 0x2008 (= 0.00787353515625, the nearest half); id = 1/d = 127
	// exactly in float32, so q = roundf(127 x): 0.5 -> 63.5 -> 64,
	// -0.25 -> -31.75 -> -32, 0.3 -> 38.1 -> 38, -0.7 -> -88.9 -> -89.
	src := make([]float32, 3*QK)
	b0 := []float32{127, -127, 2.5, -2.5, 0.5, -0.5, 1.49, -1.51, 0.49999997, 126.5}
	copy(src, b0)
	b1 := []float32{63.5, 0.25, -0.25, 0.75, -1, 10.1}
	copy(src[QK:], b1)
	b2 := []float32{1.0, 0.5, -0.25, 0.3, -0.7, 0.123, 0.99, -1.0 / 3, -0.5}
	copy(src[2*QK:], b2)
	want := make([]byte, 3*BlockBytesQ8_0)
	copy(want[0:], []byte{0x00, 0x3c, 127, 0x81, 3, 0xfd, 1, 0xff, 1, 0xfe, 0, 127})
	copy(want[34:], []byte{0x00, 0x38, 127, 1, 0xff, 2, 0xfe, 20})
	copy(want[68:], []byte{0x08, 0x20, 127, 64, 0xe0, 38, 0xa7, 16, 126, 0xd6, 0xc0})
	dst := make([]byte, len(want))
	if err := QuantizeQ8_0(dst, src); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if dst[i] != want[i] {
			t.Fatalf("byte %d (block %d, offset %d) = %#02x, want %#02x\n got %x\nwant %x", i, i/34, i%34, dst[i], want[i], dst, want)
		}
	}
	// Dequantization: q * fp16(d).
	deq := make([]float32, len(src))
	if err := DequantizeQ8_0(deq, dst); err != nil {
		t.Fatal(err)
	}
	if deq[0] != 127 || deq[2] != 3 || deq[3] != -3 || deq[QK+1] != 0.5 || deq[QK+5] != 10 {
		t.Fatalf("dequantized %v", deq[:QK+6])
	}
	if want := float32(64) * 0.00787353515625; deq[2*QK+1] != want {
		t.Fatalf("deq %g, want %g", deq[2*QK+1], want)
	}
	// An all-zero block: d = +0, quants 0.
	z := make([]byte, 34)
	z[5] = 9
	if err := QuantizeQ8_0(z, make([]float32, QK)); err != nil {
		t.Fatal(err)
	}
	for i, b := range z {
		if b != 0 {
			t.Fatalf("zero block byte %d = %#x", i, b)
		}
	}
}

// TestQ4_0Known checks hand-computed block_q4_0 bytes, nibble order
// included: byte j holds element j (low nibble) and j+16 (high nibble).
func TestQ4_0Known(t *testing.T) {
	// Block 0: the largest magnitude is -8 -> d = -8/-8 = 1 (0x3C00),
	// id = 1, q = min(15, trunc(x + 8.5)).
	src := make([]float32, 4*QK)
	s0 := src[:QK]
	s0[0], s0[16] = -8, 7 // q 0 and 15       -> byte 0 = 0xF0
	s0[1], s0[17] = 1, -1 // 9.5->9, 7.5->7   -> byte 1 = 0x79
	s0[2], s0[18] = 0.5, -0.5
	// 9.0->9, 8.0->8 -> 0x89
	s0[3], s0[19] = -0.6, 7.9 // 7.9->7, 16.4->16->15 -> 0xF7
	// Block 1: largest magnitude +4 -> d = -0.5 (0xB800), id = -2:
	// 4 -> -8+8.5 = 0.5 -> 0; -4 -> 16.5 -> 15 (clipped: dequantizes to
	// -3.5); 1 -> 6.5 -> 6.
	s1 := src[QK : 2*QK]
	s1[0], s1[16] = 4, -4
	s1[1] = 1
	// Block 2: ties in magnitude keep the FIRST value: max = 3 -> d = -0.375.
	s2 := src[2*QK : 3*QK]
	s2[0], s2[1] = 3, -3
	// Block 3 is all zeros: max = 0, d = 0/-8 = -0 (fp16 0x8000), q = 8.
	want := make([]byte, 4*BlockBytesQ4_0)
	b0 := want[0:18]
	copy(b0, []byte{0x00, 0x3c, 0xf0, 0x79, 0x89, 0xf7})
	for j := 4; j < 16; j++ {
		b0[2+j] = 0x88
	}
	b1 := want[18:36]
	copy(b1, []byte{0x00, 0xb8, 0xf0, 0x86})
	for j := 2; j < 16; j++ {
		b1[2+j] = 0x88
	}
	b2 := want[36:54]
	// f16(-0.375) = 0xB600; 3*id = 3*(-8/3) = -8 -> 0.5 -> 0, -3 -> 16.5 -> 15.
	copy(b2, []byte{0x00, 0xb6, 0x80, 0x8f})
	for j := 2; j < 16; j++ {
		b2[2+j] = 0x88
	}
	b3 := want[54:72]
	copy(b3, []byte{0x00, 0x80})
	for j := 0; j < 16; j++ {
		b3[2+j] = 0x88
	}
	dst := make([]byte, len(want))
	if err := QuantizeQ4_0(dst, src); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if dst[i] != want[i] {
			t.Fatalf("byte %d (block %d, offset %d) = %#02x, want %#02x\n got %x\nwant %x", i, i/18, i%18, dst[i], want[i], dst, want)
		}
	}
	deq := make([]float32, len(src))
	if err := DequantizeQ4_0(deq, dst); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		i int
		v float32
	}{{0, -8}, {16, 7}, {1, 1}, {17, -1}, {19, 7}, {QK, 4}, {QK + 16, -3.5}, {QK + 1, 1}, {2 * QK, 3}, {3 * QK, 0}} {
		if deq[c.i] != c.v {
			t.Errorf("deq[%d] = %g, want %g", c.i, deq[c.i], c.v)
		}
	}
	if !math.Signbit(float64(deq[3*QK])) { // 0 * -0 = -0
		t.Errorf("all-zero block dequantizes to %g, want -0", deq[3*QK])
	}
}

func randData(rng *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64()) * scale
	}
	return v
}

// TestDequantError checks the error bounds of a round trip.
func TestDequantError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const nb = 512
	src := randData(rng, nb*QK, 0.05)
	// A few blocks with outliers and with tiny values.
	for i := 0; i < QK; i++ {
		src[5*QK+i] *= 1e-3
	}
	src[7*QK+3] = 40
	q8 := make([]byte, nb*BlockBytesQ8_0)
	if err := QuantizeQ8_0(q8, src); err != nil {
		t.Fatal(err)
	}
	deq := make([]float32, len(src))
	if err := DequantizeQ8_0(deq, q8); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < nb; b++ {
		blk := q8[b*34 : (b+1)*34]
		d := scaleQ8_0(src[b*QK : (b+1)*QK]) // float32 d used for the quants
		d16 := f16ToF32(binary.LittleEndian.Uint16(blk))
		for j := 0; j < QK; j++ {
			x, y := float64(src[b*QK+j]), float64(deq[b*QK+j])
			q := float64(int8(blk[2+j]))
			// roundf error <= d/2 (up to the rounding of x*id), plus the
			// error of storing d in fp16.
			bound := float64(d)/2*(1+1e-6) + math.Abs(q)*math.Abs(float64(d)-float64(d16)) + 1e-12
			if math.Abs(x-y) > bound {
				t.Fatalf("q8_0 block %d elem %d: x %g deq %g, |err| %g > %g", b, j, x, y, math.Abs(x-y), bound)
			}
		}
	}
	// With scales exactly representable in fp16 (amax = 127 * 2^e) the
	// bound is exactly |x - deq| <= d/2.
	ex := make([]float32, 64*QK)
	for b := 0; b < 64; b++ {
		d := float32(math.Ldexp(1, -10+b%20))
		for j := 0; j < QK; j++ {
			ex[b*QK+j] = float32(rng.Float64()*254-127) * d
		}
		ex[b*QK+rng.IntN(QK)] = 127 * d
	}
	q8 = make([]byte, 64*BlockBytesQ8_0)
	deq = make([]float32, len(ex))
	if err := QuantizeQ8_0(q8, ex); err != nil {
		t.Fatal(err)
	}
	if err := DequantizeQ8_0(deq, q8); err != nil {
		t.Fatal(err)
	}
	for i := range ex {
		d := float32(math.Ldexp(1, -10+(i/QK)%20))
		if e := math.Abs(float64(ex[i] - deq[i])); e > float64(d)/2 {
			t.Fatalf("q8_0 exact-scale elem %d: |%g - %g| > d/2 = %g", i, ex[i], deq[i], d/2)
		}
	}

	// Q4_0: (q-8) covers [-8, 7]: elements up to 7.5|d| from the max's
	// opposite side round within |d|/2; beyond that they clip to 7|d|.
	q4 := make([]byte, nb*BlockBytesQ4_0)
	if err := QuantizeQ4_0(q4, src); err != nil {
		t.Fatal(err)
	}
	deq = make([]float32, len(src))
	if err := DequantizeQ4_0(deq, q4); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < nb; b++ {
		blk := q4[b*18 : (b+1)*18]
		d := float64(scaleQ4_0(src[b*QK : (b+1)*QK]))
		d16 := float64(f16ToF32(binary.LittleEndian.Uint16(blk)))
		for j := 0; j < QK; j++ {
			x, y := float64(src[b*QK+j]), float64(deq[b*QK+j])
			bound := math.Abs(d)/2*(1+1e-6) + 8*math.Abs(d-d16) + 1e-12
			if x/d > 7.5 { // clipped at q = 15
				bound += math.Abs(d) / 2
			}
			if math.Abs(x-y) > bound {
				t.Fatalf("q4_0 block %d elem %d: x %g deq %g, |err| %g > %g", b, j, x, y, math.Abs(x-y), bound)
			}
		}
	}
}

func TestFormatErrors(t *testing.T) {
	if err := QuantizeQ8_0(make([]byte, 100), make([]float32, 33)); !errors.Is(err, ErrCols) {
		t.Errorf("len 33: %v", err)
	}
	if err := QuantizeQ4_0(make([]byte, 17), make([]float32, 32)); err == nil {
		t.Error("short dst accepted")
	}
	nan := make([]float32, 32)
	nan[3] = float32(math.NaN())
	if err := QuantizeQ8_0(make([]byte, 34), nan); err == nil {
		t.Error("NaN accepted")
	}
	nan[3] = float32(math.Inf(-1))
	if err := QuantizeQ4_0(make([]byte, 18), nan); err == nil {
		t.Error("Inf accepted")
	}
	big := make([]float32, 32)
	big[0] = 1e7 // d = 1e7/127 > 65504
	if err := QuantizeQ8_0(make([]byte, 34), big); err == nil {
		t.Error("fp16 scale overflow accepted")
	}
	big[0] = 6e5 // Q4_0: d = 7.5e4 > 65504
	if err := QuantizeQ4_0(make([]byte, 18), big); err == nil {
		t.Error("fp16 scale overflow accepted (q4_0)")
	}
	if err := DequantizeQ8_0(make([]float32, 32), make([]byte, 35)); err == nil {
		t.Error("bad q8_0 length accepted")
	}
	if err := DequantizeQ4_0(make([]float32, 31), make([]byte, 18)); err == nil {
		t.Error("short dequant dst accepted")
	}
	w := make([]float32, 4*48)
	if _, err := Quantize(Q8_0, w, 4, 48); !errors.Is(err, ErrCols) {
		t.Errorf("cols 48: %v", err)
	}
	if _, err := Quantize(Q4_0, w, 4, 0); err == nil {
		t.Error("cols 0 accepted")
	}
	if _, err := Quantize(Format(99), w, 2, 32); err == nil {
		t.Error("bad format accepted")
	}
	if _, err := Quantize(Q8_0, w[:63], 2, 32); err == nil {
		t.Error("short w accepted")
	}
	if _, err := NewMatrix(Q4_0, 2, 64, make([]byte, 71)); err == nil {
		t.Error("short data accepted")
	}
	m, err := NewMatrix(Q4_0, 2, 64, make([]byte, 72))
	if err != nil {
		t.Fatal(err)
	}
	if m.Row(2) != nil || m.Row(-1) != nil || m.Block(0, 2) != nil || len(m.Block(1, 1)) != 18 {
		t.Error("accessor bounds")
	}
	if err := m.DequantizeRow(make([]float32, 64), 5); err == nil {
		t.Error("bad row accepted")
	}
	var a Activations
	if err := a.Quantize(make([]float32, 64), 2, 31); !errors.Is(err, ErrCols) {
		t.Errorf("activation k 31: %v", err)
	}
	if err := a.Quantize(make([]float32, 63), 2, 32); err == nil {
		t.Error("short activation input accepted")
	}
}

// TestMatrixAccessors checks the row/block layout of a Matrix.
func TestMatrixAccessors(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rows, cols := 5, 96
	w := randData(rng, rows*cols, 1)
	for _, f := range []Format{Q8_0, Q4_0} {
		m, err := Quantize(f, w, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Data) != rows*cols/32*f.BlockBytes() || m.RowBytes() != cols/32*f.BlockBytes() || m.BlocksPerRow() != 3 {
			t.Fatalf("%v: sizes", f)
		}
		one := make([]byte, f.BlockBytes())
		for r := 0; r < rows; r++ {
			for b := 0; b < 3; b++ {
				src := w[r*cols+b*QK : r*cols+(b+1)*QK]
				if f == Q8_0 {
					_ = QuantizeQ8_0(one, src)
				} else {
					_ = QuantizeQ4_0(one, src)
				}
				if string(m.Block(r, b)) != string(one) {
					t.Fatalf("%v: block %d,%d differs", f, r, b)
				}
				if m.Scale(r, b) != f16ToF32(binary.LittleEndian.Uint16(one)) {
					t.Fatalf("%v: scale %d,%d", f, r, b)
				}
			}
		}
		all := make([]float32, rows*cols)
		row := make([]float32, cols)
		if err := m.Dequantize(all); err != nil {
			t.Fatal(err)
		}
		for r := 0; r < rows; r++ {
			if err := m.DequantizeRow(row, r); err != nil {
				t.Fatal(err)
			}
			for c := range row {
				if row[c] != all[r*cols+c] {
					t.Fatalf("%v: row %d differs", f, r)
				}
			}
		}
	}
}

// TestActivationQuant checks the activation rule (q8_0 ref with a float32
// scale) and the block sums.
func TestActivationQuant(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m, k := 3, 128
	x := randData(rng, m*k, 2)
	x[5] = 127 * 0.25 // block 0: amax = 31.75 -> d = 0.25, id = 4
	for i := 0; i < QK; i++ {
		if i != 5 {
			x[i] = float32(int(x[i]*8)) / 8 // multiples of 1/8 -> q halves
		}
	}
	x[6], x[7] = 0.125, -0.125 // 0.5 -> 1, -0.5 -> -1
	var a Activations
	if err := a.Quantize(x, m, k); err != nil {
		t.Fatal(err)
	}
	q, d := a.Block(0, 0)
	if d != 0.25 || q[5] != 127 || q[6] != 1 || q[7] != -1 {
		t.Fatalf("block 0: d %g q %v", d, q)
	}
	for i := 0; i < m; i++ {
		for b := 0; b < k/QK; b++ {
			q, d := a.Block(i, b)
			src := x[i*k+b*QK : i*k+(b+1)*QK]
			var amax float32
			for _, v := range src {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			if d != amax/127 {
				t.Fatalf("row %d block %d: d %g, want %g", i, b, d, amax/127)
			}
			id := 1 / d
			var s int32
			for j, v := range src {
				p := float64(float32(v * id))
				want := int8(math.Copysign(math.Floor(math.Abs(p)+0.5), p))
				if q[j] != want {
					t.Fatalf("row %d block %d elem %d: q %d want %d", i, b, j, q[j], want)
				}
				s += int32(want)
			}
			if a.s[i*k/QK+b] != s {
				t.Fatalf("sum mismatch")
			}
		}
	}
	// A block whose scale is a float32 subnormal with 1/d overflowing
	// quantizes to zeros (as ggml on x86), without panicking.
	tiny := make([]float32, QK)
	tiny[0], tiny[1] = 1e-40, -3e-41
	if err := a.Quantize(tiny, 1, QK); err != nil {
		t.Fatal(err)
	}
	if q, d := a.Block(0, 0); d != float32(1e-40)/127 || q[0] != 0 || q[1] != 0 || a.s[0] != 0 {
		t.Fatalf("tiny block: d %g q %v", d, q[:2])
	}
	// Non-finite values poison their block only.
	x[k+40] = float32(math.Inf(1))
	if err := a.Quantize(x, m, k); err != nil {
		t.Fatal(err)
	}
	if _, d := a.Block(1, 1); !math.IsNaN(float64(d)) {
		t.Fatalf("inf block scale %g", d)
	}
	if _, d := a.Block(1, 0); math.IsNaN(float64(d)) {
		t.Fatal("clean block poisoned")
	}
}

// FormatOf maps each block dtype to its format and refuses the rest: an
// unknown dtype is an error, never q8_0 (the old silent fallback).
func TestFormatOf(t *testing.T) {
	for dt, want := range map[ir.DType]Format{ir.Q8_0: Q8_0, ir.Q4_0: Q4_0, ir.Q4_K: Q4_K} {
		if f, err := FormatOf(dt); err != nil || f != want {
			t.Errorf("FormatOf(%v) = %v, %v; want %v", dt, f, err, want)
		}
		if f, _ := FormatOf(dt); f.String() != dt.String() || f.BlockBytes() != dt.Info().BlockBytes || f.BlockValues() != dt.Info().Block {
			t.Errorf("%v: facts differ from ir's record", f)
		}
	}
	for _, dt := range []ir.DType{ir.F32, ir.BF16, ir.InvalidDType} {
		if f, err := FormatOf(dt); err == nil {
			t.Errorf("FormatOf(%v) = %v, want an error", dt, f)
		}
	}
	if err := QuantizeRows(Format(99), make([]byte, 34), make([]float32, 32)); err == nil {
		t.Error("QuantizeRows of an unknown format accepted")
	}
	if Format(99).Valid() || Format(99).BlockBytes() != 0 || Format(99).String() != "Format(99)" {
		t.Error("an unknown format has facts")
	}
}
