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

// DefaultPolicy is gelo's placement table.
func DefaultPolicy() Policy {
	p := Policy{Ops: map[string]ir.Placement{}, Why: map[string]string{}}
	set := func(pl ir.Placement, why string, ops ...string) {
		for _, op := range ops {
			p.Ops[op] = pl
			p.Why[op] = why
		}
	}
	set(ir.Device, "linear over public weights", "matmul", "lm_head")
	set(ir.Device, "public weights stacked once, resident on the device", "concat_weights")
	set(ir.TEE, "fused TEE kernel on secret activations",
		"slice_cols", "swiglu", "add_rms_norm", "take", "norm_rope")
	set(ir.TEE, "fused TEE kernel writing the secret KV cache", "norm_rope_append", "norm_rope_append_kv")
	set(ir.TEE, "secret-indexed gather", "embed")
	set(ir.TEE, "secret graph input", "input")
	set(ir.TEE, "touches the secret KV cache", "kv_append", "attention")
	set(ir.TEE, "cheap elementwise/row op on secret activations",
		"rms_norm", "qk_norm", "rope", "silu", "mul", "add", "last_row", "bias_add")
	set(ir.TEE, "boundary op: runs in the TEE on its side of the crossing",
		"shield_stack", "mask", "unmask", "shield_strip", "to_device", "to_tee",
		"mean_rows", "sub_row", "add_row")
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
	fmt.Fprintf(&b, "%-12s %-7s %s\n", "weight", "*", "public; resident on the device when a device op uses it, else in the TEE")
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
		if n.Op == "weight" {
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
		if n.Op != "weight" && n.Place == ir.Device {
			for _, in := range n.Inputs {
				onDevice[in] = true
			}
		}
	}
	for _, n := range g.Nodes {
		if n.Op == "weight" {
			n.Place = ir.TEE
			if onDevice[n.ID] {
				n.Place = ir.Device
			}
		}
	}
}
