package ir

import (
	"fmt"
	"strconv"
)

// DimAttr reads a dim written in a string attribute ("n", "S_n", "1").
func DimAttr(a Attrs, name string) (Dim, error) {
	s, ok := a.Str(name)
	if !ok || s == "" {
		return Dim{}, fmt.Errorf("attribute %q must name a dim", name)
	}
	if v, err := strconv.Atoi(s); err == nil {
		if v <= 0 {
			return Dim{}, fmt.Errorf("attribute %q: dim %d is not positive", name, v)
		}
		return D(v), nil
	}
	if !isIdent(s) {
		return Dim{}, fmt.Errorf("attribute %q: %q is neither a size nor an identifier", name, s)
	}
	return S(s), nil
}

// PassInput names the counter slot that holds the forward-pass number
// (i32[2], low and high words). The ops that draw mask material read it,
// so per-step scalars live in the arena, never in an instruction.
const PassInput = "pass"

// MaxShieldRows bounds a shield's k_min so a plan cannot ask the TEE for
// millions of rows per crossing; a full-span shield carries one row per
// column of its crossing, so the bound is the widest crossing it allows.
const MaxShieldRows = 1 << 16

// MaxProbePool bounds a probe's pool of secret vectors, so a plan cannot
// ask the TEE to precompute an unbounded number of W r products.
const MaxProbePool = 256

func passCounter(t Type) error {
	if t.DType != I32 || t.Rank() != 1 || t.Shape[0] != D(2) {
		return fmt.Errorf("pass counter must be i32[2], got %v", t)
	}
	return nil
}

