// Package ir is gelo's dataflow IR: an SSA graph whose values carry a type
// (dtype and shape with symbolic dims), a placement (tee or device) and a
// secrecy (public or secret). It knows nothing of models, backends or crypto;
// those live in the packages that import it.
package ir

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// FormatVersion is the version of the text form written by Print. It is
// bumped whenever the printed syntax or an op's meaning changes.
const FormatVersion = 1

// DType is the element type of a value.
type DType uint8

const (
	InvalidDType DType = iota
	F32
	BF16
	F16
	I32
	// Q8_0 and Q4_0 are GGUF block formats: 32 values a block with an f16
	// scale (34 and 18 bytes a block). Weights of a quantized plan and the
	// activation rows sent to them (as q8_0) have these types.
	Q8_0
	Q4_0
	// Q4_K is GGUF's block_q4_K: 256 values a super-block (144 bytes),
	// multiplying the same q8_0 activation rows.
	Q4_K
	// I8 is a matrix of int8 values in [-127, 127] with one float32 scale
	// per row (W ~ diag(s_w) W_q, the W8A8 per-output-channel
	// convention): the integer matrix the lwe level multiplies modulo
	// 2^32. Its rows multiply f32 activation rows as they are.
	I8
	// U32 is a word of Z_2^32: an lwe ciphertext row (lwe_encode's
	// result) and the device's product of it (a linear op over an I8
	// weight). It is no number the model computes with: only
	// lwe_decode turns it back into f32.
	U32
)

// DTypeInfo is the one record of a dtype's storage facts; summaries,
// loaders and kernels read it instead of keeping their own sizes.
type DTypeInfo struct {
	Name string
	// Block is the number of elements a block holds (1 for element
	// types); BlockBytes the bytes one block takes.
	Block, BlockBytes int
	// RowBytes is what each row of a matrix of this dtype holds beyond
	// its blocks: I8's float32 per-row scale (RowScaleBytes); 0 for every
	// other dtype. A row of cols values takes cols/Block*BlockBytes +
	// RowBytes bytes (DType.MatrixBytes).
	RowBytes int
	// Quantized: a block format with a scale per block.
	Quantized bool
	// Float: elements are floating point values (not indices, not blocks).
	// I8 counts as one: a row's values are the floats s_w[j] * q, read
	// through the row's scale, so it is a weight operand as f32 and bf16
	// are (its integers alone are never a value).
	Float bool
}

// The GGUF block layouts' sizes, as constants so the wire format
// (device/wire) and the kernels take them from here: QuantBlock values a
// block, an f16 scale plus 32 int8 (q8_0) or 32 nibbles (q4_0).
const (
	QuantBlock     = 32
	BlockBytesQ8_0 = 2 + QuantBlock
	BlockBytesQ4_0 = 2 + QuantBlock/2
	// QuantBlockK and BlockBytesQ4_K: a K-quant super-block's values and
	// sizeof(block_q4_K) (f16 d, f16 dmin, 12 bytes of scales, 128 of
	// nibbles).
	QuantBlockK    = 256
	BlockBytesQ4_K = 4 + 12 + QuantBlockK/2
	// RowScaleBytes is I8's per-row scale: one little-endian float32
	// after the row's int8 values.
	RowScaleBytes = 4
)

var dtypeInfo = [...]DTypeInfo{
	InvalidDType: {Name: "invalid"},
	F32:          {Name: "f32", Block: 1, BlockBytes: 4, Float: true},
	BF16:         {Name: "bf16", Block: 1, BlockBytes: 2, Float: true},
	F16:          {Name: "f16", Block: 1, BlockBytes: 2, Float: true},
	I32:          {Name: "i32", Block: 1, BlockBytes: 4},
	Q8_0:         {Name: "q8_0", Block: QuantBlock, BlockBytes: BlockBytesQ8_0, Quantized: true},
	Q4_0:         {Name: "q4_0", Block: QuantBlock, BlockBytes: BlockBytesQ4_0, Quantized: true},
	Q4_K:         {Name: "q4_k", Block: QuantBlockK, BlockBytes: BlockBytesQ4_K, Quantized: true},
	I8:           {Name: "int8", Block: 1, BlockBytes: 1, RowBytes: RowScaleBytes, Float: true},
	U32:          {Name: "u32", Block: 1, BlockBytes: 4},
}

// Info returns d's record (the zero record for an unknown dtype).
func (d DType) Info() DTypeInfo {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d]
	}
	return DTypeInfo{}
}

// DTypes lists every valid dtype in order.
func DTypes() []DType {
	ds := make([]DType, 0, len(dtypeInfo)-1)
	for i := range dtypeInfo {
		if DType(i) != InvalidDType {
			ds = append(ds, DType(i))
		}
	}
	return ds
}

// IsQuantized reports whether d is a block-quantized format.
func (d DType) IsQuantized() bool { return d.Info().Quantized }

