package passes

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"gelo/ir"
)

// A fusion is a named rewrite rule: it finds matches of a pattern in a
// placed graph and says how to build the fused replacement. The name is
// the --no-fuse switch and the label inspect prints. Rules are applied in
// table order, each over the whole graph.
type Fusion struct {
	Name string
	Doc  string
	// BitIdentical says whether the fused graph computes the same bits
	// as the unfused one (same arithmetic in the same order); the gate
	// tests hold every fusion that says so to it.
	BitIdentical bool
	match        func(g *ir.Graph, users map[ir.ValueID][]ir.ValueID) []match
}

// match is one place a rule applies: the nodes it replaces, and a builder
// that emits the fused nodes and returns the value replacing each of
// them (nodes absent from the map must have no users left).
type match struct {
	nodes []ir.ValueID
	build func(b *builder) map[ir.ValueID]ir.ValueID
}

// Fusions is the fusion table.
var Fusions = []Fusion{
	{Name: "norm_rope_append", BitIdentical: true,
		Doc:   "per-head Q/K RMSNorm + RoPE, and for K the write of K and V into the KV cache, each as one TEE kernel",
		match: matchNormRope},
	{Name: "add_rms_norm", BitIdentical: true,
		Doc:   "residual add and the next RMSNorm in one pass over the row",
		match: matchAddNorm},
	{Name: "concat_proj", BitIdentical: true,
		Doc:   "Q|K|V and gate|up as one device matmul each: 4 device matmuls per block, one mask/unmask each",
		match: matchConcat},
	{Name: "swiglu", BitIdentical: true,
		Doc:   "silu(gate) * up in one pass, reading the gate|up product directly",
		match: matchSwiGLU},
}

// FusionNames lists the fusions in order.
func FusionNames() []string {
	var ns []string
	for _, f := range Fusions {
		ns = append(ns, f.Name)
	}
	return ns
}

// Fuse applies every fusion not switched off. It runs after place and
// before protect, so a fused device matmul crosses the boundary once.
func Fuse(off []string) Pass {
	return Pass{Name: "fuse", Doc: "rewrite patterns into fused kernels (each with an off switch)",
		Run: func(m *ir.Module) error {
			skip := map[string]bool{}
			for _, n := range off {
				if !slices.Contains(FusionNames(), n) {
					return fmt.Errorf("--no-fuse=%s: no such fusion (fusions: %s)", n, strings.Join(FusionNames(), ", "))
				}
				skip[n] = true
			}
			var on []string
			for _, f := range Fusions {
				if skip[f.Name] {
					continue
				}
				on = append(on, f.Name)
				for i, g := range m.Graphs {
					ng, err := applyFusion(g, f)
					if err != nil {
						return fmt.Errorf("fusion %s: graph %s: %w", f.Name, g.Name, err)
					}
					m.Graphs[i] = ng
				}
			}
			m.Meta["fusions"] = strings.Join(on, ",")
			if len(on) == 0 {
				m.Meta["fusions"] = "none"
			}
			return nil
		}}
}

// builder emits nodes into the rebuilt graph; old maps old values to new.
type builder struct {
	g   *ir.Graph
	old func(ir.ValueID) ir.ValueID
	err error
}

func (b *builder) add(op string, attrs ir.Attrs, place ir.Placement, in ...ir.ValueID) ir.ValueID {
	if b.err != nil {
		return -1
	}
	v, err := b.g.Add(op, attrs, in...)
	if err != nil {
		b.err = err
		return -1
	}
	b.g.Nodes[v].Place = place
	return v
}

