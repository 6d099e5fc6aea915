package lwe

import (
	"errors"
	"fmt"
	"math"
)

// ErrRange is the error of a device result whose centred value leaves the
// bound the encode guaranteed: the product did not come from the
// ciphertext that was sent (or the hint is wrong). It names no output, so
// an aborting caller tells the device one bit.
var ErrRange = errors.New("lwe: a decoded value is outside the row's Cauchy-Schwarz bound: the device result is not W_q c")

// wrapMargin shrinks the 2^31 budget by a relative 2^-30, far more than the
// float64 rounding of the few operations the bound is computed with.
const wrapMargin = 1 - 0x1p-30

// Encoder encodes rows of width d_in for the weights a ciphertext feeds
// (q, k and v share one): the step of each row keeps every one of them
// from wrapping.
type Encoder struct {
	In      int
	Delta   uint32
	MaxNorm float64 // max_j |w_j|_2 over every weight fed
	budget  float64 // T = 2^31 (1 - 2^-30) / MaxNorm: the bound on Delta |x_q|_2 + |e|_2
	slack   float64 // (Delta / 2 + 2) sqrt(d_in): rounding of x_q plus |e|_2
}

// NewEncoder returns the encoder of rows that feed ws (all of width d_in).
// It fails when no step avoids a wrap, which needs
// 2^31 > MaxNorm (Delta / 2 + 2) sqrt(d_in) (for int8 weights, d_in up to
// about 1.7 million at Delta = 16).
func NewEncoder(p Params, ws ...*Weights) (*Encoder, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, errors.New("lwe: encoder: no weights")
	}
	e := &Encoder{In: ws[0].In, Delta: p.Delta}
	for i, w := range ws {
		if w.In != e.In {
			return nil, fmt.Errorf("lwe: encoder: weight %d has width %d, weight 0 %d", i, w.In, e.In)
		}
		e.MaxNorm = max(e.MaxNorm, w.MaxNorm)
	}
	e.slack = (float64(p.Delta)/2 + 2) * math.Sqrt(float64(e.In))
	if e.MaxNorm == 0 {
		e.budget = math.Inf(1) // all-zero weights: y = 0 whatever c is
		return e, nil
	}
	e.budget = 0x1p31 * wrapMargin / e.MaxNorm
	if e.budget <= e.slack {
		return nil, fmt.Errorf("lwe: encoder: max row norm %.0f at d_in %d leaves no step without a wrap", e.MaxNorm, e.In)
	}
	return e, nil
}

// Row is what the TEE keeps of an encoded row to decode its results.
type Row struct {
	Step  float64 // x ~= step x_q
	XNorm float64 // |x_q|_2
	Delta uint32
}

// Step is the smallest step for which every rounding keeps the no-wrap
// bound: with |x_q|_2 <= |x|_2 / step + sqrt(d_in) / 2 (each coordinate
// rounds by at most 1/2) and |e|_2 <= 2 sqrt(d_in),
//
//	Delta |x_q|_2 + |e|_2 <= Delta |x|_2 / step + (Delta / 2 + 2) sqrt(d_in) <= T
//
// holds from step = Delta |x|_2 / (T - (Delta / 2 + 2) sqrt(d_in)) up. T is
// 2^31 / max_j |w_j|_2 less a relative 2^-30 for float64 rounding (Encode
// multiplies by 1 / step, which moves x / step by a relative 2^-52 at
// most). A zero row gets step 0 (x_q = 0, decoded as exact zeros).
func (e *Encoder) Step(xnorm float64) float64 {
	if xnorm == 0 || math.IsInf(e.budget, 1) {
		return 0
	}
	return float64(e.Delta) * xnorm / (e.budget - e.slack)
}

