package lwe

import (
	"fmt"
	"math"
)

// QMax is the largest weight magnitude: W_q is in [-127, 127], so that the
// int8 value -128 never occurs and negation stays in range.
const QMax = 127

// Weights is one matrix in the per-output-channel int8 format of the lwe
// level: W ~= diag(Scale) Q, Q in [-127, 127], the W8A8 convention.
type Weights struct {
	Out, In int
	Q       []int8    // [Out][In] row-major: row j is w_j
	Scale   []float32 // s_w[j] = max_i |W[j,i]| / 127 (0 for a zero row)
	Norm    []float64 // |w_j|_2 of Q's rows (the wrap bound's factor)
	Norm1   []float64 // |w_j|_1 of Q's rows (the worst-case noise)
	MaxNorm float64   // max_j Norm[j]
}

// Quantize converts w, float32 [out, in] row-major (y = W x), to Weights:
// s_w[j] = max_i |W[j,i]| / 127 rounded to float32, and
// Q[j,i] = roundHalfEven(W[j,i] / s_w[j]) clamped to [-127, 127]. Ties go
// to even, as torch.round and numpy.round do, so a row quantized by a
// Python W8A8 tool gets the same integers. A non-finite weight is an error
// naming its position.
func Quantize(w []float32, out, in int) (*Weights, error) {
	if out <= 0 || in <= 0 || len(w) != out*in {
		return nil, fmt.Errorf("lwe: quantize: %d weights for shape [%d, %d]", len(w), out, in)
	}
	q := &Weights{Out: out, In: in, Q: make([]int8, out*in),
		Scale: make([]float32, out)}
	for j := 0; j < out; j++ {
		row := w[j*in : (j+1)*in]
		var amax float64
		for i, x := range row {
			f := float64(x)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("lwe: quantize: weight [%d, %d] is %v", j, i, x)
			}
			amax = math.Max(amax, math.Abs(f))
		}
		s := float32(amax / QMax)
		if s == 0 { // a zero row, or one of subnormals that round to 0
			continue
		}
		q.Scale[j] = s
		qr := q.Q[j*in : (j+1)*in]
		for i, x := range row {
			v := math.RoundToEven(float64(x) / float64(s))
			qr[i] = int8(max(-QMax, min(QMax, v)))
		}
	}
	q.norms()
	return q, nil
}

// NewWeights wraps integer weights that are already quantized (Q [out, in]
// row-major, one scale per row), checking the range, and computes the
// norms. Q and scale are kept, not copied.
func NewWeights(q []int8, scale []float32, out, in int) (*Weights, error) {
	if out <= 0 || in <= 0 || len(q) != out*in || len(scale) != out {
		return nil, fmt.Errorf("lwe: weights: %d values and %d scales for shape [%d, %d]", len(q), len(scale), out, in)
	}
	for k, v := range q {
		if v < -QMax {
			return nil, fmt.Errorf("lwe: weights: [%d, %d] is %d, outside [-127, 127]", k/in, k%in, v)
		}
	}
	for j, s := range scale {
		if f := float64(s); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return nil, fmt.Errorf("lwe: weights: scale %d is %v", j, s)
		}
	}
	w := &Weights{Out: out, In: in, Q: q, Scale: scale}
	w.norms()
	return w, nil
}

// norms fills Norm, Norm1 and MaxNorm. The squared norm is an exact int64
// sum, so Norm[j] is sqrt of an integer, correctly rounded.
func (w *Weights) norms() {
	w.Norm = make([]float64, w.Out)
	w.Norm1 = make([]float64, w.Out)
	w.MaxNorm = 0
	for j := 0; j < w.Out; j++ {
		var n2, n1 int64
		for _, v := range w.Q[j*w.In : (j+1)*w.In] {
			n2 += int64(v) * int64(v)
			n1 += int64(max(v, -v))
		}
		w.Norm[j] = math.Sqrt(float64(n2))
		w.Norm1[j] = float64(n1)
		w.MaxNorm = max(w.MaxNorm, w.Norm[j])
	}
}

// Row returns w_j, row j of Q.
func (w *Weights) Row(j int) []int8 { return w.Q[j*w.In : (j+1)*w.In] }