// applyFusion rebuilds g with every non-overlapping match of f replaced,
// then drops nodes nothing reads any more.
func applyFusion(g *ir.Graph, f Fusion) (*ir.Graph, error) {
	users := ir.Users(g)
	matches := f.match(g, users)
	taken := map[ir.ValueID]bool{}
	anchor := map[ir.ValueID]*match{}
	for i := range matches {
		mt := &matches[i]
		last := slices.Max(mt.nodes)
		ok := true
		for _, v := range mt.nodes {
			if taken[v] {
				ok = false
			}
			for _, u := range users[v] {
				// A reader outside the match must come after the fused
				// node, which sits where the match's last node was.
				if !slices.Contains(mt.nodes, u) && u < last {
					ok = false
				}
			}
		}
		if !ok {
			continue
		}
		for _, v := range mt.nodes {
			taken[v] = true
		}
		anchor[last] = mt
	}
	if len(anchor) == 0 {
		return g, nil
	}
	ng := &ir.Graph{Name: g.Name, Params: append([]string(nil), g.Params...)}
	remap := make([]ir.ValueID, len(g.Nodes))
	for i := range remap {
		remap[i] = -1
	}
	b := &builder{g: ng, old: func(v ir.ValueID) ir.ValueID { return remap[v] }}
	for _, n := range g.Nodes {
		if mt, ok := anchor[n.ID]; ok {
			for old, nv := range mt.build(b) {
				remap[old] = nv
			}
			if b.err != nil {
				return nil, b.err
			}
			continue
		}
		if taken[n.ID] {
			continue
		}
		in := make([]ir.ValueID, len(n.Inputs))
		for i, v := range n.Inputs {
			in[i] = remap[v]
			if in[i] < 0 {
				return nil, fmt.Errorf("%v = %s reads %v, which the fusion removed", n.ID, n.Op, v)
			}
		}
		v, err := copyNode(ng, n, in)
		if err != nil {
			return nil, err
		}
		remap[n.ID] = v
	}
	for _, o := range g.Outputs {
		if remap[o.Value] < 0 {
			return nil, fmt.Errorf("output %s lost its value", o.Name)
		}
		ng.Outputs = append(ng.Outputs, ir.Output{Name: o.Name, Value: remap[o.Value]})
	}
	return deadCode(ng)
}

// copyNode re-emits n into ng over the mapped operands in, keeping its
// placement (declared ops keep their declared type).
func copyNode(ng *ir.Graph, n *ir.Node, in []ir.ValueID) (ir.ValueID, error) {
	var v ir.ValueID
	var err error
	if info := ir.Op(n.Op); info != nil && info.Declared {
		v, err = ng.AddDeclared(n.Op, n.Attrs, n.Type)
	} else {
		v, err = ng.Add(n.Op, n.Attrs, in...)
	}
	if err != nil {
		return -1, fmt.Errorf("%v = %s: %w", n.ID, n.Op, err)
	}
	ng.Nodes[v].Place = n.Place
	return v, nil
}

// deadCode drops nodes no output depends on (weights an unfused node
// read, slices a fused node made redundant), renumbering the rest in
// order. Graph inputs are kept: they are the program's interface.
func deadCode(g *ir.Graph) (*ir.Graph, error) {
	live := make([]bool, len(g.Nodes))
	var mark func(v ir.ValueID)
	mark = func(v ir.ValueID) {
		if live[v] {
			return
		}
		live[v] = true
		for _, in := range g.Nodes[v].Inputs {
			mark(in)
		}
	}
	for _, o := range g.Outputs {
		mark(o.Value)
	}
	for _, n := range g.Nodes {
		if n.Op == ir.OpInput {
			live[n.ID] = true
		}
	}
	ng := &ir.Graph{Name: g.Name, Params: g.Params}
	remap := make([]ir.ValueID, len(g.Nodes))
	for _, n := range g.Nodes {
		if !live[n.ID] {
			continue
		}
		c := *n
		c.ID = ir.ValueID(len(ng.Nodes))
		c.Inputs = make([]ir.ValueID, len(n.Inputs))
		for i, v := range n.Inputs {
			c.Inputs[i] = remap[v]
		}
		remap[n.ID] = c.ID
		ng.Nodes = append(ng.Nodes, &c)
	}
	for _, o := range g.Outputs {
		ng.Outputs = append(ng.Outputs, ir.Output{Name: o.Name, Value: remap[o.Value]})
	}
	return ng, nil
}

