package ir

import (
	"fmt"
	"sort"
	"strconv"
)

// AttrKind is the type an attribute must have.
type AttrKind uint8

const (
	AttrInt AttrKind = iota
	AttrFloat
	AttrString
	AttrBool
	AttrInts
)

var attrKindNames = [...]string{AttrInt: "int", AttrFloat: "float", AttrString: "string", AttrBool: "bool", AttrInts: "ints"}

func (k AttrKind) String() string {
	if int(k) < len(attrKindNames) {
		return attrKindNames[k]
	}
	return "attrkind(" + strconv.Itoa(int(k)) + ")"
}

// AttrSpec declares one attribute of an op.
type AttrSpec struct {
	Name     string
	Kind     AttrKind
	Optional bool
}

// SecrecyRule says how an op's output secrecy is derived.
type SecrecyRule uint8

const (
	// Propagate: secret if any input is secret.
	Propagate SecrecyRule = iota
	// AlwaysPublic: public weights and constants.
	AlwaysPublic
	// AlwaysSecret: graph inputs (prompt ids, positions, cache state).
	AlwaysSecret
	// Declassify: the output may cross to the device (a mask).
	Declassify
)

// Op names: every op the IR can hold. Passes and backends name ops through
// these, never through string literals, so a rename or a typo is a compile
// error.
const (
	OpInput            = "input"
	OpWeight           = "weight"
	OpEmbed            = "embed"
	OpRMSNorm          = "rms_norm"
	OpMatMul           = "matmul"
	OpLMHead           = "lm_head"
	OpQKNorm           = "qk_norm"
	OpRope             = "rope"
	OpKVAppend         = "kv_append"
	OpAttention        = "attention"
	OpSiLU             = "silu"
	OpMul              = "mul"
	OpAdd              = "add"
	OpLastRow          = "last_row"
	OpConcatWeights    = "concat_weights"
	OpSliceCols        = "slice_cols"
	OpSwiGLU           = "swiglu"
	OpAddRMSNorm       = "add_rms_norm"
	OpTake             = "take"
	OpNormRope         = "norm_rope"
	OpNormRopeAppend   = "norm_rope_append"
	OpNormRopeAppendKV = "norm_rope_append_kv"
	OpShieldStack      = "shield_stack"
	OpMask             = "mask"
	OpUnmask           = "unmask"
	OpShieldStrip      = "shield_strip"
	OpToDevice         = "to_device"
	OpToTEE            = "to_tee"
	OpMeanRows         = "mean_rows"
	OpSubRow           = "sub_row"
	OpAddRow           = "add_row"
	OpBiasAdd          = "bias_add"
	OpProbe            = "probe"
	OpLWEEncode        = "lwe_encode"
	OpLWEDecode        = "lwe_decode"
)

// Result says what an op's result is, so the memory planner and the
// backends agree on which values own storage.
type Result uint8

const (
	// Fresh: a new value in storage of its own.
	Fresh Result = iota
	// InPlace: the op updates the storage of its Aliases operands and its
	// result is that storage (a KV-cache write returns the cache; with two
	// aliases the result is the pair).
	InPlace
	// View: the result is part of operand Aliases[0], no copy. A view into
	// an in-place pair ("index" i) is the storage of the pair's i-th alias.
	View
	// Resident: public storage prepared once (weights, stacked weights),
	// outside every arena.
	Resident
)

var resultNames = [...]string{Fresh: "fresh", InPlace: "in place", View: "view", Resident: "resident"}

func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return "result(" + strconv.Itoa(int(r)) + ")"
}

// Class is what kind of computation an op is. The placement policy,
// leakcheck and the fusion and quantize rules read it instead of lists of
// op names. The zero value is no class: the placement table then has no
// entry for the op, so a new op cannot land on either side by default.
type Class uint8

const (
	ClassNone Class = iota
	// ClassInput: a secret graph input.
	ClassInput
	// ClassWeight: a public named weight.
	ClassWeight
	// ClassStackedWeights: public weights stacked once into one resident
	// matrix.
	ClassStackedWeights
	// ClassLinear: x W^T over public weights, the work worth offloading.
	ClassLinear
	// ClassGather: rows of a table picked by secret indices.
	ClassGather
	// ClassKVCache: reads or writes the secret KV cache.
	ClassKVCache
	// ClassElementwise: a cheap elementwise or per-row op on secret
	// activations.
	ClassElementwise
	// ClassFused: a fused TEE kernel on secret activations.
	ClassFused
	// ClassFusedKVCache: a fused TEE kernel that writes the KV cache.
	ClassFusedKVCache
	// ClassBoundary: inserted by protect where a value crosses; runs in
	// the TEE on its side of the crossing.
	ClassBoundary
)

