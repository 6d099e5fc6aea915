package ir

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidateGood(t *testing.T) {
	for _, m := range []*Module{blockModule(t, 128), attrsModule(t)} {
		if err := ValidateModule(m); err != nil {
			t.Errorf("valid module: %v", err)
		}
	}
}

// TestValidateReportsAll breaks a graph in many ways at once and expects
// one message for each.
func TestValidateReportsAll(t *testing.T) {
	g, ids := blockGraph(t, "prefill", 128)
	n := func(v ValueID) *Node { return g.Nodes[v] }
	n(ids["gate"]).Type = T(F32, "n", 99)               // wrong type
	n(ids["silu"]).Secrecy = Public                     // wrong secrecy
	n(ids["w.norm"]).Type = T(F32, "m")                 // undeclared symbol
	n(ids["mul"]).Inputs = []ValueID{ids["silu"], 1000} // dangling operand
	n(ids["w.up_proj"]).Attrs["extra"] = int64(1)       // attribute the op lacks
	n(ids["w.ln2"]).Attrs["junk"] = 3                   // Go int: not an attribute kind
	n(ids["up"]).Place = Placement(7)                   // unknown placement
	n(ids["w.q_norm"]).Op = "matmull"                   // unknown op
	n(ids["down"]).Inputs[0] = ids["residual"]          // a cycle: down -> residual -> down
	g.Nodes[ids["w.k_norm"]].ID = 3                     // ID is not its index
	g.Outputs = append(g.Outputs, Output{Name: "logits", Value: 77}, Output{Value: 0})
	g.Params = append(g.Params, "T", "not ident")

	err := Validate(g)
	if err == nil {
		t.Fatal("Validate accepted a broken graph")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		"graph prefill: param T is listed twice",
		`graph prefill: param "not ident" is not an identifier`,
		`graph prefill: %15 = matmull: unknown op "matmull"`,
		"graph prefill: %3 = weight: ID %3 does not match its index 17",
		`graph prefill: %27 = weight: attribute junk has unsupported type int`,
		`graph prefill: %27 = weight: weight: unknown attribute "junk"`,
		`graph prefill: %31 = weight: weight: unknown attribute "extra"`,
		"graph prefill: %32 = matmul: unknown placement placement(7)",
		"graph prefill: %30 = matmul: type f32[n,99] differs from inferred f32[n,128]",
		"graph prefill: %33 = silu: secrecy public differs from derived secret",
		"graph prefill: %34 = mul: operand 1 (%1000) does not exist",
		"graph prefill: %36 = matmul: operand 0 (%37) is not defined before use",
		"graph prefill: %39 = weight: type f32[m]: symbolic dim m is not a graph param",
		"graph prefill: output logits=%77: name is used twice",
		"graph prefill: output logits=%77: value %77 does not exist",
		`graph prefill: output ""=%0: output has no name`,
		"graph prefill: cycle through %36 = matmul, %37 = add",
	}
	slices.Sort(got)
	slices.Sort(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("violations differ (-want +got):\n%s", d)
	}
}

func TestValidateModule(t *testing.T) {
	m := blockModule(t, 128)
	m.Graphs[1].Name = "prefill"
	m.Graphs = append(m.Graphs, nil)
	m.Meta[""] = "x"
	err := ValidateModule(m)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"module: graph prefill at index 1 has the same name as graph 0",
		"graph is nil",
		"module: meta key is empty",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if ValidateModule(nil) == nil || Validate(nil) == nil {
		t.Error("nil accepted")
	}
}

// TestValidateNeverPanics feeds the validator nodes broken in every field.
func TestValidateNeverPanics(t *testing.T) {
	g := &Graph{Name: "x", Nodes: []*Node{
		nil,
		{ID: 1, Op: "add", Inputs: []ValueID{0, -4}},
		{ID: 2, Op: "embed", Inputs: []ValueID{2, 2}},
		{ID: 3, Op: "attention", Inputs: []ValueID{1, 1, 1, 1, 1}, Attrs: Attrs{"heads": int64(0), "kv_heads": int64(0), "head_dim": int64(-1), "scale": 1.0}},
		{ID: 4, Op: "weight", Type: Type{DType: DType(200), Shape: Shape{{Size: 3, Sym: "q"}, {Sym: "1x"}, {Size: -2}}}},
		{ID: 5, Op: "input", Attrs: Attrs{"name": "x"}},
	}}
	err := Validate(g)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"node at index 0 is nil",
		"%1 = add: operand 0 (%0) is a nil node",
		"%2 = embed: operand 0 (%2) is not defined before use",
		"cycle through %2 = embed",
		"dim 0 is symbol q with size 3",
		`dim 1 symbol "1x" is not an identifier`,
		"dim 2 is negative",
		"invalid dtype dtype(200)",
		"%5 = input: input needs a declared type",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := TopoOrder(g); err == nil {
		t.Error("TopoOrder accepted a nil node")
	}
}

func TestTopoOrderAndUsers(t *testing.T) {
	g, ids := blockGraph(t, "decode", 128)
	order, err := TopoOrder(g)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range order {
		if int(v) != i {
			t.Fatalf("SSA-ordered graph: order[%d] = %v", i, v)
		}
	}

	// Move the last node to the front: a valid DAG, not in SSA order.
	perm := []ValueID{ValueID(len(g.Nodes) - 1)}
	for i := range len(g.Nodes) - 1 {
		perm = append(perm, ValueID(i))
	}
	reorder(g, perm)
	order, err = TopoOrder(g)
	if err != nil {
		t.Fatal(err)
	}
	if order[len(order)-1] != 0 || order[0] != 1 {
		t.Errorf("order = %v, want 1, 2, ..., 0", order)
	}

	g.Nodes[1].Inputs = []ValueID{0} // input now uses lm_head: 0 -> ... -> 0
	if _, err := TopoOrder(g); err == nil || !strings.Contains(err.Error(), "topo order of graph decode: cycle through %0 = lm_head, %1 = input, %5 = embed,") {
		t.Errorf("cycle: %v", err)
	}

	g2, ids := blockGraph(t, "prefill", 128)
	users := Users(g2)
	if got, want := users[ids["silu"]], []ValueID{ids["mul"]}; !slices.Equal(got, want) {
		t.Errorf("users of silu = %v, want %v", got, want)
	}
	if got := users[ids["w.embed"]]; len(got) != 2 { // embed table: embed and lm_head
		t.Errorf("users of the embedding = %v, want two", got)
	}
	if _, ok := users[ids["logits"]]; ok {
		t.Error("logits has users")
	}
	b := newBuilder(t, "sq")
	x := b.in("x", T(F32, 2))
	b.op("mul", nil, x, x)
	if got := Users(b.g)[x]; !slices.Equal(got, []ValueID{1}) {
		t.Errorf("mul %%0, %%0: users = %v, want [%%1]", got)
	}
}

// reorder permutes g's nodes: perm lists the old values in their new
// order. Operands, outputs and IDs are renumbered to match.
func reorder(g *Graph, perm []ValueID) {
	newID := make([]ValueID, len(perm))
	nodes := make([]*Node, len(perm))
	for i, old := range perm {
		newID[old] = ValueID(i)
		nodes[i] = g.Nodes[old]
	}
	for i, n := range nodes {
		n.ID = ValueID(i)
		for j, v := range n.Inputs {
			n.Inputs[j] = newID[v]
		}
	}
	for i := range g.Outputs {
		g.Outputs[i].Value = newID[g.Outputs[i].Value]
	}
	g.Nodes = nodes
}