func only(users map[ir.ValueID][]ir.ValueID, v, user ir.ValueID) bool {
	u := users[v]
	return len(u) == 1 && u[0] == user
}

// matchNormRope: rope(qk_norm(x, w), pos) -> norm_rope(x, w, pos), and
// kv_append(cache, rope(qk_norm(k, w), pos), seq, pos) -> norm_rope_append.
func matchNormRope(g *ir.Graph, users map[ir.ValueID][]ir.ValueID) []match {
	var out []match
	for _, r := range g.Nodes {
		if r.Op != ir.OpRope {
			continue
		}
		qn := g.Node(r.Inputs[0])
		if qn.Op != ir.OpQKNorm || !only(users, qn.ID, r.ID) || qn.Place != r.Place {
			continue
		}
		attrs := ir.Attrs{"heads": qn.Attrs["heads"], "head_dim": qn.Attrs["head_dim"], "eps": qn.Attrs["eps"], "theta": r.Attrs["theta"]}
		us := users[r.ID]
		if len(us) == 1 {
			if ap := g.Node(us[0]); ap.Op == ir.OpKVAppend && ap.Inputs[1] == r.ID && ap.Inputs[3] == r.Inputs[1] {
				qn, r, ap := qn, r, ap
				if vp := valueAppend(g, users, ap); vp != nil {
					out = append(out, match{nodes: []ir.ValueID{qn.ID, r.ID, ap.ID, vp.ID}, build: func(b *builder) map[ir.ValueID]ir.ValueID {
						pair := b.add(ir.OpNormRopeAppendKV, attrs, ap.Place, b.old(ap.Inputs[0]), b.old(vp.Inputs[0]),
							b.old(qn.Inputs[0]), b.old(vp.Inputs[1]), b.old(qn.Inputs[1]), b.old(ap.Inputs[2]), b.old(r.Inputs[1]))
						kc := b.add(ir.OpTake, ir.Attrs{"index": int64(0)}, ap.Place, pair)
						vc := b.add(ir.OpTake, ir.Attrs{"index": int64(1)}, ap.Place, pair)
						return map[ir.ValueID]ir.ValueID{ap.ID: kc, vp.ID: vc}
					}})
					continue
				}
				out = append(out, match{nodes: []ir.ValueID{qn.ID, r.ID, ap.ID}, build: func(b *builder) map[ir.ValueID]ir.ValueID {
					v := b.add(ir.OpNormRopeAppend, attrs, ap.Place, b.old(ap.Inputs[0]), b.old(qn.Inputs[0]), b.old(qn.Inputs[1]),
						b.old(ap.Inputs[2]), b.old(r.Inputs[1]))
					return map[ir.ValueID]ir.ValueID{ap.ID: v}
				}})
				continue
			}
		}
		qn, r := qn, r
		out = append(out, match{nodes: []ir.ValueID{qn.ID, r.ID}, build: func(b *builder) map[ir.ValueID]ir.ValueID {
			v := b.add(ir.OpNormRope, attrs, r.Place, b.old(qn.Inputs[0]), b.old(qn.Inputs[1]), b.old(r.Inputs[1]))
			return map[ir.ValueID]ir.ValueID{r.ID: v}
		}})
	}
	return out
}

// valueAppend finds the V append that pairs with the K append ap: the
// other cache the same attention reads, written at the same (seq, pos).
func valueAppend(g *ir.Graph, users map[ir.ValueID][]ir.ValueID, ap *ir.Node) *ir.Node {
	for _, u := range users[ap.ID] {
		at := g.Node(u)
		if at.Op != ir.OpAttention || at.Inputs[1] != ap.ID {
			continue
		}
		vp := g.Node(at.Inputs[2])
		if vp.Op == ir.OpKVAppend && vp.Inputs[2] == ap.Inputs[2] && vp.Inputs[3] == ap.Inputs[3] && vp.Place == ap.Place && vp.ID > ap.ID {
			return vp
		}
	}
	return nil
}

