package ir

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strings"

	dgraph "github.com/dominikbraun/graph"
)

// Validate checks every invariant of g and reports every violation, not
// just the first, joined into one error (nil when g is sound). Each message
// names the graph, the node ("%12 = matmul") and the offending value:
//
//   - each node is non-nil and its ID equals its index;
//   - its op is in the op table and its attributes match the op's spec;
//   - its operands exist and are defined before use; the use graph has no
//     cycles (checked on a github.com/dominikbraun/graph DAG);
//   - its type is well formed and equals InferType; every symbolic dim is
//     one of g.Params; its placement is known and its secrecy equals
//     InferSecrecy;
//   - params are distinct identifiers; outputs have distinct non-empty
//     names and refer to existing values.
//
// Like go/ssa's sanity checker it is meant to run after building and after
// every pass; it never panics, whatever g holds.
func Validate(g *Graph) error {
	return errors.Join(validateGraph(g)...)
}

// ValidateModule validates every graph of m and checks that graph names
// are unique and meta keys non-empty.
func ValidateModule(m *Module) error {
	if m == nil {
		return errors.New("module is nil")
	}
	var errs []error
	if _, ok := m.Meta[""]; ok {
		errs = append(errs, errors.New("module: meta key is empty"))
	}
	first := map[string]int{}
	for i, g := range m.Graphs {
		errs = append(errs, validateGraph(g)...)
		if g == nil {
			continue
		}
		if j, dup := first[g.Name]; dup {
			errs = append(errs, fmt.Errorf("module: graph %s at index %d has the same name as graph %d", nameText(g.Name), i, j))
			continue
		}
		first[g.Name] = i
	}
	return errors.Join(errs...)
}

func validateGraph(g *Graph) []error {
	if g == nil {
		return []error{errors.New("graph is nil")}
	}
	var errs []error
	where := "graph " + nameText(g.Name)
	report := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(where+": "+format, args...))
	}
	if g.Name == "" {
		report("graph has no name")
	}
	params := map[string]bool{}
	for _, p := range g.Params {
		switch {
		case !isIdent(p):
			report("param %q is not an identifier", p)
		case params[p]:
			report("param %s is listed twice", p)
		}
		params[p] = true
	}

	// badType marks values whose own type is wrong; a user of one is not
	// type-checked, so one mistake gives one message, not a cascade.
	badType := make([]bool, len(g.Nodes))
	for i, n := range g.Nodes {
		if n == nil {
			report("node at index %d is nil", i)
			continue
		}
		at := describe(n)
		if int(n.ID) != i {
			report("%s: ID %v does not match its index %d", at, n.ID, i)
		}
		info := Op(n.Op)
		if info == nil {
			report("%s: unknown op %q", at, n.Op)
		}
		operandsOK, typesOK := true, true
		for j, v := range n.Inputs {
			switch src := g.Node(v); {
			case src == nil && (int(v) < 0 || int(v) >= len(g.Nodes)):
				report("%s: operand %d (%v) does not exist", at, j, v)
				operandsOK = false
			case src == nil:
				report("%s: operand %d (%v) is a nil node", at, j, v)
				operandsOK = false
			case int(v) >= i:
				report("%s: operand %d (%v) is not defined before use", at, j, v)
				operandsOK = false
			case badType[v]:
				typesOK = false
			}
		}
		for _, k := range n.Attrs.Keys() {
			switch n.Attrs[k].(type) {
			case int64, float64, string, bool, []int64:
			default:
				report("%s: attribute %s has unsupported type %T", at, nameText(k), n.Attrs[k])
			}
		}
		typeOK := true
		for _, msg := range typeProblems(n.Type, params) {
			report("%s: type %v: %s", at, n.Type, msg)
			typeOK = false
		}
		badType[i] = !typeOK
		if n.Place > Device {
			report("%s: unknown placement %v", at, n.Place)
		}
		if n.Secrecy > Secret {
			report("%s: unknown secrecy %v", at, n.Secrecy)
		}
		if info == nil || !operandsOK || int(n.ID) != i {
			continue
		}
		if s := InferSecrecy(g, n); s != n.Secrecy {
			report("%s: secrecy %v differs from derived %v", at, n.Secrecy, s)
		}
		if !typesOK {
			continue
		}
		t, err := safeInferType(g, n)
		switch {
		case err != nil:
			report("%s: %v", at, err)
			badType[i] = true
		case typeOK && !t.Equal(n.Type):
			report("%s: type %v differs from inferred %v", at, n.Type, t)
			badType[i] = true
		}
	}

	names := map[string]bool{}
	for _, o := range g.Outputs {
		out := "output " + outputText(o)
		if o.Name == "" {
			report("%s: output has no name", out)
		} else if names[o.Name] {
			report("%s: name is used twice", out)
		}
		names[o.Name] = true
		if g.Node(o.Value) == nil {
			report("%s: value %v does not exist", out, o.Value)
		}
	}

	for _, cyc := range cycles(g) {
		report("%s", cycleText(g, cyc))
	}
	return errs
}