var classNames = [...]string{ClassNone: "none", ClassInput: "input", ClassWeight: "weight",
	ClassStackedWeights: "stacked weights", ClassLinear: "linear", ClassGather: "gather",
	ClassKVCache: "kv cache", ClassElementwise: "elementwise", ClassFused: "fused",
	ClassFusedKVCache: "fused kv cache", ClassBoundary: "boundary"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Cost is the cost class an op's time is reported under when profiling
// (a device-placed op is reported as device time whatever its cost class).
type Cost uint8

const (
	CostOther     Cost = iota // norms, RoPE, residuals, embedding ...
	CostMask                  // mask apply and unapply
	CostShield                // shield fill and strip
	CostAttention             // attention and the KV append
	CostProbe                 // integrity probes of device results
	CostLattice               // lwe encode and decode (with the pads they draw)
)

// Crossing says whether an op moves a value across the trust boundary.
type Crossing uint8

const (
	NoCrossing Crossing = iota
	// ToDevice: the result is what the device receives (mask, to_device).
	ToDevice
	// ToTEE: the op reads a device result back into the TEE (unmask,
	// to_tee); only such ops may read device values in the TEE (besides
	// the probes that check them, OpInfo.ChecksDevice).
	ToTEE
)

// OpInfo is one row of the op table: operands, attributes, type rule,
// secrecy rule, and every other fact a pass or backend needs about the op
// (what its result is, what kind of computation it is). Every op the IR
// can hold is declared here, so the validator, printer, parser, passes and
// backends share one source of truth.
type OpInfo struct {
	Name string
	Doc  string
	// MinInputs and MaxInputs bound the operand count.
	MinInputs, MaxInputs int
	Attrs                []AttrSpec
	// Declared: the output type is written by the producer (inputs and
	// weights) rather than inferred.
	Declared bool
	Secrecy  SecrecyRule
	// Infer computes the output type from the operand types and attributes.
	Infer func(n *Node, in []Type) (Type, error)

	// Result is what the result is; Aliases the operands an InPlace or
	// View result shares storage with.
	Result  Result
	Aliases []int
	Class   Class
	Cost    Cost
	// Crossing says whether the op moves a value across the boundary.
	Crossing Crossing
	// ChecksDevice marks an op that reads device results in the TEE only
	// to check them (the integrity probe): its result is still the
	// device's value, which only a ToTEE op may bring into the TEE.
	ChecksDevice bool
}

var opTable = map[string]*OpInfo{}

// Register adds an op to the table. Later stages (protection, fusion) add
// their ops through it at init time; a duplicate name is a programming
// error and panics at init.
func Register(info *OpInfo) {
	if _, dup := opTable[info.Name]; dup {
		panic("ir: op registered twice: " + info.Name)
	}
	aliasing := info.Result == InPlace || info.Result == View
	if aliasing != (len(info.Aliases) > 0) {
		panic("ir: op " + info.Name + ": an in-place or view result names its aliased operands, no other does")
	}
	for _, a := range info.Aliases {
		if a < 0 || a >= info.MinInputs {
			panic("ir: op " + info.Name + ": aliased operand " + strconv.Itoa(a) + " is not always present")
		}
	}
	opTable[info.Name] = info
}

// Op returns the table row for name, or nil for an unknown op.
func Op(name string) *OpInfo { return opTable[name] }

// ClassOf is op's class (ClassNone for an unknown op).
func ClassOf(op string) Class {
	if info := Op(op); info != nil {
		return info.Class
	}
	return ClassNone
}

// ResultOf is what op's result is (Fresh for an unknown op).
func ResultOf(op string) Result {
	if info := Op(op); info != nil {
		return info.Result
	}
	return Fresh
}

// WritesCache reports whether op updates a KV cache in place (its result
// is the cache, [S, T, kv], or a pair of them): the ops whose shape tells
// a backend the cache capacity T. A probe is in place too, but is no cache.
func WritesCache(op string) bool {
	c := ClassOf(op)
	return ResultOf(op) == InPlace && (c == ClassKVCache || c == ClassFusedKVCache)
}

// AttrBF16Dot marks a linear op on bf16 weights that multiplies by the
// bf16 dot product (its input rounded to bf16, f32 accumulation: the
// "bf16dot" weight format) instead of widening the weights exactly.
const AttrBF16Dot = "bf16_dot"

// linearAttrs are the optional attributes of the linear ops.
var linearAttrs = []AttrSpec{{Name: AttrBF16Dot, Kind: AttrBool, Optional: true}}

// IsLinear reports whether op is a linear layer over public weights (x W^T,
// operand 1 the weight, an optional operand 2 the bias).
func IsLinear(op string) bool { return ClassOf(op) == ClassLinear }

// Storage follows in-place results (KV-cache writes) and views into
// in-place pairs back to the value whose storage they are; any other
// value is its own storage.
func Storage(g *Graph, v ValueID) ValueID {
	for {
		n := g.Nodes[v]
		info := Op(n.Op)
		switch {
		case info == nil:
			return v
		case info.Result == InPlace && len(info.Aliases) == 1:
			v = n.Inputs[info.Aliases[0]]
		case info.Result == View:
			parent := g.Nodes[n.Inputs[info.Aliases[0]]]
			pi := Op(parent.Op)
			idx, _ := n.Attrs.Int("index")
			if pi == nil || pi.Result != InPlace || idx < 0 || int(idx) >= len(pi.Aliases) || len(pi.Aliases) < 2 {
				return v // a view into a fresh value: a part of it
			}
			v = parent.Inputs[pi.Aliases[idx]]
		default:
			return v
		}
	}
}

// Ops returns every registered op name, sorted.
func Ops() []string {
	ns := make([]string, 0, len(opTable))
	for n := range opTable {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// InferType checks n's operands and attributes against the op table and
// returns the output type. For declared ops it returns n.Type unchanged.
func InferType(g *Graph, n *Node) (Type, error) {
	info := Op(n.Op)
	if info == nil {
		return Type{}, fmt.Errorf("unknown op %q", n.Op)
	}
	if len(n.Inputs) < info.MinInputs || len(n.Inputs) > info.MaxInputs {
		if info.MinInputs == info.MaxInputs {
			return Type{}, fmt.Errorf("%s takes %d operands, got %d", n.Op, info.MinInputs, len(n.Inputs))
		}
		return Type{}, fmt.Errorf("%s takes %d to %d operands, got %d", n.Op, info.MinInputs, info.MaxInputs, len(n.Inputs))
	}
	if err := checkAttrs(info, n.Attrs); err != nil {
		return Type{}, fmt.Errorf("%s: %w", n.Op, err)
	}
	in := make([]Type, len(n.Inputs))
	for i, v := range n.Inputs {
		if v >= n.ID {
			return Type{}, fmt.Errorf("%s operand %d (%v) is not defined before its use", n.Op, i, v)
		}
		src := g.Node(v)
		if src == nil {
			return Type{}, fmt.Errorf("%s operand %d (%v) is undefined", n.Op, i, v)
		}
		in[i] = src.Type
	}
	if info.Declared {
		if n.Type.DType == InvalidDType {
			return Type{}, fmt.Errorf("%s needs a declared type", n.Op)
		}
		return n.Type, nil
	}
	if info.Infer == nil {
		return Type{}, fmt.Errorf("%s has no type rule", n.Op)
	}
	t, err := info.Infer(n, in)
	if err != nil {
		return Type{}, fmt.Errorf("%s: %w", n.Op, err)
	}
	return t, nil
}

// InferSecrecy derives n's secrecy from its op's rule and its operands.
func InferSecrecy(g *Graph, n *Node) Secrecy {
	info := Op(n.Op)
	if info == nil {
		return Secret
	}
	switch info.Secrecy {
	case AlwaysPublic, Declassify:
		return Public
	case AlwaysSecret:
		return Secret
	}
	for _, v := range n.Inputs {
		if src := g.Node(v); src != nil && src.Secrecy == Secret {
			return Secret
		}
	}
	return Public
}

func checkAttrs(info *OpInfo, a Attrs) error {
	known := map[string]bool{}
	for _, s := range info.Attrs {
		known[s.Name] = true
		v, ok := a[s.Name]
		if !ok {
			if s.Optional {
				continue
			}
			return fmt.Errorf("missing attribute %q (%s)", s.Name, s.Kind)
		}
		var good bool
		switch s.Kind {
		case AttrInt:
			_, good = v.(int64)
		case AttrFloat:
			_, good = v.(float64)
		case AttrString:
			_, good = v.(string)
		case AttrBool:
			_, good = v.(bool)
		case AttrInts:
			_, good = v.([]int64)
		}
		if !good {
			return fmt.Errorf("attribute %q must be %s, got %T", s.Name, s.Kind, v)
		}
	}
	for _, k := range a.Keys() {
		if !known[k] {
			return fmt.Errorf("unknown attribute %q", k)
		}
	}
	return nil
}

func isFloat(d DType) bool { return d.Info().Float }

// expect checks a type's dtype class and rank.
func expect(what string, t Type, float bool, rank int) error {
	if float && !isFloat(t.DType) {
		return fmt.Errorf("%s must be floating point, got %v", what, t)
	}
	if !float && t.DType != I32 {
		return fmt.Errorf("%s must be i32, got %v", what, t)
	}
	if t.Rank() != rank {
		return fmt.Errorf("%s must have rank %d, got %v", what, rank, t)
	}
	return nil
}

func sameDim(what string, a, b Dim) error {
	if a != b {
		return fmt.Errorf("%s: dim %v does not match %v", what, a, b)
	}
	return nil
}

func attrInt(n *Node, name string) int {
	v, _ := n.Attrs.Int(name)
	return int(v)
}

// headsWidth checks that x's last dim equals heads*head_dim.
func headsWidth(n *Node, x Type, headsAttr string) error {
	h, hd := attrInt(n, headsAttr), attrInt(n, "head_dim")
	if h <= 0 || hd <= 0 {
		return fmt.Errorf("%s and head_dim must be positive, got %d and %d", headsAttr, h, hd)
	}
	last := x.Shape[x.Rank()-1]
	if last.IsSym() || last.Size != h*hd {
		return fmt.Errorf("width %v is not %s*head_dim = %d", last, headsAttr, h*hd)
	}
	return nil
}

func init() {
	rows := func(t Type) Dim { return t.Shape[0] }
	for _, info := range []*OpInfo{
		{Name: OpInput, Class: ClassInput,
			Doc:   "a secret graph input (token ids, positions, cache state)",
			Attrs: []AttrSpec{{Name: "name", Kind: AttrString}}, Declared: true, Secrecy: AlwaysSecret},
		{Name: OpWeight, Class: ClassWeight, Result: Resident,
			Doc:   "a public named weight tensor",
			Attrs: []AttrSpec{{Name: "name", Kind: AttrString}}, Declared: true, Secrecy: AlwaysPublic},
		{Name: OpEmbed, Class: ClassGather,
			Doc: "gather rows of a table by secret ids (a bf16 or block table's rows expanded to f32)", MinInputs: 2, MaxInputs: 2,
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("ids", in[0], false, 1); err != nil {
					return Type{}, err
				}
				if in[1].DType.IsQuantized() {
					// A tied table the LM head holds in blocks: gathered
					// from those blocks, not from a second f32 copy.
					if in[1].Rank() != 2 {
						return Type{}, fmt.Errorf("table must have rank 2, got %v", in[1])
					}
				} else if err := expect("table", in[1], true, 2); err != nil {
					return Type{}, err
				}
				return Type{F32, Shape{rows(in[0]), in[1].Shape[1]}}, nil
			}},
		{Name: OpRMSNorm, Class: ClassElementwise,
			Doc: "x / rms(x) * w over the last dim", MinInputs: 2, MaxInputs: 2,
			Attrs: []AttrSpec{{Name: "eps", Kind: AttrFloat}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("x", in[0], true, 2); err != nil {
					return Type{}, err
				}
				if err := expect("w", in[1], true, 1); err != nil {
					return Type{}, err
				}
				if err := sameDim("w", in[1].Shape[0], in[0].Shape[1]); err != nil {
					return Type{}, err
				}
				return Type{F32, in[0].Shape}, nil
			}},
		{Name: OpMatMul, Class: ClassLinear,
			Doc: "x W^T (+ b): a linear layer with W laid out [out, in]", MinInputs: 2, MaxInputs: 3,
			Attrs: linearAttrs, Infer: linearType},
		{Name: OpLMHead, Class: ClassLinear,
			Doc: "x W^T over the vocabulary: the logits", MinInputs: 2, MaxInputs: 2,
			Attrs: linearAttrs, Infer: linearType},
		{Name: OpQKNorm, Class: ClassElementwise,
			Doc: "per-head RMSNorm of Q or K", MinInputs: 2, MaxInputs: 2,
			Attrs: []AttrSpec{{Name: "heads", Kind: AttrInt}, {Name: "head_dim", Kind: AttrInt}, {Name: "eps", Kind: AttrFloat}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("x", in[0], true, 2); err != nil {
					return Type{}, err
				}
				if err := headsWidth(n, in[0], "heads"); err != nil {
					return Type{}, err
				}
				if err := expect("w", in[1], true, 1); err != nil {
					return Type{}, err
				}
				if err := sameDim("w", in[1].Shape[0], D(attrInt(n, "head_dim"))); err != nil {
					return Type{}, err
				}
				return Type{F32, in[0].Shape}, nil
			}},
		{Name: OpRope, Class: ClassElementwise,
			Doc: "rotary position embedding, HF rotate_half convention", MinInputs: 2, MaxInputs: 2,
			Attrs: []AttrSpec{{Name: "heads", Kind: AttrInt}, {Name: "head_dim", Kind: AttrInt}, {Name: "theta", Kind: AttrFloat}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("x", in[0], true, 2); err != nil {
					return Type{}, err
				}
				if err := headsWidth(n, in[0], "heads"); err != nil {
					return Type{}, err
				}
				if err := expect("pos", in[1], false, 1); err != nil {
					return Type{}, err
				}
				if err := sameDim("pos", in[1].Shape[0], rows(in[0])); err != nil {
					return Type{}, err
				}
				return Type{F32, in[0].Shape}, nil
			}},
		{Name: OpKVAppend, Class: ClassKVCache, Result: InPlace, Aliases: []int{0}, Cost: CostAttention,
			Doc:       "write rows of K or V into the cache at (seq, pos); returns the cache",
			MinInputs: 4, MaxInputs: 4,
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("cache", in[0], true, 3); err != nil {
					return Type{}, err
				}
				if err := expect("x", in[1], true, 2); err != nil {
					return Type{}, err
				}
				if err := sameDim("x width", in[1].Shape[1], in[0].Shape[2]); err != nil {
					return Type{}, err
				}
				for i, what := range []string{"seq", "pos"} {
					if err := expect(what, in[2+i], false, 1); err != nil {
						return Type{}, err
					}
					if err := sameDim(what, in[2+i].Shape[0], rows(in[1])); err != nil {
						return Type{}, err
					}
				}
				return in[0], nil
			}},
		{Name: OpAttention, Class: ClassKVCache, Cost: CostAttention,
			Doc:       "causal GQA of each row against its sequence's cache up to its position",
			MinInputs: 5, MaxInputs: 5,
			Attrs: []AttrSpec{{Name: "heads", Kind: AttrInt}, {Name: "kv_heads", Kind: AttrInt},
				{Name: "head_dim", Kind: AttrInt}, {Name: "scale", Kind: AttrFloat}},
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("q", in[0], true, 2); err != nil {
					return Type{}, err
				}
				if err := headsWidth(n, in[0], "heads"); err != nil {
					return Type{}, err
				}
				h, kvh := attrInt(n, "heads"), attrInt(n, "kv_heads")
				if kvh <= 0 || h%kvh != 0 {
					return Type{}, fmt.Errorf("heads %d is not a multiple of kv_heads %d", h, kvh)
				}
				for i, what := range []string{"k cache", "v cache"} {
					c := in[1+i]
					if err := expect(what, c, true, 3); err != nil {
						return Type{}, err
					}
					if err := headsWidth(n, c, "kv_heads"); err != nil {
						return Type{}, fmt.Errorf("%s: %w", what, err)
					}
				}
				if !in[1].Equal(in[2]) {
					return Type{}, fmt.Errorf("k cache %v and v cache %v differ", in[1], in[2])
				}
				for i, what := range []string{"seq", "pos"} {
					if err := expect(what, in[3+i], false, 1); err != nil {
						return Type{}, err
					}
					if err := sameDim(what, in[3+i].Shape[0], rows(in[0])); err != nil {
						return Type{}, err
					}
				}
				return Type{F32, in[0].Shape}, nil
			}},
		{Name: OpSiLU, Class: ClassElementwise,
			Doc: "x * sigmoid(x)", MinInputs: 1, MaxInputs: 1, Infer: elementwise},
		{Name: OpMul, Class: ClassElementwise,
			Doc: "elementwise product", MinInputs: 2, MaxInputs: 2, Infer: elementwise},
		{Name: OpAdd, Class: ClassElementwise,
			Doc: "elementwise sum (residual)", MinInputs: 2, MaxInputs: 2, Infer: elementwise},
		{Name: OpLastRow, Class: ClassElementwise,
			Doc: "the last row of a prefill: only it feeds the LM head", MinInputs: 1, MaxInputs: 1,
			Infer: func(n *Node, in []Type) (Type, error) {
				if err := expect("x", in[0], true, 2); err != nil {
					return Type{}, err
				}
				return Type{in[0].DType, Shape{D(1), in[0].Shape[1]}}, nil
			}},
	} {
		Register(info)
	}
}