// Bytes returns the storage size of n elements of d (n a multiple of the
// block size for the block formats; 4 bytes an element for an unknown
// dtype). It counts elements only: a dtype with per-row bytes (I8's
// scale) needs the row count, so a matrix's size is MatrixBytes.
func (d DType) Bytes(n int) int {
	info := d.Info()
	if info.Block == 0 {
		return 4 * n
	}
	return n / info.Block * info.BlockBytes
}

// MatrixBytes returns the storage size of a rows x cols matrix of d: each
// row's elements (Bytes(cols)) plus its per-row bytes (RowBytes).
func (d DType) MatrixBytes(rows, cols int) int {
	return rows * (d.Bytes(cols) + d.Info().RowBytes)
}

func (d DType) String() string {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].Name
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// ParseDType maps a printed dtype name back to its DType.
func ParseDType(s string) (DType, error) {
	for i, info := range dtypeInfo {
		if i != int(InvalidDType) && info.Name == s {
			return DType(i), nil
		}
	}
	return InvalidDType, fmt.Errorf("unknown dtype %q", s)
}

// Dim is one dimension of a shape: a fixed size, or a symbol (Sym != "")
// such as n (prefill rows), B (decode batch) or T (cache length) that is
// bound when a plan is instantiated.
type Dim struct {
	Size int
	Sym  string
}

// D returns a fixed dimension.
func D(size int) Dim { return Dim{Size: size} }

// S returns a symbolic dimension.
func S(sym string) Dim { return Dim{Sym: sym} }

// IsSym reports whether d is symbolic.
func (d Dim) IsSym() bool { return d.Sym != "" }

func (d Dim) String() string {
	if d.Sym != "" {
		return d.Sym
	}
	return strconv.Itoa(d.Size)
}

// Bind resolves d against bindings of symbols to sizes.
func (d Dim) Bind(b map[string]int) (int, error) {
	if d.Sym == "" {
		return d.Size, nil
	}
	v, ok := b[d.Sym]
	if !ok {
		return 0, fmt.Errorf("symbolic dim %q is not bound", d.Sym)
	}
	return v, nil
}

// Shape is an ordered list of dims; a scalar has none.
type Shape []Dim

// Type is a value's dtype and shape, printed as f32[n,1024].
type Type struct {
	DType DType
	Shape Shape
}

// T builds a type from dims given as ints (fixed) or strings (symbolic).
func T(dt DType, dims ...any) Type {
	sh := make(Shape, len(dims))
	for i, d := range dims {
		switch v := d.(type) {
		case int:
			sh[i] = D(v)
		case string:
			sh[i] = S(v)
		case Dim:
			sh[i] = v
		default:
			panic(fmt.Sprintf("ir.T: dim %d has type %T", i, d))
		}
	}
	return Type{DType: dt, Shape: sh}
}

func (t Type) String() string {
	var b strings.Builder
	b.WriteString(t.DType.String())
	b.WriteByte('[')
	for i, d := range t.Shape {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.String())
	}
	b.WriteByte(']')
	return b.String()
}

// Equal reports whether two types are identical (dtype and every dim).
func (t Type) Equal(u Type) bool {
	if t.DType != u.DType || len(t.Shape) != len(u.Shape) {
		return false
	}
	for i := range t.Shape {
		if t.Shape[i] != u.Shape[i] {
			return false
		}
	}
	return true
}

// Rank is the number of dims.
func (t Type) Rank() int { return len(t.Shape) }

// Elems binds every dim and returns the element count.
func (t Type) Elems(b map[string]int) (int, error) {
	n := 1
	for _, d := range t.Shape {
		v, err := d.Bind(b)
		if err != nil {
			return 0, err
		}
		n *= v
	}
	return n, nil
}

// Placement says which side of the trust boundary executes a node.
type Placement uint8

const (
	Unplaced Placement = iota
	TEE
	Device
)

var placementNames = [...]string{Unplaced: "unplaced", TEE: "tee", Device: "device"}

func (p Placement) String() string {
	if int(p) < len(placementNames) {
		return placementNames[p]
	}
	return "placement(" + strconv.Itoa(int(p)) + ")"
}

// ParsePlacement maps a printed placement back.
func ParsePlacement(s string) (Placement, error) {
	for i, n := range placementNames {
		if n == s {
			return Placement(i), nil
		}
	}
	return Unplaced, fmt.Errorf("unknown placement %q", s)
}

// Secrecy is whether a value may be seen by the untrusted side as is.
type Secrecy uint8

const (
	Public Secrecy = iota
	Secret
)

func (s Secrecy) String() string {
	switch s {
	case Public:
		return "public"
	case Secret:
		return "secret"
	}
	return "secrecy(" + strconv.Itoa(int(s)) + ")"
}

