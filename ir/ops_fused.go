package ir

import "fmt"

// Fused ops: what the fuse pass rewrites patterns into. Each computes what
// its unfused pattern computes, in the same arithmetic order where the
// gate tests demand bit-identity.
func init() {
	for _, info := range []*OpInfo{
		{Name: OpConcatWeights, Class: ClassStackedWeights, Result: Resident,
			Doc:       "public weights stacked along their first dim: one device matmul for Q|K|V or gate|up",
			MinInputs: 2, MaxInputs: 8,
			Infer: func(n *Node, in []Type) (Type, error) {
				var rows int
				for i, t := range in {
					if !(isFloat(t.DType) || t.DType.IsQuantized()) || t.DType != in[0].DType || (t.Rank() != 1 && t.Rank() != 2) || t.Rank() != in[0].Rank() {
						return Type{}, fmt.Errorf("operand %d: %v cannot be stacked with %v", i, t, in[0])
					}
					if t.Shape[0].IsSym() {
						return Type{}, fmt.Errorf("operand %d: symbolic first dim %v", i, t.Shape[0])
					}
					if t.Rank() == 2 && t.Shape[1] != in[0].Shape[1] {
						return Type{}, fmt.Errorf("operand %d: width %v differs from %v", i, t.Shape[1], in[0].Shape[1])
					}
					rows += t.Shape[0].Size
				}
				sh := Shape{D(rows)}
				if in[0].Rank() == 2 {
					sh = append(sh, in[0].Shape[1])
				}
				return Type{in[0].DType, sh}, nil
			}},
		{Name: OpSliceCols, Class: ClassFused,
			Doc: "columns [start, start+width) of every row", MinInputs: 1, MaxInputs: 1,
			Attrs: []AttrSpec{{Name: "start", Kind: AttrInt}, {Name: "width", Kind: AttrInt}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("x", in[0], true, 2); err != nil {
					return Type{}, err
				}
				start, width := attrInt(n, "start"), attrInt(n, "width")
				c := in[0].Shape[1]
				if c.IsSym() || start < 0 || width <= 0 || start+width > c.Size {
					return Type{}, fmt.Errorf("columns [%d, %d) outside %v", start, start+width, in[0])
				}
				return Type{F32, Shape{in[0].Shape[0], D(width)}}, nil
			}},
		{Name: OpSwiGLU, Class: ClassFused,
			Doc:       "silu(gate) * up: from one [rows, 2F] gate|up product, or from gate and up; with rows, straight from the unmasked stack (the shield strip folded in)",
			MinInputs: 1, MaxInputs: 2,
			Attrs: []AttrSpec{{Name: "rows", Kind: AttrString, Optional: true}, {Name: "per_row", Kind: AttrBool, Optional: true}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if len(in) == 2 {
					return elementwise(n, in)
				}
				if err := expect("gate|up", in[0], true, 2); err != nil {
					return Type{}, err
				}
				c := in[0].Shape[1]
				if c.IsSym() || c.Size%2 != 0 {
					return Type{}, fmt.Errorf("gate|up width %v is not even", c)
				}
				rows := in[0].Shape[0]
				if _, ok := n.Attrs["rows"]; ok {
					r, err := DimAttr(n.Attrs, "rows")
					if err != nil {
						return Type{}, err
					}
					rows = r
				}
				return Type{F32, Shape{rows, D(c.Size / 2)}}, nil
			}},
		{Name: OpAddRMSNorm, Class: ClassFused,
			Doc:       "(a + b, rms_norm(a + b) * w) in one pass: the residual and the next norm, as a pair",
			MinInputs: 3, MaxInputs: 3, Attrs: []AttrSpec{{Name: "eps", Kind: AttrFloat}},
			Infer: func(n *Node, in []Type) (Type, error) {
				t, err := elementwise(n, in[:2])
				if err != nil {
					return Type{}, err
				}
				if t.Rank() != 2 {
					return Type{}, fmt.Errorf("operands must be [rows, d], got %v", t)
				}
				if err := expect("w", in[2], true, 1); err != nil {
					return Type{}, err
				}
				if err := sameDim("w", in[2].Shape[0], t.Shape[1]); err != nil {
					return Type{}, err
				}
				return Type{F32, append(Shape{D(2)}, t.Shape...)}, nil
			}},
		{Name: OpTake, Class: ClassFused, Result: View, Aliases: []int{0},
			Doc: "element index of a pair-producing op (a view, no copy)", MinInputs: 1, MaxInputs: 1,
			Attrs: []AttrSpec{{Name: "index", Kind: AttrInt}},
			Infer: func(n *Node, in []Type) (Type, error) {
				t := in[0]
				i := attrInt(n, "index")
				if t.Rank() < 2 || t.Shape[0].IsSym() || i < 0 || i >= t.Shape[0].Size {
					return Type{}, fmt.Errorf("index %d outside %v", i, t)
				}
				return Type{t.DType, t.Shape[1:]}, nil
			}},
		{Name: OpNormRope, Class: ClassFused,
			Doc:       "per-head RMSNorm then RoPE (Qwen3 QK-norm + rotary) in one pass",
			MinInputs: 3, MaxInputs: 3,
			Attrs: []AttrSpec{{Name: "heads", Kind: AttrInt}, {Name: "head_dim", Kind: AttrInt},
				{Name: "eps", Kind: AttrFloat}, {Name: "theta", Kind: AttrFloat}},
			Infer: func(n *Node, in []Type) (Type, error) {
				return normRopeType(n, in[0], in[1], in[2])
			}},
		{Name: OpNormRopeAppend, Class: ClassFusedKVCache, Result: InPlace, Aliases: []int{0},
			Doc:       "per-head RMSNorm, RoPE and the KV-cache write of K in one pass; returns the cache",
			MinInputs: 5, MaxInputs: 5,
			Attrs: []AttrSpec{{Name: "heads", Kind: AttrInt}, {Name: "head_dim", Kind: AttrInt},
				{Name: "eps", Kind: AttrFloat}, {Name: "theta", Kind: AttrFloat}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if _, err := normRopeType(n, in[1], in[2], in[4]); err != nil {
					return Type{}, err
				}
				if err := expect("cache", in[0], true, 3); err != nil {
					return Type{}, err
				}
				if err := sameDim("x width", in[1].Shape[1], in[0].Shape[2]); err != nil {
					return Type{}, err
				}
				if err := expect("seq", in[3], false, 1); err != nil {
					return Type{}, err
				}
				return in[0], nil
			}},
		{Name: OpNormRopeAppendKV, Class: ClassFusedKVCache, Result: InPlace, Aliases: []int{0, 1},
			Doc:       "norm_rope_append of K and the append of V in one pass; returns the (K cache, V cache) pair",
			MinInputs: 7, MaxInputs: 7,
			Attrs: []AttrSpec{{Name: "heads", Kind: AttrInt}, {Name: "head_dim", Kind: AttrInt},
				{Name: "eps", Kind: AttrFloat}, {Name: "theta", Kind: AttrFloat}},
			// Operands: k cache, v cache, k rows, v rows, k-norm weight, seq, pos.
			Infer: func(n *Node, in []Type) (Type, error) {
				if _, err := normRopeType(n, in[2], in[4], in[6]); err != nil {
					return Type{}, err
				}
				for i, what := range []string{"k cache", "v cache"} {
					if err := expect(what, in[i], true, 3); err != nil {
						return Type{}, err
					}
				}
				if !in[0].Equal(in[1]) {
					return Type{}, fmt.Errorf("k cache %v and v cache %v differ", in[0], in[1])
				}
				for i, what := range []string{"k width", "v width"} {
					if err := sameDim(what, in[2+i].Shape[1], in[0].Shape[2]); err != nil {
						return Type{}, err
					}
				}
				if err := sameDim("v rows", in[3].Shape[0], in[2].Shape[0]); err != nil {
					return Type{}, err
				}
				if err := expect("seq", in[5], false, 1); err != nil {
					return Type{}, err
				}
				return Type{in[0].DType, append(Shape{D(2)}, in[0].Shape...)}, nil
			}},
	} {
		Register(info)
	}
}

func normRopeType(n *Node, x, w, pos Type) (Type, error) {
	if err := expect("x", x, true, 2); err != nil {
		return Type{}, err
	}
	if err := headsWidth(n, x, "heads"); err != nil {
		return Type{}, err
	}
	if err := expect("w", w, true, 1); err != nil {
		return Type{}, err
	}
	if err := sameDim("w", w.Shape[0], D(attrInt(n, "head_dim"))); err != nil {
		return Type{}, err
	}
	if err := expect("pos", pos, false, 1); err != nil {
		return Type{}, err
	}
	if err := sameDim("pos", pos.Shape[0], x.Shape[0]); err != nil {
		return Type{}, err
	}
	return Type{F32, x.Shape}, nil
}