// matchAddNorm: s = add(a, b); h = rms_norm(s, w) -> the pair
// add_rms_norm(a, b, w), s = take 0, h = take 1.
func matchAddNorm(g *ir.Graph, users map[ir.ValueID][]ir.ValueID) []match {
	var out []match
	for _, nrm := range g.Nodes {
		if nrm.Op != ir.OpRMSNorm {
			continue
		}
		ad := g.Node(nrm.Inputs[0])
		if ad.Op != ir.OpAdd || ad.Place != nrm.Place {
			continue
		}
		ad, nrm := ad, nrm
		out = append(out, match{nodes: []ir.ValueID{ad.ID, nrm.ID}, build: func(b *builder) map[ir.ValueID]ir.ValueID {
			pair := b.add(ir.OpAddRMSNorm, ir.Attrs{"eps": nrm.Attrs["eps"]}, nrm.Place, b.old(ad.Inputs[0]), b.old(ad.Inputs[1]), b.old(nrm.Inputs[1]))
			s := b.add(ir.OpTake, ir.Attrs{"index": int64(0)}, nrm.Place, pair)
			h := b.add(ir.OpTake, ir.Attrs{"index": int64(1)}, nrm.Place, pair)
			return map[ir.ValueID]ir.ValueID{ad.ID: s, nrm.ID: h}
		}})
	}
	return out
}

