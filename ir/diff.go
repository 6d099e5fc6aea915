package ir

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// ChangeKind says whether something was added, removed or changed.
type ChangeKind uint8

const (
	Added ChangeKind = iota + 1
	Removed
	Changed
)

func (k ChangeKind) String() string {
	switch k {
	case Added:
		return "added"
	case Removed:
		return "removed"
	case Changed:
		return "changed"
	}
	return fmt.Sprintf("changekind(%d)", uint8(k))
}

// What a Change is about.
const (
	ChangeMeta   = "meta"
	ChangeGraph  = "graph"
	ChangeParams = "params"
	ChangeNode   = "node"
	ChangeOutput = "output"
)

// Change is one structural difference between two modules.
type Change struct {
	Kind ChangeKind
	What string // ChangeMeta, ChangeGraph, ChangeParams, ChangeNode or ChangeOutput
	// Graph is the graph the change is in (the graph itself for
	// ChangeGraph); "" for meta.
	Graph string
	// Name is the meta key, the output name, the graph name, or for a node
	// its description in a ("%7 = matmul"; in b when added).
	Name string
	// A and B are a node's values in a and in b; -1 where it is absent or
	// the change is not about a node.
	A, B ValueID
	// Before and After are the printed forms in a and in b (a node's whole
	// line, a quoted meta value, a graph header, "(n, T)"); "" where absent.
	Before, After string
	// Fields lists each differing field of a changed node or output.
	Fields []FieldChange
}

// FieldChange is one field of a matched node that differs: "type",
// "place", "secrecy" or "attr NAME" (an absent attribute reads "(none)"),
// or "value" for an output.
type FieldChange struct {
	Field, Before, After string
}

// Diff compares two modules structurally rather than line by line. Nodes
// of same-named graphs are matched by a key that ignores value numbering,
// types and attributes: the op, the identity attribute "name" (inputs and
// weights) and the keys of the operands, with an occurrence index among
// nodes of equal key. So renumbering is no change; a node whose type,
// attributes, placement or secrecy differ is Changed; a node whose
// structure differs is Removed from a and Added to b (and so is everything
// computed from it). Meta entries, params, outputs (an output changes when
// it refers to a structurally different node) and whole graphs are compared
// too. Changes come in a stable order: meta by key, graphs removed then
// added, then per graph of b: params, nodes removed, changed, added, then
// outputs. Identical modules give no changes. Diff never panics.
func Diff(a, b *Module) []Change {
	if a == nil {
		a = &Module{}
	}
	if b == nil {
		b = &Module{}
	}
	var cs []Change
	cs = append(cs, diffMeta(a.Meta, b.Meta)...)
	ga, gb := graphsByName(a), graphsByName(b)
	for _, g := range a.Graphs {
		if g != nil && ga[g.Name] == g && gb[g.Name] == nil {
			cs = append(cs, Change{Kind: Removed, What: ChangeGraph, Graph: g.Name, Name: g.Name, A: -1, B: -1, Before: graphSummary(g)})
		}
	}
	for _, g := range b.Graphs {
		if g != nil && gb[g.Name] == g && ga[g.Name] == nil {
			cs = append(cs, Change{Kind: Added, What: ChangeGraph, Graph: g.Name, Name: g.Name, A: -1, B: -1, After: graphSummary(g)})
		}
	}
	for _, g := range b.Graphs {
		if g != nil && gb[g.Name] == g && ga[g.Name] != nil {
			cs = append(cs, diffGraph(ga[g.Name], g)...)
		}
	}
	return cs
}

