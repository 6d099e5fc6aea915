package device

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gelo/device/wire"
)

// echo is a Device that returns y = row sums of x (enough to see what the
// spy records on the way back).
type echo struct{ shapes map[string][2]int }

func (e *echo) Upload(name string, w []float32, rows, cols int) error {
	e.shapes[name] = [2]int{rows, cols}
	return nil
}
func (e *echo) UploadBF16(name string, w []uint16, rows, cols int) error {
	return e.Upload(name, nil, rows, cols)
}
func (e *echo) UploadQ(name string, w *wire.Matrix) error { return e.Upload(name, nil, w.Rows, w.Cols) }
func (e *echo) MatMul(op, weight string, x []float32, m int, y []float32) error {
	for i := range y {
		y[i] = float32(i)
	}
	return nil
}
func (e *echo) MatMulQ(op, weight string, x *wire.Activations, y []float32) error {
	return e.MatMul(op, weight, nil, x.Rows(), y)
}

func TestSpyRecordsEveryCrossing(t *testing.T) {
	spy := NewSpy(&echo{shapes: map[string][2]int{}})
	if err := spy.Upload("w", make([]float32, 2*32), 2, 32); err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 32)
	x[3] = 1.5
	y := make([]float32, 2)
	if err := spy.MatMul("matmul", "w", x, 1, y); err != nil {
		t.Fatal(err)
	}
	var a wire.Activations
	if err := a.Quantize(x, 1, 32); err != nil {
		t.Fatal(err)
	}
	if err := spy.MatMulQ("matmul", "w", &a, y); err != nil {
		t.Fatal(err)
	}
	r := spy.Record()
	if len(r) != 4 || spy.Len() != 4 || !slices.Equal(spy.Uploads(), []string{"w"}) {
		t.Fatalf("%d crossings, uploads %v", len(r), spy.Uploads())
	}
	want := []struct {
		dir        Direction
		rows, cols int
		q8         bool
	}{{ToDevice, 1, 32, false}, {ToTEE, 1, 2, false}, {ToDevice, 1, 32, true}, {ToTEE, 1, 2, false}}
	for i, w := range want {
		c := r[i]
		if c.Seq != i || c.Dir != w.dir || c.Rows != w.rows || c.Cols != w.cols || c.Q8 != w.q8 || c.Weight != "w" {
			t.Fatalf("crossing %d: %+v", i, c)
		}
	}
	// The q8_0 payload is recorded as the values it encodes.
	if r[2].Data[3] != 1.5 || r[0].Data[3] != 1.5 || r[3].Data[1] != 1 {
		t.Fatalf("recorded values %v %v %v", r[0].Data[3], r[2].Data[3], r[3].Data[1])
	}
	if err := spy.MatMul("matmul", "never", x, 1, y); err == nil || !strings.Contains(err.Error(), "never uploaded") {
		t.Fatalf("matmul on an unknown weight: %v", err)
	}
}

// TestWeightName: an uploaded name's format prefix is dropped; a model's
// own name is left as it is.
func TestWeightName(t *testing.T) {
	for in, want := range map[string]string{
		"model.layers.3.self_attn.q_proj":         "model.layers.3.self_attn.q_proj",
		"bf16:model.layers.3.self_attn.q_proj":    "model.layers.3.self_attn.q_proj",
		"bf16dot:model.layers.3.self_attn.q_proj": "model.layers.3.self_attn.q_proj",
		"q4_k:lm_head.weight":                     "lm_head.weight",
	} {
		if got := WeightName(in); got != want {
			t.Errorf("WeightName(%q) = %q, want %q", in, got, want)
		}
	}
}

// ring is a Device with the lwe product: int8 weights (wire.Int8)
// multiply u32 rows mod 2^32; an f32 upload has no integers and is
// refused by MatMulU32.
type ring struct {
	echo
	q map[string]*wire.Matrix
}

func newRing() *ring {
	return &ring{echo: echo{shapes: map[string][2]int{}}, q: map[string]*wire.Matrix{}}
}

func (r *ring) UploadQ(name string, w *wire.Matrix) error {
	r.q[name] = w
	return r.echo.UploadQ(name, w)
}

func (r *ring) MatMulU32(op, weight string, c []uint32, m int, y []uint32) error {
	w, ok := r.q[weight]
	if !ok || w.Format != wire.Int8 {
		return fmt.Errorf("ring: %q is no int8 weight", weight)
	}
	for i := range m {
		for j := range w.Rows {
			var acc uint32
			for k, b := range w.Row(j)[:w.Cols] {
				acc += uint32(int32(int8(b))) * c[i*w.Cols+k]
			}
			y[i*w.Rows+j] = acc
		}
	}
	return nil
}

