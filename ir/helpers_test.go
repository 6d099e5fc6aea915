package ir

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testAttrsOp has one optional attribute of every kind, so that printing
// and parsing can be tested on each.
const testAttrsOp = "test_attrs"

func init() {
	Register(&OpInfo{Name: testAttrsOp, Doc: "test only: elementwise identity with attributes of every kind",
		MinInputs: 1, MaxInputs: 1, Infer: elementwise,
		Attrs: []AttrSpec{
			{Name: "i", Kind: AttrInt, Optional: true},
			{Name: "i_min", Kind: AttrInt, Optional: true},
			{Name: "i_max", Kind: AttrInt, Optional: true},
			{Name: "f", Kind: AttrFloat, Optional: true},
			{Name: "f_int", Kind: AttrFloat, Optional: true},
			{Name: "f_big", Kind: AttrFloat, Optional: true},
			{Name: "f_tiny", Kind: AttrFloat, Optional: true},
			{Name: "f_neg0", Kind: AttrFloat, Optional: true},
			{Name: "f_nan", Kind: AttrFloat, Optional: true},
			{Name: "f_inf", Kind: AttrFloat, Optional: true},
			{Name: "s", Kind: AttrString, Optional: true},
			{Name: "b", Kind: AttrBool, Optional: true},
			{Name: "l", Kind: AttrInts, Optional: true},
			{Name: "l_empty", Kind: AttrInts, Optional: true},
			{Name: "odd key=", Kind: AttrBool, Optional: true},
		}})
}

// equalOpts compares modules with NaN equal to NaN (cmp uses ==).
var equalOpts = cmp.Options{cmpopts.EquateNaNs()}

// builder adds nodes and fails the test on the first error.
type builder struct {
	t   testing.TB
	g   *Graph
	ids map[string]ValueID
}

func newBuilder(t testing.TB, name string, params ...string) *builder {
	return &builder{t: t, g: &Graph{Name: name, Params: params}, ids: map[string]ValueID{}}
}