// matchConcat: device matmuls reading the same activation, each with a
// weight (and a bias, or none, alike), become one matmul over the
// stacked weights; each original result is a column slice of it.
func matchConcat(g *ir.Graph, users map[ir.ValueID][]ir.ValueID) []match {
	groups := map[ir.ValueID][]*ir.Node{}
	for _, n := range g.Nodes {
		if n.Op == ir.OpMatMul && n.Place == ir.Device && g.Node(n.Inputs[1]).Op == ir.OpWeight {
			groups[n.Inputs[0]] = append(groups[n.Inputs[0]], n)
		}
	}
	keys := make([]ir.ValueID, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var out []match
	for _, x := range keys {
		mm := groups[x]
		if len(mm) < 2 {
			continue
		}
		biased := len(mm[0].Inputs) == 3
		same := true
		for _, n := range mm {
			if (len(n.Inputs) == 3) != biased {
				same = false
			}
		}
		if !same {
			continue
		}
		var nodes []ir.ValueID
		for _, n := range mm {
			nodes = append(nodes, n.ID)
		}
		out = append(out, match{nodes: nodes, build: func(b *builder) map[ir.ValueID]ir.ValueID {
			var ws, bs []ir.ValueID
			for _, n := range mm {
				ws = append(ws, b.old(n.Inputs[1]))
				if biased {
					bs = append(bs, b.old(n.Inputs[2]))
				}
			}
			in := []ir.ValueID{b.old(x), b.add(ir.OpConcatWeights, nil, classPlace(ir.OpConcatWeights), ws...)}
			if biased {
				in = append(in, b.add(ir.OpConcatWeights, nil, classPlace(ir.OpConcatWeights), bs...))
			}
			fused := b.add(ir.OpMatMul, nil, mm[0].Place, in...)
			res := map[ir.ValueID]ir.ValueID{}
			start := 0
			for _, n := range mm {
				width := n.Type.Shape[1].Size
				res[n.ID] = b.add(ir.OpSliceCols, ir.Attrs{"start": int64(start), "width": int64(width)}, classPlace(ir.OpSliceCols), fused)
				start += width
			}
			return res
		}})
	}
	return out
}

// matchSwiGLU: mul(silu(g), u) -> swiglu. When g and u are the two halves
// of one gate|up product (after concat_proj), swiglu reads the product
// directly and the slices disappear.
func matchSwiGLU(g *ir.Graph, users map[ir.ValueID][]ir.ValueID) []match {
	var out []match
	for _, mul := range g.Nodes {
		if mul.Op != ir.OpMul {
			continue
		}
		si, up := g.Node(mul.Inputs[0]), g.Node(mul.Inputs[1])
		if si.Op != ir.OpSiLU || !only(users, si.ID, mul.ID) || si.Place != mul.Place {
			continue
		}
		gate := g.Node(si.Inputs[0])
		nodes := []ir.ValueID{si.ID, mul.ID}
		var src ir.ValueID = -1
		if gate.Op == ir.OpSliceCols && up.Op == ir.OpSliceCols && gate.Inputs[0] == up.Inputs[0] &&
			only(users, gate.ID, si.ID) && only(users, up.ID, mul.ID) {
			gs, _ := gate.Attrs.Int("start")
			us, _ := up.Attrs.Int("start")
			gw, _ := gate.Attrs.Int("width")
			uw, _ := up.Attrs.Int("width")
			if gs == 0 && us == gw && uw == gw && g.Node(gate.Inputs[0]).Type.Shape[1].Size == int(2*gw) {
				src = gate.Inputs[0]
				nodes = append(nodes, gate.ID, up.ID)
			}
		}
		mul, si := mul, si
		out = append(out, match{nodes: nodes, build: func(b *builder) map[ir.ValueID]ir.ValueID {
			var v ir.ValueID
			if src >= 0 {
				v = b.add(ir.OpSwiGLU, nil, mul.Place, b.old(src))
			} else {
				v = b.add(ir.OpSwiGLU, nil, mul.Place, b.old(si.Inputs[0]), b.old(mul.Inputs[1]))
			}
			return map[ir.ValueID]ir.ValueID{mul.ID: v}
		}})
	}
	return out
}

// FuseEpilogue folds the shield strip into the swiglu that reads it: after
// protect, swiglu(shield_strip(unmask(y))) reads the unmasked stack
// directly (its first rows, or row 0 of each sequence's block), so the
// gate|up product leaves the unmask epilogue as silu(gate) * up without a
// copy. It belongs to the swiglu fusion and is off with it.
func FuseEpilogue(off []string) Pass {
	return Pass{Name: "fuse_epilogue", Doc: "fold the shield strip into swiglu (part of the swiglu fusion)",
		Run: func(m *ir.Module) error {
			if slices.Contains(off, "swiglu") {
				return nil
			}
			f := Fusion{Name: "swiglu", match: matchStripSwiGLU}
			for i, g := range m.Graphs {
				ng, err := applyFusion(g, f)
				if err != nil {
					return fmt.Errorf("graph %s: %w", g.Name, err)
				}
				m.Graphs[i] = ng
			}
			return nil
		}}
}

func matchStripSwiGLU(g *ir.Graph, users map[ir.ValueID][]ir.ValueID) []match {
	var out []match
	for _, sw := range g.Nodes {
		if sw.Op != ir.OpSwiGLU || len(sw.Inputs) != 1 {
			continue
		}
		st := g.Node(sw.Inputs[0])
		if st.Op != ir.OpShieldStrip || !only(users, st.ID, sw.ID) {
			continue
		}
		if c, _ := st.Attrs.Bool("center"); c {
			continue // the strip adds the mean row's product: keep it
		}
		if w, _ := st.Attrs.Bool("whiten"); w {
			continue // the strip scales the rows back by alpha: keep it
		}
		sw, st := sw, st
		out = append(out, match{nodes: []ir.ValueID{st.ID, sw.ID}, build: func(b *builder) map[ir.ValueID]ir.ValueID {
			attrs := ir.Attrs{"rows": st.Attrs["rows"]}
			if pr, _ := st.Attrs.Bool("per_row"); pr {
				attrs["per_row"] = true
			}
			return map[ir.ValueID]ir.ValueID{sw.ID: b.add(ir.OpSwiGLU, attrs, sw.Place, b.old(st.Inputs[0]))}
		}})
	}
	return out
}
