package models

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"gelo/models/gguf"
	"gelo/models/safetensors"
)

// TestGGUFTensorFill: a GGUF tensor read a range at a time (ranges that
// cut rows and blocks, whole rows, the whole tensor) gives the values of
// dequantizing it whole, in gelo's row order: the file's rows as they are,
// or llama.cpp's q/k permutation undone.
func TestGGUFTensorFill(t *testing.T) {
	const rows, cols, heads = 8, 64, 2 // 2 Q8_0 blocks a row
	rng := rand.New(rand.NewPCG(1, 2))
	rb := cols / 32 * 34
	data := make([]byte, rows*rb)
	for b := 0; b < len(data); b += 34 {
		binary.LittleEndian.PutUint16(data[b:], safetensors.F32ToF16(rng.Float32()+0.01))
		for i := 2; i < 34; i++ {
			data[b+i] = byte(rng.IntN(256))
		}
	}
	stored := make([]float32, rows*cols)
	if err := gguf.Dequantize(gguf.Q8_0, data, stored); err != nil {
		t.Fatal(err)
	}
	for _, permuted := range []bool{false, true} {
		g := &ggufTensor{name: "w", typ: gguf.Q8_0, data: data, cols: cols, rowBytes: rb}
		want := stored
		if permuted {
			g.heads, g.half = heads, rows/heads/2
			want = unpermuteQK(stored, []int{rows, cols}, heads)
			if slices.Equal(want, stored) {
				t.Fatal("the permutation moves no row")
			}
		}
		for lo := 0; lo < rows*cols; lo += 7 {
			for hi := lo; hi <= rows*cols; hi += 13 {
				got := make([]float32, hi-lo)
				if err := g.fill(lo, hi, got); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want[lo:hi]) {
					t.Fatalf("permuted %v: elements [%d, %d) differ", permuted, lo, hi)
				}
			}
		}
		got := make([]float32, rows*cols)
		if err := g.fill(0, rows*cols, got); err != nil || !slices.Equal(got, want) {
			t.Fatalf("permuted %v: the whole tensor differs (%v)", permuted, err)
		}
		p := g.private(nil)
		data[2] ^= 0xFF // the source changes after the copy
		if err := p.fill(0, rows*cols, got); err != nil || !slices.Equal(got, want) {
			t.Fatalf("permuted %v: the private copy reads the changed source (%v)", permuted, err)
		}
		data[2] ^= 0xFF
	}
}