// typeProblems lists what is wrong with a type on its own: a bad dtype,
// a negative size, a malformed symbol or one that is not a graph param.
func typeProblems(t Type, params map[string]bool) []string {
	var out []string
	if t.DType == InvalidDType || int(t.DType) >= len(dtypeInfo) {
		out = append(out, fmt.Sprintf("invalid dtype %v", t.DType))
	}
	for i, d := range t.Shape {
		switch {
		case d.Sym == "" && d.Size < 0:
			out = append(out, fmt.Sprintf("dim %d is negative", i))
		case d.Sym == "":
		case d.Size != 0:
			out = append(out, fmt.Sprintf("dim %d is symbol %s with size %d", i, d.Sym, d.Size))
		case !isIdent(d.Sym):
			out = append(out, fmt.Sprintf("dim %d symbol %q is not an identifier", i, d.Sym))
		case !params[d.Sym]:
			out = append(out, fmt.Sprintf("symbolic dim %s is not a graph param", d.Sym))
		}
	}
	return out
}

// useGraph builds the dataflow DAG of g, an edge from each operand to its
// user. Nil nodes are vertices without edges; operands that do not exist
// are left out (Validate reports them). Vertex keys are value+1: the
// library's SCC search cannot handle a vertex whose key is the zero value.
func useGraph(g *Graph) dgraph.Graph[int, ValueID] {
	dg := dgraph.New(vertexKey, dgraph.Directed())
	for i := range g.Nodes {
		_ = dg.AddVertex(ValueID(i)) // cannot fail: each ID is new
	}
	for i, n := range g.Nodes {
		if n == nil {
			continue
		}
		for _, v := range n.Inputs {
			if int(v) >= 0 && int(v) < len(g.Nodes) {
				// A repeated operand (mul %2, %2) gives ErrEdgeAlreadyExists.
				_ = dg.AddEdge(vertexKey(v), vertexKey(ValueID(i)))
			}
		}
	}
	return dg
}

func vertexKey(v ValueID) int { return int(v) + 1 }

func keyValue(k int) ValueID { return ValueID(k - 1) }

// cycles returns the cycles of g's use graph, each as its sorted values,
// in order of their smallest value. A graph in SSA order has none.
func cycles(g *Graph) [][]ValueID {
	forward := false
	for i, n := range g.Nodes {
		if n == nil {
			continue
		}
		for _, v := range n.Inputs {
			if int(v) >= i && int(v) < len(g.Nodes) {
				forward = true
			}
		}
	}
	if !forward {
		return nil // every edge points forward in index order
	}
	sccs, err := dgraph.StronglyConnectedComponents(useGraph(g))
	if err != nil {
		return nil // only for undirected graphs
	}
	var out [][]ValueID
	for _, c := range sccs {
		vs := make([]ValueID, len(c))
		for i, k := range c {
			vs[i] = keyValue(k)
		}
		if len(vs) == 0 || len(vs) == 1 && !slices.Contains(g.Nodes[vs[0]].inputsOrNil(), vs[0]) {
			continue
		}
		slices.Sort(vs)
		out = append(out, vs)
	}
	slices.SortFunc(out, func(a, b []ValueID) int { return int(a[0] - b[0]) })
	return out
}

