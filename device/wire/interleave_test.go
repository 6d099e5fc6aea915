package wire

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestInterleave: for every format and row counts with and without a
// partial group, the interleaved matrix gives back the same rows, the same
// dequantized values and the same row-major bytes, and the bytes of row r's
// block b lie where the layout's documentation says.
func TestInterleave(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, lay := range []Layout{Interleaved8, Interleaved16} {
		testInterleave(t, rng, lay)
	}
	m, err := Quantize(Q4_K, make([]float32, 8*256), 8, 256)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Interleave(); err != nil {
		t.Fatal(err)
	}
	if m.InterleaveTo(Interleaved16) == nil {
		t.Fatal("an Interleaved8 matrix was reordered again")
	}
	m.Layout = Interleaved16 + 1
	if m.Validate() == nil {
		t.Fatal("a matrix of an unknown layout validated")
	}
}

func testInterleave(t *testing.T, rng *rand.Rand, lay Layout) {
	gr := lay.GroupRows()
	for _, f := range []Format{Q8_0, Q4_0, Q4_K} {
		for _, rows := range []int{8, 13, 24, 5, 16, 35} {
			cols := 96
			if f == Q4_K {
				cols = 512
			}
			w := make([]float32, rows*cols)
			for i := range w {
				w[i] = float32(rng.NormFloat64())
			}
			m, err := Quantize(f, w, rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(m.Data)
			wantF := make([]float32, rows*cols)
			if err := m.Dequantize(wantF); err != nil {
				t.Fatal(err)
			}
			if err := m.InterleaveTo(lay); err != nil {
				t.Fatal(err)
			}
			if rows >= gr && bytes.Equal(m.Data, want) {
				t.Fatalf("%v %s %d rows: Interleave changed nothing", f, lay, rows)
			}
			bb, nb := f.BlockBytes(), cols/f.BlockValues()
			if f == Q4_K && rows >= gr {
				// Row gr-3's super-block 1 of group 0: header dword 2, quant piece 5.
				r, b := gr-3, 1
				base := b * gr * bb
				if got, exp := m.Data[base+4*gr*2+4*r:][:4], want[r*nb*bb+b*bb+8:][:4]; !bytes.Equal(got, exp) {
					t.Fatalf("%v %s: header dword = %v, want %v", f, lay, got, exp)
				}
				if got, exp := m.Data[base+16*gr+4*gr*5+4*r:][:4], want[r*nb*bb+b*bb+16+20:][:4]; !bytes.Equal(got, exp) {
					t.Fatalf("%v %s: quant piece = %v, want %v", f, lay, got, exp)
				}
			} else if rows >= gr {
				// Row gr-3, block 2, piece 1 of group 0.
				r, b, p := gr-3, 2, 1
				at := b*gr*bb + 2*gr + 4*gr*p + 4*r
				if got, exp := m.Data[at:at+4], want[r*nb*bb+b*bb+2+4*p:][:4]; !bytes.Equal(got, exp) {
					t.Fatalf("%v: piece at %d = %v, want %v", f, at, got, exp)
				}
				if got, exp := m.Data[b*gr*bb+2*r:][:2], want[r*nb*bb+b*bb:][:2]; !bytes.Equal(got, exp) {
					t.Fatalf("%v: scale = %v, want %v", f, got, exp)
				}
			}
			got, err := m.RowMajorData()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%v %d rows: RowMajorData differs (err %v)", f, rows, err)
			}
			for r := 0; r < rows; r++ {
				if !bytes.Equal(m.Row(r), want[r*nb*bb:(r+1)*nb*bb]) {
					t.Fatalf("%v %d rows: Row(%d) differs", f, rows, r)
				}
			}
			gotF := make([]float32, rows*cols)
			if err := m.Dequantize(gotF); err != nil || !slices.Equal(gotF, wantF) {
				t.Fatalf("%v %d rows: Dequantize differs (err %v)", f, rows, err)
			}
			// The gather of embedding rows: each row through a reused buffer.
			buf, row := make([]byte, m.RowBytes()), make([]float32, cols)
			for r := 0; r < rows; r++ {
				if err := m.DequantizeRowBuf(row, r, buf); err != nil || !slices.Equal(row, wantF[r*cols:(r+1)*cols]) {
					t.Fatalf("%v %d rows: DequantizeRowBuf(%d) differs (err %v)", f, rows, r, err)
				}
			}
			if m.DequantizeRowBuf(row, rows, buf) == nil || m.DequantizeRowBuf(row, 0, buf[:1]) == nil {
				t.Fatalf("%v: DequantizeRowBuf accepted a row out of range or a short buffer", f)
			}
			if err := m.InterleaveTo(lay); err != nil || m.Layout != lay {
				t.Fatalf("second Interleave: %v", err)
			}
		}
	}
}