func linearType(n *Node, in []Type) (Type, error) {
	x, w := in[0], in[1]
	if x.DType == U32 {
		return latticeLinearType(n, in)
	}
	if w.DType.IsQuantized() {
		// A quantized weight multiplies q8_0 activation rows (or f32 rows
		// the device quantizes itself); both as blocks of 32.
		w.DType = F32
		if x.DType == Q8_0 {
			x.DType = F32
		}
		if last, blk := in[1].Shape[in[1].Rank()-1], in[1].DType.Info().Block; last.IsSym() || last.Size%blk != 0 {
			return Type{}, fmt.Errorf("quantized weight %v: in-features must be a multiple of %d", in[1], blk)
		}
	}
	if err := expect("x", x, true, 2); err != nil {
		return Type{}, err
	}
	if err := expect("w", w, true, 2); err != nil {
		return Type{}, err
	}
	if err := sameDim("w in-features", in[1].Shape[1], in[0].Shape[1]); err != nil {
		return Type{}, err
	}
	if len(in) == 3 {
		if err := expect("bias", in[2], true, 1); err != nil {
			return Type{}, err
		}
		if err := sameDim("bias", in[2].Shape[0], in[1].Shape[0]); err != nil {
			return Type{}, err
		}
	}
	return Type{F32, Shape{in[0].Shape[0], in[1].Shape[0]}}, nil
}

