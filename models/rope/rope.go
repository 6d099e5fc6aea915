// Package rope builds the rotary-embedding cos/sin tables of a model, once
// for every backend (the cpu kernels and gomlx hold the same bits, which
// their parity tests rely on).
package rope

import (
	"fmt"
	"math"
)

// Tables returns cos and sin, each [maxPos][headDim/2] row-major: for
// position p and 0 <= i < headDim/2, angle(p, i) = p * theta^(-2i/headDim),
// the inverse frequency and the angle in float64, cos and sin rounded to
// float32 once. (HF computes inv_freq and the angle in float32; ours is the
// exactly rounded value, so the two can differ in the last bits at large
// positions.) headDim must be even and positive, maxPos positive, theta > 0.
func Tables(headDim int, theta float64, maxPos int) (cos, sin []float32, err error) {
	if headDim <= 0 || headDim%2 != 0 || maxPos <= 0 || !(theta > 0) {
		return nil, nil, fmt.Errorf("rope: bad arguments headDim=%d theta=%v maxPos=%d", headDim, theta, maxPos)
	}
	h := headDim / 2
	cos, sin = make([]float32, maxPos*h), make([]float32, maxPos*h)
	inv := make([]float64, h)
	for i := range inv {
		inv[i] = math.Pow(theta, -2*float64(i)/float64(headDim))
	}
	for p := 0; p < maxPos; p++ {
		for i, f := range inv {
			s, c := math.Sincos(float64(p) * f)
			cos[p*h+i], sin[p*h+i] = float32(c), float32(s)
		}
	}
	return cos, sin, nil
}
