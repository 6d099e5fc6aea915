package ir

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiffIdentical(t *testing.T) {
	if cs := Diff(blockModule(t, 128), blockModule(t, 128)); len(cs) != 0 {
		t.Errorf("identical modules: %d changes:\n%s", len(cs), FormatDiff(cs))
	}
	if got := FormatDiff(nil); got != "" {
		t.Errorf("FormatDiff(nil) = %q", got)
	}
	if cs := Diff(nil, nil); len(cs) != 0 {
		t.Errorf("Diff(nil, nil) = %v", cs)
	}
}

// TestDiffRenumbered moves nodes around: numbering is no change.
func TestDiffRenumbered(t *testing.T) {
	a, b := blockModule(t, 128), blockModule(t, 128)
	g := b.Graphs[0]
	// Put every weight first, in reverse order; the rest keep their order.
	var weights, rest []ValueID
	for i, n := range g.Nodes {
		if n.Op == "weight" {
			weights = append([]ValueID{ValueID(i)}, weights...)
		} else {
			rest = append(rest, ValueID(i))
		}
	}
	reorder(g, append(weights, rest...))
	if err := ValidateModule(b); err != nil {
		t.Fatalf("reordered module is invalid: %v", err)
	}
	if Print(a) == Print(b) {
		t.Fatal("reordering did not change the text")
	}
	if cs := Diff(a, b); len(cs) != 0 {
		t.Errorf("renumbering gave %d changes:\n%s", len(cs), FormatDiff(cs))
	}
	var emb *Node // %4 in a
	for _, n := range g.Nodes {
		if n.Op == "embed" {
			emb = n
		}
	}
	emb.Place = Device
	cs := Diff(a, b)
	if len(cs) != 1 || cs[0].A != 4 || cs[0].B != emb.ID || emb.ID == 4 {
		t.Fatalf("one change to embed expected, got:\n%s", FormatDiff(cs))
	}
	want := "graph prefill:\n  ~ %4 = embed %0, %3 : f32[n,64] tee secret (now " + emb.ID.String() + ")\n      place: tee -> device\n"
	if got := FormatDiff(cs); got != want {
		t.Errorf("FormatDiff:\n%s\nwant:\n%s", got, want)
	}
}

// TestDiffMLPWidth changes the MLP's intermediate size: the three MLP
// weights and the gate, up, silu and mul outputs change; the down
// projection's output (back to hidden size) does not.
func TestDiffMLPWidth(t *testing.T) {
	a, b := blockModule(t, 128), blockModule(t, 256)
	cs := Diff(a, b)
	type key struct{ graph, name string }
	var got []key
	for _, c := range cs {
		if c.Kind != Changed || c.What != ChangeNode || c.A != c.B {
			t.Errorf("unexpected change %+v", c)
		}
		got = append(got, key{c.Graph, c.Name})
	}
	var want []key
	for _, g := range a.Graphs {
		_, ids := blockGraph(t, g.Name, 128)
		for _, l := range []string{"w.gate_proj", "gate", "w.up_proj", "up", "silu", "mul", "w.down_proj"} {
			want = append(want, key{g.Name, describe(g.Nodes[ids[l]])})
		}
	}
	less := func(x, y key) int {
		if x.graph != y.graph {
			return cmpString(x.graph, y.graph)
		}
		return cmpString(x.name, y.name)
	}
	slices.SortFunc(got, less)
	slices.SortFunc(want, less)
	if d := cmp.Diff(want, got, cmp.AllowUnexported(key{})); d != "" {
		t.Errorf("changed nodes differ (-want +got):\n%s", d)
	}
	for _, c := range cs {
		if c.Graph == "prefill" && c.Name == "%30 = matmul" {
			want := []FieldChange{{"type", "f32[n,128]", "f32[n,256]"}}
			if d := cmp.Diff(want, c.Fields); d != "" {
				t.Errorf("gate fields (-want +got):\n%s", d)
			}
		}
	}
	golden(t, "mlp_width.diff", FormatDiff(cs))
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestDiffAddNode(t *testing.T) {
	a, b := blockModule(t, 128), blockModule(t, 128)
	g := b.Graphs[0]
	_, ids := blockGraph(t, "prefill", 128)
	v, err := g.Add("silu", nil, ids["logits"])
	if err != nil {
		t.Fatal(err)
	}
	cs := Diff(a, b)
	if len(cs) != 1 {
		t.Fatalf("want one change, got %d:\n%s", len(cs), FormatDiff(cs))
	}
	c := cs[0]
	want := Change{Kind: Added, What: ChangeNode, Graph: "prefill", Name: describe(g.Nodes[v]), A: -1, B: v,
		After: nodeText(g.Nodes[v])}
	if d := cmp.Diff(want, c); d != "" {
		t.Errorf("change (-want +got):\n%s", d)
	}
	if cs := Diff(b, a); len(cs) != 1 || cs[0].Kind != Removed || cs[0].A != v {
		t.Errorf("reverse diff: %+v", cs)
	}
}

// TestDiffKinds covers meta, params, outputs, whole graphs and each node
// field, through the golden rendering.
func TestDiffKinds(t *testing.T) {
	a, b := blockModule(t, 128), blockModule(t, 128)
	a.Meta["old"] = "x"
	b.Meta["passes"] = "place,fuse"
	b.Meta["new"] = "y"
	a.Graphs = append(a.Graphs, &Graph{Name: "gone", Params: []string{"n"}})
	b.Graphs = append(b.Graphs, &Graph{Name: "extra"})

	pre, ids := b.Graphs[0], map[string]ValueID{}
	_, ids = blockGraph(t, "prefill", 128)
	pre.Params = []string{"n", "T", "S"}
	pre.Nodes[8].Attrs["eps"] = 1e-5         // rms_norm eps
	pre.Nodes[ids["down"]].Place = TEE       // placement
	pre.Nodes[ids["w.embed"]].Place = Device // placement of a weight
	pre.Outputs[1].Value = ids["v_cache"]    // kv.0.k now names another node
	pre.Outputs = append(pre.Outputs, Output{Name: "h", Value: ids["residual"]})
	pre.Outputs = slices.Delete(pre.Outputs, 2, 3) // kv.0.v removed

	dec := b.Graphs[1]
	dec.Nodes[0].Attrs["name"] = "ids" // identity changes: input removed, added, and all downstream
	if err := ValidateModule(b); err != nil {
		t.Fatalf("edited module is invalid: %v", err)
	}
	cs := Diff(a, b)
	golden(t, "kinds.diff", FormatDiff(cs))
}
