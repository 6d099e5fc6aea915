package formats_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gelo/device/wire"
	"gelo/formats"
	"gelo/lwe"
)

// The int8 format quantizes exactly as lwe.Quantize does: the same
// integers and the same scales, row by row, on random rows and on the
// edge cases (ties at half a step, which go to even; a zero row; a row of
// subnormals whose scale rounds to 0; a lone maximum; negative extremes),
// so the lwe level multiplies the integers a plan in this format holds.
func TestInt8MatchesLWEQuantize(t *testing.T) {
	f, err := formats.Lookup(formats.Int8)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const cols = 8
	random := make([]float32, cols)
	for i := range random {
		random[i] = float32(r.NormFloat64() * 0.02)
	}
	rows := [][]float32{
		random,
		{127, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5}, // scale 1: ties to even
		{0, 0, 0, 0, 0, 0, 0, 0},
		{1e-45, -1e-45, 0, 0, 1e-45, 0, 0, 0}, // amax/127 rounds to 0
		{-3, 1, 1, 1, 1, 1, 1, 1},
		{-math.MaxFloat32, math.MaxFloat32, 1, -1, 0, 0, 0, 0},
	}
	// Random rows over magnitudes from 1e-30 to 1e30, some with values on
	// a grid of half steps (ties after the division).
	for j := range 64 {
		row := make([]float32, cols)
		mag := math.Pow(10, float64(j%61-30))
		for i := range row {
			if j%3 == 0 {
				row[i] = float32(float64(r.IntN(255)-127) / 2 * mag)
			} else {
				row[i] = float32(r.NormFloat64() * mag)
			}
		}
		rows = append(rows, row)
	}
	var src []float32
	for _, row := range rows {
		src = append(src, row...)
	}
	n := len(rows)
	b := make([]byte, f.DType.MatrixBytes(n, cols))
	if err := f.Encode(b, src); err != nil {
		t.Fatal(err)
	}
	want, err := lwe.Quantize(src, n, cols)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wire.NewMatrix(wire.Int8, n, cols, b)
	if err != nil {
		t.Fatal(err)
	}
	for j := range n {
		row := m.Row(j)
		got := make([]int8, cols)
		for i := range cols {
			got[i] = int8(row[i])
		}
		if !slices.Equal(got, want.Row(j)) {
			t.Errorf("row %d: integers %v, lwe.Quantize %v", j, got, want.Row(j))
		}
		if s := m.Scale(j, 0); math.Float32bits(s) != math.Float32bits(want.Scale[j]) {
			t.Errorf("row %d: scale %v, lwe.Quantize %v", j, s, want.Scale[j])
		}
	}
	// lwe.NewWeights accepts the format's integers and scales as they are.
	q := make([]int8, n*cols)
	scale := make([]float32, n)
	for j := range n {
		for i, v := range m.Row(j)[:cols] {
			q[j*cols+i] = int8(v)
		}
		scale[j] = m.Scale(j, 0)
	}
	if _, err := lwe.NewWeights(q, scale, n, cols); err != nil {
		t.Errorf("lwe.NewWeights refuses the format's matrix: %v", err)
	}
}

// A non-finite weight is an error naming its position, and lengths that
// are not whole rows are refused.
func TestInt8Refuses(t *testing.T) {
	f, _ := formats.Lookup(formats.Int8)
	src := []float32{1, 2, float32(math.Inf(1)), 4}
	if err := f.Encode(make([]byte, 2*(2+4)), src); err == nil {
		t.Error("an infinite weight accepted")
	}
	for _, n := range []int{4, 7, 9} {
		if err := f.Encode(make([]byte, n), []float32{1, 2, 3, 4}); err == nil {
			t.Errorf("encode 4 values into %d bytes accepted", n)
		}
	}
	if err := f.Decode(make([]float32, 3), make([]byte, 2*(2+4))); err == nil {
		t.Error("decode 2 rows of 2 into 3 values accepted")
	}
}