// int8Weight is a wire.Int8 matrix [rows, cols] of random integers.
func int8Weight(r *rand.Rand, rows, cols int) *wire.Matrix {
	w := &wire.Matrix{Format: wire.Int8, Rows: rows, Cols: cols}
	w.Data = make([]byte, rows*w.RowBytes())
	for j := range rows {
		for i := range cols {
			w.Data[j*w.RowBytes()+i] = byte(int8(r.IntN(255) - 127))
		}
	}
	return w
}

func words(r *rand.Rand, n int) []uint32 {
	c := make([]uint32, n)
	for i := range c {
		c[i] = r.Uint32()
	}
	return c
}

// The spy records both directions of the u32 product as the words that
// crossed (Words, Data nil), copied (a later change to the caller's
// buffers does not reach the record), numbered among the float crossings,
// and Keep drops a direction as it does for the others.
func TestSpyRecordsU32(t *testing.T) {
	r := rand.New(rand.NewPCG(50, 20))
	for _, keepDevice := range []bool{true, false} {
		spy := NewSpy(newRing())
		spy.Keep = func(dir Direction, index int, weight string) bool { return keepDevice || dir == ToTEE }
		if err := spy.UploadQ("w", int8Weight(r, 3, 5)); err != nil {
			t.Fatal(err)
		}
		spy.Mark(7, "decode")
		if err := spy.MatMul("matmul", "w", make([]float32, 5), 1, make([]float32, 3)); err != nil {
			t.Fatal(err)
		}
		c, y := words(r, 2*5), make([]uint32, 2*3)
		if err := spy.MatMulU32("matmul", "w", c, 2, y); err != nil {
			t.Fatal(err)
		}
		sent, got := slices.Clone(c), slices.Clone(y)
		c[0]++
		y[0]++
		rec := spy.Record()
		want := []struct {
			dir        Direction
			index      int
			rows, cols int
			words      []uint32
		}{{ToDevice, 0, 1, 5, nil}, {ToTEE, 1, 1, 3, nil}, {ToDevice, 2, 2, 5, sent}, {ToTEE, 3, 2, 3, got}}
		if !keepDevice {
			want = []struct {
				dir        Direction
				index      int
				rows, cols int
				words      []uint32
			}{want[1], want[3]}
		}
		if len(rec) != len(want) {
			t.Fatalf("keep to-device %v: %d crossings, want %d", keepDevice, len(rec), len(want))
		}
		for i, w := range want {
			x := rec[i]
			if x.Seq != i || x.Pass != 7 || x.Phase != "decode" || x.Index != w.index || x.Dir != w.dir || x.Rows != w.rows || x.Cols != w.cols || x.Op != "matmul" {
				t.Fatalf("keep to-device %v: crossing %d: %+v", keepDevice, i, x)
			}
			if w.words != nil && (x.Data != nil || !slices.Equal(x.Words, w.words)) {
				t.Fatalf("keep to-device %v: crossing %d: Words %v Data %v, want Words %v", keepDevice, i, x.Words, x.Data, w.words)
			}
			if w.words == nil && x.Words != nil {
				t.Fatalf("keep to-device %v: float crossing %d has Words", keepDevice, i)
			}
		}
	}
}

