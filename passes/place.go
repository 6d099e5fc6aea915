package passes

import (
	"fmt"
	"sort"
	"strings"

	"gelo/ir"
)

// Policy is the placement table: which side of the trust boundary runs
// each op. It is data, printed by `gelo inspect`, not rules scattered over
// ops. Linear layers over public weights go to the device; everything that
// touches a secret index or secret state (the embedding gather, norms,
// RoPE, the KV cache, attention, residuals) stays in the TEE.
type Policy struct {
	Ops map[string]ir.Placement
	// Why explains each entry, for inspect.
	Why map[string]string
}

// classPolicy is the placement rule of each op class, with the reason
// inspect prints. Weights have no entry: placeWeights puts each one where
// the ops that read it run.
var classPolicy = map[ir.Class]struct {
	place ir.Placement
	why   string
}{
	ir.ClassLinear:         {ir.Device, "linear over public weights"},
	ir.ClassStackedWeights: {ir.Device, "public weights stacked once, resident on the device"},
	ir.ClassFused:          {ir.TEE, "fused TEE kernel on secret activations"},
	ir.ClassFusedKVCache:   {ir.TEE, "fused TEE kernel writing the secret KV cache"},
	ir.ClassGather:         {ir.TEE, "secret-indexed gather"},
	ir.ClassInput:          {ir.TEE, "secret graph input"},
	ir.ClassKVCache:        {ir.TEE, "touches the secret KV cache"},
	ir.ClassElementwise:    {ir.TEE, "cheap elementwise/row op on secret activations"},
	ir.ClassBoundary:       {ir.TEE, "boundary op: runs in the TEE on its side of the crossing"},
}

// classPlace is where the placement table puts op: what a rewrite that
// emits a new node (stacked weights, column slices) places it by.
func classPlace(op string) ir.Placement { return classPolicy[ir.ClassOf(op)].place }

// DefaultPolicy is gelo's placement table: every registered op placed by
// its class.
func DefaultPolicy() Policy {
	p := Policy{Ops: map[string]ir.Placement{}, Why: map[string]string{}}
	for _, op := range ir.Ops() {
		if rule, ok := classPolicy[ir.ClassOf(op)]; ok {
			p.Ops[op] = rule.place
			p.Why[op] = rule.why
		}
	}
	return p
}

// String prints the table, one op a line, sorted.
func (p Policy) String() string {
	ops := make([]string, 0, len(p.Ops))
	for op := range p.Ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "%-12s %-7s %s\n", op, p.Ops[op], p.Why[op])
	}
	fmt.Fprintf(&b, "%-12s %-7s %s\n", ir.OpWeight, "*", "public; resident on the device when a device op uses it, else in the TEE")
	return b.String()
}

// Place annotates every node with its placement from the policy. An op
// the policy does not name is an error, so a new op cannot silently land
// on the wrong side.
func Place(p Policy) Pass {
	return Pass{Name: "place", Doc: "assign each node to tee or device from the placement table",
		Run: func(m *ir.Module) error {
			for _, g := range m.Graphs {
				if err := place(g, p); err != nil {
					return fmt.Errorf("graph %s: %w", g.Name, err)
				}
			}
			return nil
		}}
}

func place(g *ir.Graph, p Policy) error {
	for _, n := range g.Nodes {
		if n.Op == ir.OpWeight {
			continue
		}
		pl, ok := p.Ops[n.Op]
		if !ok {
			return fmt.Errorf("%v = %s: op has no entry in the placement table", n.ID, n.Op)
		}
		n.Place = pl
	}
	placeWeights(g)
	return nil
}

// placeWeights applies the weight rule of the placement table: a weight
// is resident on the device when a device op reads it, else in the TEE.
// Passes that move a device op onto other weights (quantize) re-apply it.
func placeWeights(g *ir.Graph) {
	onDevice := map[ir.ValueID]bool{}
	for _, n := range g.Nodes {
		if n.Op != ir.OpWeight && n.Place == ir.Device {
			for _, in := range n.Inputs {
				onDevice[in] = true
			}
		}
	}
	for _, n := range g.Nodes {
		if n.Op == ir.OpWeight {
			n.Place = ir.TEE
			if onDevice[n.ID] {
				n.Place = ir.Device
			}
		}
	}
}
