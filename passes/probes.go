package passes

import (
	"fmt"
	"strconv"

	"gelo/ir"
)

// Integrity probes (Freivalds checks): defaults and bounds of --verify.
const (
	// DefaultVerify is the probes per crossing a plan gets unless told
	// otherwise, chosen from the measurements in the README: four secret
	// vectors catch any error as large as the row itself with probability
	// 1 - 7e-8 and cost under 4 % of a 0.6B decode step (two: 2.6e-4, 1.5-2.7 %).
	DefaultVerify = 4
	// MaxVerify bounds --verify.
	MaxVerify = 32
	// DefaultProbePool is the pool of secret vectors per weight the probes
	// of a pass are drawn from: W r is precomputed for each at load.
	DefaultProbePool = 8
)

// checkVerify validates the probe options.
func (o ProtectOptions) checkVerify() error {
	if o.Verify < 0 || o.Verify > MaxVerify {
		return fmt.Errorf("--verify %d: want 0 (off) to %d probes per crossing", o.Verify, MaxVerify)
	}
	if o.Verify > 0 {
		if p := o.probePool(); p < o.Verify || p > ir.MaxProbePool {
			return fmt.Errorf("--verify-pool %d: want %d (--verify) to %d", p, o.Verify, ir.MaxProbePool)
		}
	}
	return nil
}

// probePool is the pool size the probes draw from (the default for 0).
func (o ProtectOptions) probePool() int {
	if o.VerifyPool > 0 {
		return o.VerifyPool
	}
	return DefaultProbePool
}

// Probes is the verify-probes pass: after every device matmul it inserts
// a probe that checks the device's product in the device's own
// coordinates (the payload it was sent, before any unmask), so a wrong
// result aborts the pass before anything computed from it can cross
// again. The probe passes the product through: its users now read it.
func Probes(k, pool int) Pass {
	return Pass{Name: "verify-probes", Doc: "check every device matmul with secret Freivalds probes before its result is used",
		Run: func(m *ir.Module) error {
			for _, g := range m.Graphs {
				if err := probe(g, k, pool); err != nil {
					return fmt.Errorf("graph %s: %w", g.Name, err)
				}
			}
			m.Meta["verify"] = strconv.Itoa(k)
			m.Meta["verify_pool"] = strconv.Itoa(pool)
			return nil
		}}
}

// probe rebuilds g with a probe after each device matmul; values keep
// their order, so the probe runs right after its product.
func probe(g *ir.Graph, k, pool int) error {
	old := g.Nodes
	ng := &ir.Graph{Name: g.Name, Params: g.Params}
	remap := make([]ir.ValueID, len(old))
	pass := ir.ValueID(-1)
	for _, n := range old {
		if n.Op == ir.OpInput {
			if name, _ := n.Attrs.Str("name"); name == ir.PassInput {
				pass = -2 // present: remapped when copied
			}
		}
	}
	if pass == -1 {
		// mask none: no counter yet; the probes need one to draw from.
		v, err := ng.AddDeclared(ir.OpInput, ir.Attrs{"name": ir.PassInput}, ir.T(ir.I32, 2))
		if err != nil {
			return err
		}
		ng.Nodes[v].Place, ng.Nodes[v].Secrecy = ir.TEE, ir.Secret
		pass = v
	}
	for _, n := range old {
		c := *n
		c.ID = ir.ValueID(len(ng.Nodes))
		c.Inputs = make([]ir.ValueID, len(n.Inputs))
		for i, in := range n.Inputs {
			c.Inputs[i] = remap[in]
		}
		ng.Nodes = append(ng.Nodes, &c)
		remap[n.ID] = c.ID
		if n.Op == ir.OpInput {
			if name, _ := n.Attrs.Str("name"); name == ir.PassInput {
				pass = c.ID
			}
		}
		if n.Place != ir.Device || !ir.IsLinear(n.Op) {
			continue
		}
		if len(c.Inputs) != 2 {
			return fmt.Errorf("%v = %s on the device takes a bias; probes check bias-free products", n.ID, n.Op)
		}
		v, err := ng.Add(ir.OpProbe, ir.Attrs{"k": int64(k), "pool": int64(pool)}, c.ID, c.Inputs[0], c.Inputs[1], pass)
		if err != nil {
			return fmt.Errorf("%v = %s: %w", n.ID, n.Op, err)
		}
		ng.Nodes[v].Place = ir.TEE
		remap[n.ID] = v
	}
	for i, o := range g.Outputs {
		g.Outputs[i].Value = remap[o.Value]
	}
	g.Nodes = ng.Nodes
	return nil
}

// checkProbes refuses a module whose probes are not what its meta says:
// with verify K > 0, every device matmul is read only through one probe of
// K draws that checks that product against that payload and weight; with
// none, no probe at all. A plan that claims checks it lacks is refused,
// as its compiler would never make it.
func checkProbes(m *ir.Module) []error {
	k := 0
	if s, ok := m.Meta["verify"]; ok {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > MaxVerify {
			return []error{fmt.Errorf("meta verify %q: want 0 to %d", s, MaxVerify)}
		}
		k = v
	}
	var errs []error
	for _, g := range m.Graphs {
		users := make([][]*ir.Node, len(g.Nodes))
		for _, n := range g.Nodes {
			for _, in := range n.Inputs {
				if g.Node(in) != nil {
					users[in] = append(users[in], n)
				}
			}
		}
		outputs := map[ir.ValueID]bool{}
		for _, o := range g.Outputs {
			outputs[o.Value] = true
		}
		for _, n := range g.Nodes {
			where := fmt.Sprintf("graph %s: %s", g.Name, describe(g, n.ID))
			switch {
			case n.Op == ir.OpProbe:
				if k == 0 {
					errs = append(errs, fmt.Errorf("%s: a probe in a module whose meta says verify 0", where))
					continue
				}
				y := g.Node(n.Inputs[0])
				if y == nil || y.Place != ir.Device || !ir.IsLinear(y.Op) ||
					y.Inputs[0] != n.Inputs[1] || y.Inputs[1] != n.Inputs[2] {
					errs = append(errs, fmt.Errorf("%s: does not check a device product against its own payload and weight", where))
				}
				if kk, _ := n.Attrs.Int("k"); kk != int64(k) {
					errs = append(errs, fmt.Errorf("%s: %d probes, the module says verify %d", where, kk, k))
				}
			case k > 0 && n.Place == ir.Device && ir.IsLinear(n.Op):
				us := users[n.ID]
				probes := 0
				for _, u := range us {
					if u.Op == ir.OpProbe && u.Inputs[0] == n.ID {
						probes++
					}
				}
				if probes != 1 || len(us) != 1 || outputs[n.ID] {
					errs = append(errs, fmt.Errorf("%s: under verify %d its result must be read through exactly one probe", where, k))
				}
			}
		}
	}
	return errs
}
