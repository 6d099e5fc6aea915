package wire

import (
	"math"
	"math/rand/v2"
	"testing"
)

// An Int8 matrix round-trips through the Matrix API: its rows are cols
// int8 values and the float32 scale, Dequantize gives s_w[j] * q exactly,
// a row's scale reads back, stacking rows is concatenating bytes, widths
// that are not multiples of 32 are allowed, and interleaving is refused.
func TestInt8Matrix(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct{ rows, cols int }{{1, 1}, {3, 48}, {4, 256}} {
		w := make([]float32, tc.rows*tc.cols)
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		m, err := Quantize(Int8, w, tc.rows, tc.cols)
		if err != nil {
			t.Fatalf("%dx%d: %v", tc.rows, tc.cols, err)
		}
		if got, want := len(m.Data), tc.rows*(tc.cols+4); got != want || m.RowBytes() != tc.cols+4 {
			t.Fatalf("%dx%d: %d bytes (row %d), want %d", tc.rows, tc.cols, got, m.RowBytes(), want)
		}
		back := make([]float32, tc.rows*tc.cols+3) // longer than the matrix: only its values written
		if err := m.Dequantize(back); err != nil {
			t.Fatal(err)
		}
		for j := range tc.rows {
			s, row := m.Scale(j, 0), m.Row(j)
			var amax float64
			for i := range tc.cols {
				amax = math.Max(amax, math.Abs(float64(w[j*tc.cols+i])))
			}
			if want := float32(amax / 127); s != want {
				t.Errorf("%dx%d row %d: scale %v, want %v", tc.rows, tc.cols, j, s, want)
			}
			one := make([]float32, tc.cols)
			if err := m.DequantizeRow(one, j); err != nil {
				t.Fatal(err)
			}
			for i := range tc.cols {
				want := s * float32(int8(row[i]))
				if back[j*tc.cols+i] != want || one[i] != want {
					t.Fatalf("%dx%d [%d,%d]: %v / %v, want %v", tc.rows, tc.cols, j, i, back[j*tc.cols+i], one[i], want)
				}
				if d := math.Abs(float64(want - w[j*tc.cols+i])); d > float64(s)/2*(1+1e-6) {
					t.Fatalf("%dx%d [%d,%d]: error %g beyond half a step %g", tc.rows, tc.cols, j, i, d, s/2)
				}
			}
		}
		// Rows quantized alone are the matrix's rows.
		if tc.rows > 1 {
			one := make([]byte, tc.cols+4)
			if err := QuantizeRows(Int8, one, w[tc.cols:2*tc.cols]); err != nil {
				t.Fatal(err)
			}
			if string(one) != string(m.Row(1)) {
				t.Errorf("%dx%d: row 1 quantized alone differs", tc.rows, tc.cols)
			}
		}
		if err := m.InterleaveTo(Interleaved16); err == nil {
			t.Errorf("%dx%d: an int8 matrix interleaved", tc.rows, tc.cols)
		}
	}
	if _, err := NewMatrix(Int8, 2, 8, make([]byte, 2*12-1)); err == nil {
		t.Error("a short int8 matrix accepted")
	}
}
