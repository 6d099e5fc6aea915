package lwebreak

import (
	"math/rand/v2"
)

// RowKind names an activation row the harness encodes: the shapes real
// activations take and the ones that stress a mask (a row that is mostly
// one coordinate, a row of zeros, one row sent again and again).
type RowKind string

const (
	RowGauss    RowKind = "gaussian"  // N(0, 1) per coordinate
	RowOutlier  RowKind = "outlier"   // N(0, 1) with two coordinates at 1000x the rms (LLM activation outliers)
	RowZero     RowKind = "zero"      // all zeros: c is the pad alone
	RowRepeated RowKind = "repeated"  // one fixed Gaussian row (the same BOS row in every prompt)
	RowSparse   RowKind = "sparse"    // four nonzeros, the rest zero
	RowEqual    RowKind = "all-equal" // every coordinate 3.5
)

var allRows = []RowKind{RowGauss, RowOutlier, RowZero, RowRepeated, RowSparse, RowEqual}

// repeatedSeed fixes the row RowRepeated returns every time.
const repeatedSeed = 0x5e9ea7ed

// Activation returns one row of the kind, of width in, drawing from rng.
func Activation(kind RowKind, in int, rng *rand.Rand) []float32 {
	x := make([]float32, in)
	switch kind {
	case RowGauss, RowOutlier:
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		if kind == RowOutlier {
			x[0], x[in/2] = 1000, -1000
		}
	case RowRepeated:
		fixed := rand.New(rand.NewPCG(repeatedSeed, uint64(in)))
		for i := range x {
			x[i] = float32(fixed.NormFloat64())
		}
	case RowSparse:
		for range 4 {
			x[rng.IntN(in)] = float32(rng.NormFloat64() * 10)
		}
	case RowEqual:
		for i := range x {
			x[i] = 3.5
		}
	case RowZero:
	}
	return x
}