// Encode writes c = M + Delta x_q mod 2^32 for the row x (d_in values),
// x_q = roundHalfEven(x * (1 / step)) in float64, consuming and wiping
// pad.M; |x|_2 is summed in sumSquares' lane order. With AVX2 four words
// an instruction (encodeAVX2), the same words as the Go loop. A non-finite
// x or a used pad is an error; c is then left untouched.
func (e *Encoder) Encode(x []float32, pad *Pad, c []uint32) (Row, error) {
	if len(x) != e.In || len(c) != e.In || pad == nil || len(pad.M) != e.In {
		return Row{}, fmt.Errorf("lwe: encode: row of %d, ciphertext of %d, width %d", len(x), len(c), e.In)
	}
	if !pad.mFresh {
		return Row{}, fmt.Errorf("lwe: encode: pad %d: %w", pad.Counter, ErrPadUsed)
	}
	n2 := sumSquares(x)
	// A float32 squared cannot overflow float64, nor can d_in of them, so
	// n2 is finite exactly when every x_i is: one test, not one a value.
	if math.IsNaN(n2) || math.IsInf(n2, 0) {
		for i, v := range x {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				return Row{}, fmt.Errorf("lwe: encode: x[%d] is %v", i, v)
			}
		}
	}
	step := e.Step(math.Sqrt(n2))
	// |x_q|_2 <= T / Delta < 2^31, so its square is an exact int64 sum and
	// XNorm is rounded twice, not once per coordinate.
	d := e.Delta
	var inv float64
	if step != 0 {
		inv = 1 / step
	}
	m := pad.M[:len(x)]
	c = c[:len(x)]
	n4 := 0
	var q2 int64
	if useAsm {
		n4 = len(x) &^ 3
	}
	if n4 > 0 {
		q2 = encodeAVX2(&x[0], &m[0], &c[0], n4, inv, d)
	}
	for i := n4; i < len(x); i++ {
		q := int64(math.RoundToEven(float64(x[i]) * inv))
		q2 += q * q
		c[i] = m[i] + d*uint32(q)
	}
	clear(pad.M)
	pad.mFresh = false
	return Row{Step: step, XNorm: math.Sqrt(float64(q2)), Delta: d}, nil
}

// rowBound is the factor of |w_j|_2 in the Cauchy-Schwarz bound on |v_j|
// for the row r: Delta |x_q|_2 + 2 sqrt(d_in), rounded up past float64
// error.
func rowBound(r Row, in int) float64 {
	return (float64(r.Delta)*r.XNorm + 2*math.Sqrt(float64(in))) * (1 + 0x1p-40)
}

// DecodeInt writes v_j = centre(y_j - u_j) (in [-2^31, 2^31), as int32) for
// the row r and weight w, consuming and wiping the pad's U[hint]. Each v_j
// must lie within b_j = |w_j|_2 (Delta |x_q|_2 + 2 sqrt(d_in)); one that
// does not gives ErrRange. This range check of the centred result is a
// weak integrity check: the step fills the budget, so b_j is about
// 2^31 |w_j|_2 / max_k |w_k|_2 for every nonzero row, and a result off by a
// uniform error passes with probability about |w_j|_2 / max_k |w_k|_2
// (near 1 for the largest-norm outputs); an error below b_j - |v_j| always
// passes. It catches a shift by 2^31 in outputs with b_j < 2^30. Freivalds
// checks of the product mod 2^32 must bound the rest.
func DecodeInt(w *Weights, r Row, y []uint32, pad *Pad, hint int, v []int32) error {
	return decode(w, r, y, pad, hint, v, nil)
}

// Decode is DecodeInt fused with the rescale y_j = v_j step s_w[j] / Delta
// into out (float32, d_out): one pass over the outputs, with AVX2 four an
// instruction (decodeAVX2; the same words as the Go loop). The result
// carries the noise step s_w[j] (w_j . e) / Delta (see the package doc
// and NoiseBound). On ErrRange out holds garbage.
func Decode(w *Weights, r Row, y []uint32, pad *Pad, hint int, v []int32, out []float32) error {
	if len(out) != w.Out {
		return fmt.Errorf("lwe: decode: %d outputs for d_out %d", len(out), w.Out)
	}
	return decode(w, r, y, pad, hint, v, out)
}

