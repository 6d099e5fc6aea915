package dict

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func gauss(r, c int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 1))
	m := mat.NewDense(r, c, nil)
	for i := range m.RawMatrix().Data {
		m.RawMatrix().Data[i] = rng.NormFloat64()
	}
	return m
}

// Products and Combine agree with the float64 products to float32
// accuracy, across chunk boundaries; Norm2 and Dot are exact.
func TestProductsCombine(t *testing.T) {
	const V, W = 700, 48
	D := gauss(V, W, 1)
	T, err := New(D, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer T.Close()
	X := gauss(chunkRows+5, W, 2) // two chunks
	var want mat.Dense
	want.Mul(X, D.T())
	got := make([]float32, (chunkRows+5)*V)
	if err := T.Products(X, func(lo, hi int, y []float32) { copy(got[lo*V:hi*V], y) }); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < chunkRows+5; i++ {
		for v := 0; v < V; v++ {
			if d := math.Abs(float64(got[i*V+v]) - want.At(i, v)); d > 1e-4*math.Sqrt(W) {
				t.Fatalf("product (%d, %d): %v vs %v", i, v, got[i*V+v], want.At(i, v))
			}
		}
	}
	// Combine: rows C P with P the products of 3 rows.
	B := mat.DenseCopyOf(X.Slice(0, 3, 0, W))
	C := gauss(4, 3, 3)
	var CB mat.Dense
	CB.Mul(C, B)
	y, err := T.Combine(C, got[:3*V])
	if err != nil {
		t.Fatal(err)
	}
	var wc mat.Dense
	wc.Mul(&CB, D.T())
	for i := 0; i < 4; i++ {
		for v := 0; v < V; v++ {
			if d := math.Abs(float64(y[i*V+v]) - wc.At(i, v)); d > 1e-3*math.Sqrt(W) {
				t.Fatalf("combine (%d, %d): %v vs %v", i, v, y[i*V+v], wc.At(i, v))
			}
		}
	}
	if _, err := T.Combine(C, got[:2*V]); err == nil {
		t.Fatal("Combine accepted products of the wrong size")
	}
	if err := T.Products(mat.NewDense(2, W+1, nil), func(int, int, []float32) {}); err == nil {
		t.Fatal("Products accepted rows of the wrong width")
	}
	row := D.RawRowView(5)
	n2 := 0.0
	for _, x := range row {
		n2 += x * x
	}
	if T.Norm2(5) != n2 || T.Dot(row, 5) != n2 {
		t.Fatalf("Norm2 %v, Dot %v, want %v", T.Norm2(5), T.Dot(row, 5), n2)
	}
	if _, err := New(nil, 1); err == nil {
		t.Fatal("nil dictionary accepted")
	}
}