// Boundary ops: what the protect pass inserts where a value crosses
// between the TEE and the device.
func init() {
	// per_row: every row is its own sequence with its own shield rows and
	// mask (batched decode's default topology), so no two users' rows are
	// ever mixed under one mask.
	familyAttrs := []AttrSpec{{Name: "family", Kind: AttrString}, {Name: "slot", Kind: AttrInt},
		{Name: "per_row", Kind: AttrBool, Optional: true}}
	// quant on mask / to_device: the quantize epilogue, writing the rows
	// that cross as q8_0 blocks for a quantized device matmul.
	maskAttrs := append(append([]AttrSpec(nil), familyAttrs...), AttrSpec{Name: "quant", Kind: AttrString, Optional: true})
	quantOut := func(n *Node, t Type) (Type, error) {
		q, ok := n.Attrs.Str("quant")
		if !ok {
			return t, nil
		}
		if q != Q8_0.String() {
			return Type{}, fmt.Errorf("quant %q: activations cross as q8_0 only", q)
		}
		if last := t.Shape[t.Rank()-1]; last.IsSym() || last.Size%32 != 0 {
			return Type{}, fmt.Errorf("q8_0 rows of width %v: not a multiple of 32", last)
		}
		t.DType = Q8_0
		return t, nil
	}
	same2D := func(n *Node, in []Type) (Type, error) {
		if err := expect("x", in[0], true, 2); err != nil {
			return Type{}, err
		}
		if len(in) == 2 {
			if err := passCounter(in[1]); err != nil {
				return Type{}, err
			}
		}
		return Type{F32, in[0].Shape}, nil
	}
	for _, info := range []*OpInfo{
		{Name: OpShieldStack, Class: ClassBoundary, Cost: CostShield,
			Doc: "append shield rows (Gaussian, energy x mean row norm) below the data rows; with center, send the rows minus their mean and the mean as one more row; with whiten, send [H/alpha; (I - H^T H/alpha^2)^(1/2); 0] (alpha a power of two), whose columns are orthonormal",
			// Operands: the rows, the pass counter, and optionally the rows
			// the shield energy is measured against (the uncentred rows when
			// the stacked ones were centred).
			MinInputs: 2, MaxInputs: 3,
			Attrs: []AttrSpec{{Name: "family", Kind: AttrString}, {Name: "k_min", Kind: AttrInt},
				{Name: "energy", Kind: AttrFloat}, {Name: "rows", Kind: AttrString},
				{Name: "center", Kind: AttrBool, Optional: true}, {Name: "per_row", Kind: AttrBool, Optional: true},
				{Name: "whiten", Kind: AttrBool, Optional: true}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := checkFamily(n); err != nil {
					return Type{}, err
				}
				if err := expect("x", in[0], true, 2); err != nil {
					return Type{}, err
				}
				if err := passCounter(in[1]); err != nil {
					return Type{}, err
				}
				if len(in) == 3 && !in[2].Equal(Type{F32, in[0].Shape}) {
					return Type{}, fmt.Errorf("energy reference %v does not match rows %v", in[2], in[0])
				}
				rows, err := DimAttr(n.Attrs, "rows")
				if err != nil {
					return Type{}, err
				}
				if k, _ := n.Attrs.Int("k_min"); k < 0 || k > MaxShieldRows {
					return Type{}, fmt.Errorf("k_min %d is outside [0, %d]", k, MaxShieldRows)
				}
				return Type{F32, Shape{rows, in[0].Shape[1]}}, nil
			}},
		{Name: OpMask, Class: ClassBoundary, Cost: CostMask, Crossing: ToDevice,
			Doc:       "A X with a fresh orthogonal A of the pass: the only op that declassifies",
			MinInputs: 2, MaxInputs: 2, Attrs: maskAttrs, Secrecy: Declassify,
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := checkFamily(n); err != nil {
					return Type{}, err
				}
				t, err := same2D(n, in)
				if err != nil {
					return Type{}, err
				}
				return quantOut(n, t)
			}},
		{Name: OpUnmask, Class: ClassBoundary, Cost: CostMask, Crossing: ToTEE,
			Doc:       "A^T Y: back from the device into the TEE; the result is secret again",
			MinInputs: 2, MaxInputs: 2, Attrs: familyAttrs, Secrecy: AlwaysSecret,
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := checkFamily(n); err != nil {
					return Type{}, err
				}
				return same2D(n, in)
			}},
		{Name: OpShieldStrip, Class: ClassBoundary, Cost: CostShield,
			Doc:       "drop the shield rows, keeping the first rows; with center, add the mean row's product back; with whiten, scale the rows back by alpha",
			MinInputs: 1, MaxInputs: 1, Attrs: []AttrSpec{{Name: "rows", Kind: AttrString},
				{Name: "center", Kind: AttrBool, Optional: true}, {Name: "per_row", Kind: AttrBool, Optional: true},
				{Name: "whiten", Kind: AttrBool, Optional: true}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("y", in[0], true, 2); err != nil {
					return Type{}, err
				}
				rows, err := DimAttr(n.Attrs, "rows")
				if err != nil {
					return Type{}, err
				}
				return Type{F32, Shape{rows, in[0].Shape[1]}}, nil
			}},
		{Name: OpToDevice, Class: ClassBoundary, Crossing: ToDevice,
			Doc:       "send a value to the device as is (mask none: the insecure baseline)",
			MinInputs: 1, MaxInputs: 1, Attrs: []AttrSpec{{Name: "quant", Kind: AttrString, Optional: true}},
			Infer: func(n *Node, in []Type) (Type, error) {
				t, err := same2D(n, in)
				if err != nil {
					return Type{}, err
				}
				return quantOut(n, t)
			}},
		{Name: OpToTEE, Class: ClassBoundary, Crossing: ToTEE,
			Doc:       "bring a device result back as is (mask none)",
			MinInputs: 1, MaxInputs: 1, Infer: same2D},
		{Name: OpMeanRows, Class: ClassBoundary,
			Doc:       "the mean of the rows (float64 sums in row order): what centring takes out",
			MinInputs: 1, MaxInputs: 1,
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("x", in[0], true, 2); err != nil {
					return Type{}, err
				}
				return Type{F32, Shape{D(1), in[0].Shape[1]}}, nil
			}},
		{Name: OpSubRow, Class: ClassBoundary,
			Doc: "x - m for every row", MinInputs: 2, MaxInputs: 2, Infer: rowOp},
		{Name: OpAddRow, Class: ClassBoundary,
			Doc: "x + m for every row", MinInputs: 2, MaxInputs: 2, Infer: rowOp},
		{Name: OpProbe, Class: ClassBoundary, Cost: CostProbe, ChecksDevice: true,
			Doc: "check a device product Y = U W^T with k secret probe vectors r of a pool: |Y r - U (W r)| within the rounding bound, else abort; Y passes through unchanged",
			// Operands: the device's result, the payload it was computed
			// from, the weight, and the pass counter that picks the probes.
			MinInputs: 4, MaxInputs: 4, Result: InPlace, Aliases: []int{0},
			Attrs: []AttrSpec{{Name: "k", Kind: AttrInt}, {Name: "pool", Kind: AttrInt}},
			Infer: func(n *Node, in []Type) (Type, error) {
				k, _ := n.Attrs.Int("k")
				pool, _ := n.Attrs.Int("pool")
				if k < 1 || pool < k || pool > MaxProbePool {
					return Type{}, fmt.Errorf("k %d, pool %d: want 1 <= k <= pool <= %d", k, pool, MaxProbePool)
				}
				if in[0].DType == U32 {
					return latticeProbeType(in)
				}
				if err := expect("y", in[0], true, 2); err != nil {
					return Type{}, err
				}
				u, w := in[1], in[2]
				if u.DType != F32 && u.DType != Q8_0 || u.Rank() != 2 {
					return Type{}, fmt.Errorf("payload must be f32 or q8_0 rows, got %v", u)
				}
				if w.Rank() != 2 {
					return Type{}, fmt.Errorf("weight must be a matrix, got %v", w)
				}
				if err := passCounter(in[3]); err != nil {
					return Type{}, err
				}
				if err := sameDim("payload rows", u.Shape[0], in[0].Shape[0]); err != nil {
					return Type{}, err
				}
				if err := sameDim("weight rows", w.Shape[0], in[0].Shape[1]); err != nil {
					return Type{}, err
				}
				if err := sameDim("weight columns", w.Shape[1], u.Shape[1]); err != nil {
					return Type{}, err
				}
				return Type{F32, in[0].Shape}, nil
			}},
		{Name: OpBiasAdd, Class: ClassElementwise,
			Doc:       "x + b per row: a projection's bias, added in the TEE after unmasking",
			MinInputs: 2, MaxInputs: 2,
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("x", in[0], true, 2); err != nil {
					return Type{}, err
				}
				if err := expect("b", in[1], true, 1); err != nil {
					return Type{}, err
				}
				if err := sameDim("b", in[1].Shape[0], in[0].Shape[1]); err != nil {
					return Type{}, err
				}
				return Type{F32, in[0].Shape}, nil
			}},
	} {
		Register(info)
	}
}