func (b *builder) in(name string, t Type) ValueID {
	b.t.Helper()
	v, err := b.g.AddDeclared("input", Attrs{"name": name}, t)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

func (b *builder) w(name string, dims ...any) ValueID {
	b.t.Helper()
	v, err := b.g.AddDeclared("weight", Attrs{"name": name}, T(F32, dims...))
	if err != nil {
		b.t.Fatal(err)
	}
	b.ids["w."+name] = v
	return v
}

func (b *builder) op(op string, attrs Attrs, in ...ValueID) ValueID {
	b.t.Helper()
	v, err := b.g.Add(op, attrs, in...)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

// label remembers v under a name for assertions.
func (b *builder) label(name string, v ValueID) ValueID {
	b.ids[name] = v
	return v
}

// blockGraph traces a miniature one-layer decoder (hidden 64, 4 query and
// 2 KV heads of 16, MLP width inter, vocab 128, tied embeddings) for phase
// "prefill" (params n, T) or "decode" (params B, T), and places it: the
// matmuls on the device, the rest in the TEE, the weights unplaced.
func blockGraph(t testing.TB, phase string, inter int) (*Graph, map[string]ValueID) {
	t.Helper()
	return decoderGraph(t, phase, inter, 1)
}

// decoderGraph is blockGraph with any number of layers; the labels name
// the last layer's nodes.
func decoderGraph(t testing.TB, phase string, inter, layers int) (*Graph, map[string]ValueID) {
	t.Helper()
	rows, seqs := "n", D(1)
	if phase == "decode" {
		rows, seqs = "B", S("B")
	}
	b := newBuilder(t, phase, rows, "T")
	tok := b.in("tokens", T(I32, rows))
	pos := b.in("pos", T(I32, rows))
	seq := b.in("seq", T(I32, rows))
	cache := Type{DType: F32, Shape: Shape{seqs, S("T"), D(32)}}
	emb := b.w("embed", 128, 64)
	x := b.op("embed", nil, tok, emb)
	var outputs []Output
	for l := range layers {
		p := ""
		if layers > 1 {
			p = fmt.Sprintf("l%d.", l)
		}
		kc := b.in(fmt.Sprintf("kv.%d.k", l), cache)
		vc := b.in(fmt.Sprintf("kv.%d.v", l), cache)
		h := b.op("rms_norm", Attrs{"eps": 1e-6}, x, b.w(p+"ln1", 64))
		q := b.op("matmul", nil, h, b.w(p+"q_proj", 64, 64))
		k := b.op("matmul", nil, h, b.w(p+"k_proj", 32, 64))
		v := b.op("matmul", nil, h, b.w(p+"v_proj", 32, 64))
		q = b.op("qk_norm", Attrs{"heads": int64(4), "head_dim": int64(16), "eps": 1e-6}, q, b.w(p+"q_norm", 16))
		k = b.op("qk_norm", Attrs{"heads": int64(2), "head_dim": int64(16), "eps": 1e-6}, k, b.w(p+"k_norm", 16))
		q = b.op("rope", Attrs{"heads": int64(4), "head_dim": int64(16), "theta": 10000.0}, q, pos)
		k = b.op("rope", Attrs{"heads": int64(2), "head_dim": int64(16), "theta": 10000.0}, k, pos)
		kc = b.label("k_cache", b.op("kv_append", nil, kc, k, seq, pos))
		vc = b.label("v_cache", b.op("kv_append", nil, vc, v, seq, pos))
		att := b.op("attention", Attrs{"heads": int64(4), "kv_heads": int64(2), "head_dim": int64(16), "scale": 0.25},
			q, kc, vc, seq, pos)
		x = b.op("add", nil, x, b.op("matmul", nil, att, b.w(p+"o_proj", 64, 64)))
		h = b.op("rms_norm", Attrs{"eps": 1e-6}, x, b.w(p+"ln2", 64))
		gate := b.label("gate", b.op("matmul", nil, h, b.w(p+"gate_proj", inter, 64)))
		up := b.label("up", b.op("matmul", nil, h, b.w(p+"up_proj", inter, 64)))
		act := b.label("mul", b.op("mul", nil, b.label("silu", b.op("silu", nil, gate)), up))
		x = b.label("residual", b.op("add", nil, x, b.label("down", b.op("matmul", nil, act, b.w(p+"down_proj", 64, inter)))))
		outputs = append(outputs, Output{Name: fmt.Sprintf("kv.%d.k", l), Value: kc}, Output{Name: fmt.Sprintf("kv.%d.v", l), Value: vc})
	}
	if phase == "prefill" {
		x = b.op("last_row", nil, x)
	}
	x = b.op("rms_norm", Attrs{"eps": 1e-6}, x, b.w("norm", 64))
	logits := b.label("logits", b.op("lm_head", nil, x, emb))
	b.g.Outputs = append([]Output{{Name: "logits", Value: logits}}, outputs...)

	for _, n := range b.g.Nodes {
		switch n.Op {
		case "weight":
		case "matmul", "lm_head":
			n.Place = Device
		default:
			n.Place = TEE
		}
	}
	return b.g, b.ids
}

// blockModule is both phases of the miniature decoder.
func blockModule(t testing.TB, inter int) *Module {
	t.Helper()
	pre, _ := blockGraph(t, "prefill", inter)
	dec, _ := blockGraph(t, "decode", inter)
	return &Module{
		Meta:   map[string]string{"model": "qwen3-tiny", "passes": "place"},
		Graphs: []*Graph{pre, dec},
	}
}

// attrsModule holds an attribute of every kind, awkward values and names
// that need quoting.
func attrsModule(t testing.TB) *Module {
	t.Helper()
	b := newBuilder(t, "odd graph", "n")
	x := b.in("x \"quoted\"\n", T(F16, "n", 3))
	y := b.op(testAttrsOp, Attrs{
		"i": int64(42), "i_min": int64(math.MinInt64), "i_max": int64(math.MaxInt64),
		"f": 0.1, "f_int": 10000.0, "f_big": 1e6, "f_tiny": 5e-324, "f_neg0": math.Copysign(0, -1),
		"f_nan": math.NaN(), "f_inf": math.Inf(-1),
		"s": "tab\there, é, \xff, \"q\"", "b": true,
		"l": []int64{1, -2, math.MaxInt64}, "l_empty": []int64{},
		"odd key=": false,
	}, x)
	z := b.op(testAttrsOp, Attrs{}, y)
	b.g.Outputs = []Output{{Name: "out put", Value: z}, {Name: "y", Value: y}}
	s := newBuilder(t, "scalarless")
	s.g.Outputs = nil
	return &Module{
		Meta:   map[string]string{"a key": "with\nnewline", "empty": ""},
		Graphs: []*Graph{b.g, s.g},
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ir -update to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got; go test ./ir -update rewrites it):\n%s", path, d)
	}
}
