package lwe

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestQuantize: per-row scale max|W| / 127, ties to even, the row maximum
// at exactly +-127, zero rows at scale 0, norms exact.
func TestQuantize(t *testing.T) {
	for _, tc := range []struct {
		name  string
		row   []float32
		scale float32
		q     []int8
	}{
		{"ties to even", []float32{127, 0.5, 1.5, 2.5, -0.5, -3.5}, 1, []int8{127, 0, 2, 2, 0, -4}},
		{"negative max", []float32{-254, 2, 3, -1}, 2, []int8{-127, 1, 2, 0}},
		{"zero row", []float32{0, 0, 0}, 0, []int8{0, 0, 0}},
		{"subnormal row", []float32{1e-45, -1e-45}, 0, []int8{0, 0}},
		{"one outlier", []float32{1e6, 1, -1}, 1e6 / 127, []int8{127, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Quantize(tc.row, 1, len(tc.row))
			if err != nil {
				t.Fatal(err)
			}
			if w.Scale[0] != tc.scale || !slices.Equal(w.Q, tc.q) {
				t.Fatalf("scale %v q %v, want %v %v", w.Scale[0], w.Q, tc.scale, tc.q)
			}
			var n2, n1 float64
			for _, v := range tc.q {
				n2 += float64(v) * float64(v)
				n1 += math.Abs(float64(v))
			}
			if w.Norm[0] != math.Sqrt(n2) || w.Norm1[0] != n1 || w.MaxNorm != w.Norm[0] {
				t.Fatalf("norms %v %v %v, want %v %v", w.Norm[0], w.Norm1[0], w.MaxNorm, math.Sqrt(n2), n1)
			}
		})
	}
}

// TestQuantizeErrors: a non-finite weight or a wrong shape is an error
// naming it; NewWeights refuses -128 and bad scales.
func TestQuantizeErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		w        []float32
		out, in  int
		wantText string
	}{
		{"nan", []float32{1, 2, float32(math.NaN()), 4}, 2, 2, "weight [1, 0] is NaN"},
		{"inf", []float32{1, float32(math.Inf(1))}, 1, 2, "weight [0, 1] is +Inf"},
		{"shape", []float32{1, 2, 3}, 2, 2, "3 weights for shape [2, 2]"},
		{"empty", nil, 0, 2, "shape [0, 2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Quantize(tc.w, tc.out, tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("error %v, want one naming %q", err, tc.wantText)
			}
		})
	}
	if _, err := NewWeights([]int8{1, -128}, []float32{1}, 1, 2); err == nil || !strings.Contains(err.Error(), "[0, 1] is -128") {
		t.Errorf("-128: %v", err)
	}
	if _, err := NewWeights([]int8{1, 2}, []float32{float32(math.NaN())}, 1, 2); err == nil {
		t.Error("NaN scale accepted")
	}
	w, err := NewWeights([]int8{3, -4, 127, -127}, []float32{1, 2}, 2, 2)
	if err != nil || w.Norm[0] != 5 || w.Norm1[1] != 254 {
		t.Errorf("NewWeights: %v, norms %v %v", err, w.Norm, w.Norm1)
	}
}