// Spy and liar forward the u32 product only to a device that has it, and
// the spy only for uploaded weights; the errors say which.
func TestU32NeedsALattice(t *testing.T) {
	spy := NewSpy(&echo{shapes: map[string][2]int{}})
	if err := spy.MatMulU32("matmul", "w", nil, 0, nil); err == nil || !strings.Contains(err.Error(), "(*device.echo) has no u32 product") {
		t.Fatalf("spy over echo: %v", err)
	}
	liar := NewLiar(&echo{shapes: map[string][2]int{}})
	if err := liar.MatMulU32("matmul", "w", nil, 0, nil); err == nil || !strings.Contains(err.Error(), "(*device.echo) has no u32 product") {
		t.Fatalf("liar over echo: %v", err)
	}
	if err := NewSpy(newRing()).MatMulU32("matmul", "nope", nil, 0, nil); err == nil || !strings.Contains(err.Error(), `"nope" that was never uploaded`) {
		t.Fatalf("spy, unknown weight: %v", err)
	}
	// The spy over the liar over a ring: each layer forwards.
	r := rand.New(rand.NewPCG(50, 21))
	spy = NewSpy(NewLiar(newRing()))
	if err := spy.UploadQ("w", int8Weight(r, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if err := spy.MatMulU32("matmul", "w", words(r, 3), 1, make([]uint32, 2)); err != nil {
		t.Fatal(err)
	}
}

// Every lie changes a u32 result the way its doc says, on the row it
// picks, and is counted; OtherWeight takes an int8 weight of the same
// shape, never an f32 one (which sorts first here).
func TestLiarU32(t *testing.T) {
	r := rand.New(rand.NewPCG(50, 22))
	const m, rows, cols = 3, 4, 6
	w, w2 := int8Weight(r, rows, cols), int8Weight(r, rows, cols)
	c0, c1 := words(r, m*cols), words(r, m*cols)
	honest := func(name string, c []uint32) []uint32 {
		y := make([]uint32, m*rows)
		if err := newRingWith(map[string]*wire.Matrix{"w": w, "w2": w2}).MatMulU32("matmul", name, c, m, y); err != nil {
			t.Fatal(err)
		}
		return y
	}
	h0, h1, other := honest("w", c0), honest("w", c1), honest("w2", c1)
	for _, tc := range []struct {
		lie    Lie
		amount float64
		check  func(y []uint32) string
	}{
		{Honest, 0, func(y []uint32) string { return diffWords(y, h1) }},
		{FlipOne, 0, func(y []uint32) string {
			j := 0
			for i := range rows {
				if abs32(h1[rows+i]) > abs32(h1[rows+j]) {
					j = i
				}
			}
			want := slices.Clone(h1)
			want[rows+j] = -want[rows+j]
			return diffWords(y, want)
		}},
		{ScaleRow, 1, func(y []uint32) string {
			want := slices.Clone(h1)
			for i := rows; i < 2*rows; i++ {
				want[i] *= 2 // 1 + Amount, exact mod 2^32
			}
			return diffWords(y, want)
		}},
		{Noise, 0.5, func(y []uint32) string {
			// Rows 0 and 2 honest, every word of row 1 moved (noise of
			// half the row's norm, rounded, is far from 0 at random words).
			if d := diffWords(slices.Concat(y[:rows], y[2*rows:]), slices.Concat(h1[:rows], h1[2*rows:])); d != "" {
				return "other rows: " + d
			}
			for i := rows; i < 2*rows; i++ {
				if y[i] == h1[i] {
					return fmt.Sprintf("word %d of the lied row unchanged: %#x", i-rows, y[i])
				}
			}
			return ""
		}},
		{Stale, 0, func(y []uint32) string { return diffWords(y, h0) }},
		{OtherWeight, 0, func(y []uint32) string { return diffWords(y, other) }},
		{ZeroRows, 0, func(y []uint32) string { return diffWords(y, make([]uint32, m*rows)) }},
		{PermuteRows, 0, func(y []uint32) string { return diffWords(y, slices.Concat(h1[rows:], h1[:rows])) }},
	} {
		t.Run(tc.lie.String(), func(t *testing.T) {
			ring := newRing()
			liar := NewLiar(ring)
			liar.Row, liar.Amount = 4, tc.amount // row 4 mod 3 = 1
			if err := liar.Upload("a-f32", make([]float32, rows*cols), rows, cols); err != nil {
				t.Fatal(err)
			}
			for name, q := range map[string]*wire.Matrix{"w": w, "w2": w2} {
				if err := liar.UploadQ(name, q); err != nil {
					t.Fatal(err)
				}
			}
			y := make([]uint32, m*rows)
			if err := liar.MatMulU32("matmul", "w", c0, m, y); err != nil {
				t.Fatal(err)
			}
			liar.Lie = tc.lie
			liar.At = func(call int, weight string) bool { return call == 1 }
			if err := liar.MatMulU32("matmul", "w", c1, m, y); err != nil {
				t.Fatal(err)
			}
			if d := tc.check(y); d != "" {
				t.Fatal(d)
			}
			if want := min(1, int(tc.lie)); liar.Lies() != want {
				t.Fatalf("%d lies counted, want %d", liar.Lies(), want)
			}
		})
	}
}

// FlipOne changes the word even where negation cannot: a row of zeros
// and 2^31 (its own negative mod 2^32) gets 1 added at the first of them.
func TestLiarU32FlipOneFixedPoints(t *testing.T) {
	for _, v := range []uint32{0, 1 << 31} {
		l := NewLiar(newRing())
		l.Lie = FlipOne
		row := []uint32{v, v, 0}
		l.lieWords(0, row)
		if !slices.Equal(row, []uint32{v + 1, v, 0}) {
			t.Fatalf("flip-one of %#x: %#v", v, row)
		}
	}
}

func newRingWith(q map[string]*wire.Matrix) *ring {
	r := newRing()
	for name, w := range q {
		if err := r.UploadQ(name, w); err != nil {
			panic(err)
		}
	}
	return r
}

func abs32(v uint32) int64 {
	x := int64(int32(v))
	if x < 0 {
		return -x
	}
	return x
}

// diffWords says how y differs from want ("" when equal).
func diffWords(y, want []uint32) string {
	if !slices.Equal(y, want) {
		return fmt.Sprintf("got %#x, want %#x", y, want)
	}
	return ""
}
