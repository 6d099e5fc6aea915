package ir

import "fmt"

// Limits on an lwe crossing's parameters, so a plan cannot ask the TEE for
// an unbounded public matrix or hint (lambda words a weight row) or a
// scale that leaves no room for the plaintext.
const (
	MaxLWELambda = 1 << 16
	MaxLWEDelta  = 1 << 16
)

// The lwe level's boundary (package lwe holds its arithmetic): lwe_encode
// turns f32 rows into ciphertext rows c = A s + e + Delta x_q mod 2^32, one
// fresh pad per row; the device multiplies them by an int8 weight modulo
// 2^32 (a linear op with u32 rows); lwe_decode subtracts the pad's H s,
// centres and rescales. Both name the crossing's slot: the decodes of one
// encode use the pads it drew, and a slot is one crossing's.
func init() {
	for _, info := range []*OpInfo{
		{Name: OpLWEEncode, Class: ClassBoundary, Cost: CostLattice, Crossing: ToDevice, Secrecy: Declassify,
			Doc:       "c = A s + e + Delta round(x / step) mod 2^32 per row, with a fresh pad (s ternary with h nonzeros, e CBD(2)) and the row's step chosen so that no product wraps: the only op that declassifies under lwe",
			MinInputs: 1, MaxInputs: 1,
			Attrs: []AttrSpec{{Name: "slot", Kind: AttrInt}, {Name: "lambda", Kind: AttrInt},
				{Name: "h", Kind: AttrInt}, {Name: "delta", Kind: AttrInt}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := checkLWEAttrs(n); err != nil {
					return Type{}, err
				}
				if in[0].DType != F32 || in[0].Rank() != 2 {
					return Type{}, fmt.Errorf("x must be f32 rows, got %v", in[0])
				}
				return Type{U32, in[0].Shape}, nil
			}},
		{Name: OpLWEDecode, Class: ClassBoundary, Cost: CostLattice, Crossing: ToTEE, Secrecy: AlwaysSecret,
			Doc: "centre(y - H s) per row, range-checked against the row's no-wrap bound and rescaled by step s_w / Delta: back from the device into the TEE",
			// Operands: the device's u32 product and the int8 weight (or
			// stacked weights) it multiplied, whose row scales and hint
			// the decode reads.
			MinInputs: 2, MaxInputs: 2,
			Attrs: []AttrSpec{{Name: "slot", Kind: AttrInt}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if s, _ := n.Attrs.Int("slot"); s < 0 {
					return Type{}, fmt.Errorf("slot %d is negative", s)
				}
				y, w := in[0], in[1]
				if y.DType != U32 || y.Rank() != 2 {
					return Type{}, fmt.Errorf("y must be u32 rows, got %v", y)
				}
				if w.DType != I8 || w.Rank() != 2 {
					return Type{}, fmt.Errorf("weight must be an int8 matrix, got %v", w)
				}
				if err := sameDim("weight rows", w.Shape[0], y.Shape[1]); err != nil {
					return Type{}, err
				}
				return Type{F32, y.Shape}, nil
			}},
	} {
		Register(info)
	}
}

// checkLWEAttrs bounds an encode's parameters.
func checkLWEAttrs(n *Node) error {
	slot, _ := n.Attrs.Int("slot")
	lambda, _ := n.Attrs.Int("lambda")
	h, _ := n.Attrs.Int("h")
	delta, _ := n.Attrs.Int("delta")
	switch {
	case slot < 0:
		return fmt.Errorf("slot %d is negative", slot)
	case lambda < 1 || lambda > MaxLWELambda:
		return fmt.Errorf("lambda %d is outside [1, %d]", lambda, MaxLWELambda)
	case h < 1 || h > lambda:
		return fmt.Errorf("h %d is outside [1, lambda = %d]", h, lambda)
	case delta < 1 || delta > MaxLWEDelta:
		return fmt.Errorf("delta %d is outside [1, %d]", delta, MaxLWEDelta)
	}
	return nil
}