// decode is DecodeInt, and with out (d_out) Decode's rescale in the same
// pass.
func decode(w *Weights, r Row, y []uint32, pad *Pad, hint int, v []int32, out []float32) error {
	if pad == nil {
		return errors.New("lwe: decode: nil pad")
	}
	if hint < 0 || hint >= len(pad.U) || len(pad.U[hint]) != w.Out || len(y) != w.Out || len(v) != w.Out {
		return fmt.Errorf("lwe: decode: hint %d of %d, %d results and %d outputs for d_out %d", hint, len(pad.U), len(y), len(v), w.Out)
	}
	if !pad.freshU(hint) {
		return fmt.Errorf("lwe: decode: pad %d hint %d: %w", pad.Counter, hint, ErrPadUsed)
	}
	u := pad.U[hint][:len(v)]
	y = y[:len(v)]
	norm, scale := w.Norm[:len(v)], w.Scale[:len(v)]
	lim := rowBound(r, w.In)
	f := r.Step / float64(r.Delta)
	n4 := 0
	bad := false
	if useAsm && out != nil {
		n4 = len(v) &^ 3
	}
	if n4 > 0 {
		bad = decodeAVX2(&y[0], &u[0], &v[0], &norm[0], &scale[0], &out[0], n4, lim, f)
	}
	for j := n4; j < len(v); j++ {
		v[j] = int32(y[j] - u[j])
		x := float64(v[j])
		if math.Abs(x) > float64(norm[j]*lim)+1 {
			bad = true
		}
		if out != nil {
			out[j] = float32(float64(x*f) * float64(scale[j]))
		}
	}
	clear(u)
	pad.uFresh[hint] = false
	if bad {
		return ErrRange
	}
	return nil
}

// sumSquares is sum x_i^2 in float64, in eight lanes (lane l the words
// i = l mod 8 below the last multiple of 8), combined as
// ((s0+s4) + (s2+s6)) + ((s1+s5) + (s3+s7)), then the tail in order; each
// square rounded before it is added (no fused multiply-add: the explicit
// conversions forbid it). sumSquaresAVX2 gives the same bits.
func sumSquares(x []float32) float64 {
	n8 := len(x) &^ 7
	var s float64
	if n8 > 0 {
		if useAsm {
			s = sumSquaresAVX2(&x[0], n8)
		} else {
			var l [8]float64
			for i := 0; i < n8; i += 8 {
				for j := range l {
					f := float64(x[i+j])
					l[j] += float64(f * f)
				}
			}
			s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
		}
	}
	for _, v := range x[n8:] {
		f := float64(v)
		s += float64(f * f)
	}
	return s
}

// NoiseBound is the decode noise of output j in units of step s_w[j]:
// the lattice term (w_j . e) / Delta has standard deviation
// |w_j|_2 / Delta and is at most 2 |w_j|_1 / Delta; for comparison the
// activation rounding w_j . (x_q - x / step) has standard deviation
// |w_j|_2 / sqrt(12) (rounding errors uniform) and is at most |w_j|_1 / 2.
func NoiseBound(w *Weights, j int, delta uint32) (std, worst float64) {
	return w.Norm[j] / float64(delta), 2 * w.Norm1[j] / float64(delta)
}

// EffectiveBits is what the step leaves of a row's resolution for weights
// of largest row norm maxNorm at width in: row = log2 |x_q|_2 at the
// largest step-limited norm, 2^31 / (Delta maxNorm) less the slack, and
// rms = row - log2(sqrt(in)), the bits of a coordinate at the row's rms.
func EffectiveBits(maxNorm float64, in int, delta uint32) (row, rms float64) {
	xq := (0x1p31/maxNorm - (float64(delta)/2+2)*math.Sqrt(float64(in))) / float64(delta)
	row = math.Log2(xq)
	return row, row - 0.5*math.Log2(float64(in))
}