// latticeLinearType types the lwe level's device product: ciphertext rows
// (u32) times an int8 weight, modulo 2^32, giving u32 words. It takes no
// bias (a bias cannot be added to a ciphertext; protect adds it after
// lwe_decode).
func latticeLinearType(n *Node, in []Type) (Type, error) {
	x, w := in[0], in[1]
	if w.DType != I8 {
		return Type{}, fmt.Errorf("u32 ciphertext rows multiply an int8 weight, got %v", w)
	}
	if len(in) == 3 {
		return Type{}, fmt.Errorf("a product of ciphertext rows takes no bias")
	}
	if x.Rank() != 2 || w.Rank() != 2 {
		return Type{}, fmt.Errorf("ciphertext rows %v and weight %v must be matrices", x, w)
	}
	if err := sameDim("w in-features", w.Shape[1], x.Shape[1]); err != nil {
		return Type{}, err
	}
	return Type{U32, Shape{x.Shape[0], w.Shape[0]}}, nil
}

func elementwise(n *Node, in []Type) (Type, error) {
	for i, t := range in {
		if !isFloat(t.DType) {
			return Type{}, fmt.Errorf("operand %d must be floating point, got %v", i, t)
		}
		if i > 0 && !(Type{F32, t.Shape}).Equal(Type{F32, in[0].Shape}) {
			return Type{}, fmt.Errorf("operand %d shape %v does not match %v", i, t, in[0])
		}
	}
	return Type{F32, in[0].Shape}, nil
}