// FormatDiff renders changes for people: one line a change, '-' removed,
// '+' added, '~' changed (a node by its line in a, and "(now %N)" when its
// value differs in b), the changed fields indented below, and changes
// inside a graph under a "graph NAME:" line. No changes give "".
func FormatDiff(cs []Change) string {
	var b strings.Builder
	cur := ""
	for _, c := range cs {
		indent := ""
		if c.What != ChangeMeta && c.What != ChangeGraph {
			if c.Graph != cur {
				fmt.Fprintf(&b, "graph %s:\n", nameText(c.Graph))
				cur = c.Graph
			}
			indent = "  "
		} else {
			cur = ""
		}
		b.WriteString(indent)
		switch c.Kind {
		case Added:
			b.WriteString("+ ")
		case Removed:
			b.WriteString("- ")
		default:
			b.WriteString("~ ")
		}
		switch {
		case c.What == ChangeMeta && c.Kind == Changed:
			fmt.Fprintf(&b, "meta %s: %s -> %s", nameText(c.Name), c.Before, c.After)
		case c.What == ChangeMeta:
			fmt.Fprintf(&b, "meta %s = %s", nameText(c.Name), c.Before+c.After)
		case c.What == ChangeParams:
			fmt.Fprintf(&b, "params %s -> %s", c.Before, c.After)
		case c.Kind == Changed && c.What == ChangeNode:
			b.WriteString(c.Before)
			if c.A != c.B {
				fmt.Fprintf(&b, " (now %v)", c.B)
			}
		case c.Kind == Changed:
			fmt.Fprintf(&b, "%s %s", c.What, nameText(c.Name))
		default:
			b.WriteString(c.Before + c.After)
		}
		b.WriteByte('\n')
		for _, f := range c.Fields {
			fmt.Fprintf(&b, "%s    %s: %s -> %s\n", indent, f.Field, f.Before, f.After)
		}
	}
	return b.String()
}