// ParseSecrecy maps a printed secrecy back.
func ParseSecrecy(s string) (Secrecy, error) {
	switch s {
	case "public":
		return Public, nil
	case "secret":
		return Secret, nil
	}
	return Public, fmt.Errorf("unknown secrecy %q", s)
}

// ValueID names the value produced by a node; it is the node's index in
// Graph.Nodes, so SSA numbering is deterministic.
type ValueID int

func (v ValueID) String() string { return "%" + strconv.Itoa(int(v)) }

// Attr values are int64, float64, string, bool or []int64; nothing else
// is printed or parsed.
type Attrs map[string]any

// Keys returns the attribute names in sorted order, the printed order.
func (a Attrs) Keys() []string {
	ks := make([]string, 0, len(a))
	for k := range a {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Int returns an integer attribute.
func (a Attrs) Int(name string) (int64, bool) {
	v, ok := a[name].(int64)
	return v, ok
}

// Float returns a float attribute.
func (a Attrs) Float(name string) (float64, bool) {
	v, ok := a[name].(float64)
	return v, ok
}

// Str returns a string attribute.
func (a Attrs) Str(name string) (string, bool) {
	v, ok := a[name].(string)
	return v, ok
}

// Bool returns a boolean attribute.
func (a Attrs) Bool(name string) (bool, bool) {
	v, ok := a[name].(bool)
	return v, ok
}

// Node is one operation producing one value.
type Node struct {
	ID      ValueID
	Op      string
	Inputs  []ValueID
	Attrs   Attrs
	Type    Type
	Place   Placement
	Secrecy Secrecy
}

// Output is a named graph result (logits, an updated cache).
type Output struct {
	Name  string
	Value ValueID
}

// Graph is one traced phase, e.g. prefill(n) or decode(B). Params lists
// the symbolic dims the caller binds.
type Graph struct {
	Name    string
	Params  []string
	Nodes   []*Node
	Outputs []Output
}

// Node returns the node producing v, or nil when v is out of range.
func (g *Graph) Node(v ValueID) *Node {
	if g == nil || int(v) < 0 || int(v) >= len(g.Nodes) {
		return nil
	}
	return g.Nodes[v]
}

// Add appends a node, infers its type and secrecy from the op table and
// returns its value. Tracers and passes use it; it never panics on bad
// input but returns an error naming the op.
func (g *Graph) Add(op string, attrs Attrs, inputs ...ValueID) (ValueID, error) {
	n := &Node{ID: ValueID(len(g.Nodes)), Op: op, Inputs: inputs, Attrs: attrs}
	if n.Attrs == nil {
		n.Attrs = Attrs{}
	}
	t, err := InferType(g, n)
	if err != nil {
		return -1, fmt.Errorf("add %s: %w", op, err)
	}
	n.Type = t
	n.Secrecy = InferSecrecy(g, n)
	g.Nodes = append(g.Nodes, n)
	return n.ID, nil
}

// AddDeclared appends a source node (input or weight) whose type the
// producer declares.
func (g *Graph) AddDeclared(op string, attrs Attrs, t Type) (ValueID, error) {
	n := &Node{ID: ValueID(len(g.Nodes)), Op: op, Attrs: attrs, Type: t}
	if n.Attrs == nil {
		n.Attrs = Attrs{}
	}
	if _, err := InferType(g, n); err != nil {
		return -1, fmt.Errorf("add %s: %w", op, err)
	}
	n.Secrecy = InferSecrecy(g, n)
	g.Nodes = append(g.Nodes, n)
	return n.ID, nil
}

// Module is what a compile produces before lowering: metadata (model name,
// pass configuration) and one graph per phase.
type Module struct {
	Meta   map[string]string
	Graphs []*Graph
}

// Graph returns the graph with the given name, or nil.
func (m *Module) Graph(name string) *Graph {
	for _, g := range m.Graphs {
		if g.Name == name {
			return g
		}
	}
	return nil
}

// WeightName names a weight operand: its own name, or the stacked names
// joined by "|" for concat_weights (the name a device call and a
// recording's crossing carry).
func WeightName(g *Graph, v ValueID) (string, bool) {
	n := g.Node(v)
	switch {
	case n == nil:
		return "", false
	case n.Op == OpWeight:
		return n.Attrs.Str("name")
	case n.Op == OpConcatWeights:
		var names []string
		for _, in := range n.Inputs {
			name, ok := WeightName(g, in)
			if !ok {
				return "", false
			}
			names = append(names, name)
		}
		return strings.Join(names, "|"), true
	}
	return "", false
}

// Q4KRowsFit reports whether a matrix of rows cols wide can be held as
// Q4_K: whole super-blocks. Other matrices of a q4_k plan are q8_0, as
// llama.cpp's quantizer falls back for them.
func Q4KRowsFit(cols int) bool { return cols > 0 && cols%QuantBlockK == 0 }