// latticeProbeType types a probe of an lwe product: u32 rows y of the
// ciphertext rows c (u32) times an int8 weight, checked modulo 2^32; y
// passes through.
func latticeProbeType(in []Type) (Type, error) {
	y, c, w := in[0], in[1], in[2]
	if y.Rank() != 2 || c.DType != U32 || c.Rank() != 2 || w.DType != I8 || w.Rank() != 2 {
		return Type{}, fmt.Errorf("a probe of u32 rows checks u32 ciphertext rows times an int8 weight, got %v, %v, %v", y, c, w)
	}
	if err := passCounter(in[3]); err != nil {
		return Type{}, err
	}
	if err := sameDim("payload rows", c.Shape[0], y.Shape[0]); err != nil {
		return Type{}, err
	}
	if err := sameDim("weight rows", w.Shape[0], y.Shape[1]); err != nil {
		return Type{}, err
	}
	if err := sameDim("weight columns", w.Shape[1], c.Shape[1]); err != nil {
		return Type{}, err
	}
	return y, nil
}

// rowOp types x [rows, d] op m [1, d].
func rowOp(n *Node, in []Type) (Type, error) {
	if err := expect("x", in[0], true, 2); err != nil {
		return Type{}, err
	}
	if err := expect("m", in[1], true, 2); err != nil {
		return Type{}, err
	}
	if in[1].Shape[0] != D(1) || in[1].Shape[1] != in[0].Shape[1] {
		return Type{}, fmt.Errorf("row %v does not fit rows %v", in[1], in[0])
	}
	return Type{F32, in[0].Shape}, nil
}

// ProtectionOps are the ops only a protected plan holds: the mask and its
// inverse, the shield rows, the centring of full-span crossings, the lwe
// level's encode and decode. A backend that runs only the mask-none
// baseline declines exactly these.
func ProtectionOps() []string {
	return []string{OpMask, OpUnmask, OpShieldStack, OpShieldStrip, OpMeanRows, OpSubRow, OpAddRow, OpLWEEncode, OpLWEDecode}
}