func diffMeta(a, b map[string]string) []Change {
	keys := sortedKeys(a)
	for _, k := range sortedKeys(b) {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var cs []Change
	for _, k := range keys {
		va, inA := a[k]
		vb, inB := b[k]
		c := Change{What: ChangeMeta, Name: k, A: -1, B: -1}
		switch {
		case !inB:
			c.Kind, c.Before = Removed, quote(va)
		case !inA:
			c.Kind, c.After = Added, quote(vb)
		case va != vb:
			c.Kind, c.Before, c.After = Changed, quote(va), quote(vb)
		default:
			continue
		}
		cs = append(cs, c)
	}
	return cs
}

func quote(s string) string { return attrText(s) }

// graphsByName maps names to the first non-nil graph of that name.
func graphsByName(m *Module) map[string]*Graph {
	gs := map[string]*Graph{}
	for _, g := range m.Graphs {
		if g != nil && gs[g.Name] == nil {
			gs[g.Name] = g
		}
	}
	return gs
}

func graphSummary(g *Graph) string {
	return fmt.Sprintf("%s (%d nodes)", graphHeader(g), len(g.Nodes))
}

func diffGraph(a, b *Graph) []Change {
	var cs []Change
	base := Change{Graph: b.Name, A: -1, B: -1}
	if !slices.Equal(a.Params, b.Params) {
		c := base
		c.Kind, c.What, c.Name = Changed, ChangeParams, b.Name
		c.Before, c.After = paramsText(a.Params), paramsText(b.Params)
		cs = append(cs, c)
	}

	ka, kb := structKeys(a), structKeys(b)
	ia, ib := indexKeys(ka), indexKeys(kb)
	for i, n := range a.Nodes {
		if n == nil {
			continue
		}
		if _, ok := ib[ka[i]]; !ok {
			c := base
			c.Kind, c.What, c.Name, c.A, c.Before = Removed, ChangeNode, describe(n), ValueID(i), nodeText(n)
			cs = append(cs, c)
		}
	}
	for i, n := range a.Nodes {
		if n == nil {
			continue
		}
		j, ok := ib[ka[i]]
		if !ok {
			continue
		}
		m := b.Nodes[j]
		if fs := nodeFields(n, m); len(fs) > 0 {
			c := base
			c.Kind, c.What, c.Name, c.A, c.B = Changed, ChangeNode, describe(n), ValueID(i), ValueID(j)
			c.Before, c.After, c.Fields = nodeText(n), nodeText(m), fs
			cs = append(cs, c)
		}
	}
	for j, m := range b.Nodes {
		if m == nil {
			continue
		}
		if _, ok := ia[kb[j]]; !ok {
			c := base
			c.Kind, c.What, c.Name, c.B, c.After = Added, ChangeNode, describe(m), ValueID(j), nodeText(m)
			cs = append(cs, c)
		}
	}

	// Outputs: by name. One changes when it names a different structure,
	// unless that is already said: its node in a was removed and its node
	// in b added.
	outA := map[string]Output{}
	for _, o := range a.Outputs {
		if _, dup := outA[o.Name]; !dup {
			outA[o.Name] = o
		}
	}
	outB := map[string]Output{}
	for _, o := range b.Outputs {
		if _, dup := outB[o.Name]; !dup {
			outB[o.Name] = o
		}
	}
	for _, o := range a.Outputs {
		if _, ok := outB[o.Name]; !ok && outA[o.Name] == o {
			c := base
			c.Kind, c.What, c.Name, c.Before = Removed, ChangeOutput, o.Name, "output "+outputText(o)
			cs = append(cs, c)
		}
	}
	for _, o := range b.Outputs {
		p, ok := outA[o.Name]
		if outB[o.Name] != o {
			continue // a repeated name: the first one counts
		}
		c := base
		c.What, c.Name = ChangeOutput, o.Name
		switch {
		case !ok:
			c.Kind, c.After = Added, "output "+outputText(o)
		case valueKey(a, ka, p.Value) != valueKey(b, kb, o.Value) && !replaced(a, ka, ib, p.Value, b, kb, ia, o.Value):
			c.Kind, c.Before, c.After = Changed, "output "+outputText(p), "output "+outputText(o)
			c.Fields = []FieldChange{{Field: "value", Before: p.Value.String(), After: o.Value.String()}}
		default:
			continue
		}
		cs = append(cs, c)
	}
	return cs
}

// replaced reports whether va in a was removed and vb in b added.
func replaced(a *Graph, ka []nodeKey, ib map[nodeKey]int, va ValueID, b *Graph, kb []nodeKey, ia map[nodeKey]int, vb ValueID) bool {
	if a.Node(va) == nil || b.Node(vb) == nil {
		return false
	}
	_, keptA := ib[ka[va]]
	_, keptB := ia[kb[vb]]
	return !keptA && !keptB
}

// nodeFields lists the fields of two matched nodes that differ.
func nodeFields(a, b *Node) []FieldChange {
	var fs []FieldChange
	if ta, tb := a.Type.String(), b.Type.String(); ta != tb {
		fs = append(fs, FieldChange{"type", ta, tb})
	}
	if a.Place != b.Place {
		fs = append(fs, FieldChange{"place", a.Place.String(), b.Place.String()})
	}
	if a.Secrecy != b.Secrecy {
		fs = append(fs, FieldChange{"secrecy", a.Secrecy.String(), b.Secrecy.String()})
	}
	keys := a.Attrs.Keys()
	for _, k := range b.Attrs.Keys() {
		if _, ok := a.Attrs[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		va, vb := "(none)", "(none)"
		if v, ok := a.Attrs[k]; ok {
			va = attrText(v)
		}
		if v, ok := b.Attrs[k]; ok {
			vb = attrText(v)
		}
		if va != vb {
			fs = append(fs, FieldChange{"attr " + nameText(k), va, vb})
		}
	}
	return fs
}

// nodeKey is a structural key: a hash, so that keys stay small however
// deep the graph.
type nodeKey [sha256.Size]byte

// structKeys computes each node's structural key in value order, which
// memoises the recursion over operands: an operand defined above has its
// key already. An operand that is not (a dangling or forward reference in
// invalid IR) contributes only its number, so this never recurses or
// loops. Nil nodes get the zero key and are never matched.
func structKeys(g *Graph) []nodeKey {
	keys := make([]nodeKey, len(g.Nodes))
	seen := map[nodeKey]uint64{}
	for i, n := range g.Nodes {
		if n == nil {
			continue
		}
		h := sha256.New()
		field := func(s string) {
			var l [8]byte
			binary.LittleEndian.PutUint64(l[:], uint64(len(s)))
			h.Write(l[:])
			h.Write([]byte(s))
		}
		field(n.Op)
		if name, ok := n.Attrs.Str("name"); ok {
			field("name=" + name)
		} else {
			field("")
		}
		field(fmt.Sprint(len(n.Inputs)))
		for _, v := range n.Inputs {
			if int(v) >= 0 && int(v) < i && g.Nodes[v] != nil {
				field(string(keys[v][:]))
			} else {
				field("?" + v.String())
			}
		}
		var base nodeKey
		h.Sum(base[:0])
		occ := seen[base]
		seen[base] = occ + 1
		var o [8]byte
		binary.LittleEndian.PutUint64(o[:], occ)
		keys[i] = sha256.Sum256(append(base[:], o[:]...))
	}
	return keys
}

func indexKeys(keys []nodeKey) map[nodeKey]int {
	m := make(map[nodeKey]int, len(keys))
	var zero nodeKey
	for i, k := range keys {
		if k != zero {
			m[k] = i
		}
	}
	return m
}

// valueKey is the structural key of v, or its number when it has none.
func valueKey(g *Graph, keys []nodeKey, v ValueID) string {
	if int(v) >= 0 && int(v) < len(keys) && g.Nodes[v] != nil {
		return string(keys[v][:])
	}
	return "?" + v.String()
}