func cycleText(g *Graph, cyc []ValueID) string {
	parts := make([]string, len(cyc))
	for i, v := range cyc {
		parts[i] = describe(g.Nodes[v])
	}
	return "cycle through " + strings.Join(parts, ", ")
}

func (n *Node) inputsOrNil() []ValueID {
	if n == nil {
		return nil
	}
	return n.Inputs
}

// TopoOrder returns g's values in a topological order of its use graph
// (every operand before its users), breaking ties by the smaller value, so
// a graph in SSA order comes back as 0, 1, 2, ... A pass that has appended
// or rewired nodes can renumber along this order. It fails on a nil node,
// an operand that does not exist, or a cycle, which it names.
func TopoOrder(g *Graph) ([]ValueID, error) {
	if g == nil {
		return nil, errors.New("topo order: graph is nil")
	}
	for i, n := range g.Nodes {
		if n == nil {
			return nil, fmt.Errorf("topo order of graph %s: node at index %d is nil", nameText(g.Name), i)
		}
		for _, v := range n.Inputs {
			if int(v) < 0 || int(v) >= len(g.Nodes) {
				return nil, fmt.Errorf("topo order of graph %s: %s: operand %v does not exist", nameText(g.Name), describe(n), v)
			}
		}
	}
	dg := useGraph(g)
	succ, err := dg.AdjacencyMap()
	if err != nil {
		return nil, fmt.Errorf("topo order of graph %s: %w", nameText(g.Name), err)
	}
	pred, err := dg.PredecessorMap()
	if err != nil {
		return nil, fmt.Errorf("topo order of graph %s: %w", nameText(g.Name), err)
	}
	// Kahn's algorithm taking the smallest ready value first, so that SSA
	// order is kept wherever the graph allows it.
	waiting := make(map[int]int, len(pred))
	ready := &keyHeap{}
	for k, ps := range pred {
		waiting[k] = len(ps)
		if len(ps) == 0 {
			heap.Push(ready, k)
		}
	}
	order := make([]ValueID, 0, len(g.Nodes))
	for ready.Len() > 0 {
		k := heap.Pop(ready).(int)
		order = append(order, keyValue(k))
		for s := range succ[k] {
			if waiting[s]--; waiting[s] == 0 {
				heap.Push(ready, s)
			}
		}
	}
	if len(order) != len(g.Nodes) {
		msg := "the use graph has a cycle"
		if cs := cycles(g); len(cs) > 0 {
			msg = cycleText(g, cs[0])
		}
		return nil, fmt.Errorf("topo order of graph %s: %s", nameText(g.Name), msg)
	}
	return order, nil
}

// keyHeap is a min-heap of vertex keys.
type keyHeap []int

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Users maps each value to the nodes that use it as an operand, each list
// ascending and without repeats (mul %2, %2 lists its node once). Values
// nobody uses are absent; graph outputs are not users. Operands that do not
// exist are skipped.
func Users(g *Graph) map[ValueID][]ValueID {
	users := map[ValueID][]ValueID{}
	if g == nil {
		return users
	}
	for i, n := range g.Nodes {
		if n == nil {
			continue
		}
		for _, v := range n.Inputs {
			if int(v) < 0 || int(v) >= len(g.Nodes) {
				continue
			}
			if us := users[v]; len(us) == 0 || us[len(us)-1] != ValueID(i) {
				users[v] = append(us, ValueID(i))
			}
		}
	}
	return users
}
