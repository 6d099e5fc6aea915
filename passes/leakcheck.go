package passes

import (
	"errors"
	"fmt"
	"strings"

	"gelo/ir"
)

// Leakcheck is a verifier, not an optimisation: it fails compilation when
// a secret value reaches a device op unmasked, when a secret-indexed
// gather is placed on the device, or when a TEE op reads a device result
// that did not come back through unmask (or to_tee). With allowInsecure
// (only for the mask=none baseline) plaintext crossings are recorded in
// the module's "insecure" meta entry instead of failing; every other
// violation still fails.
func Leakcheck(allowInsecure bool) Pass {
	return Pass{Name: "leakcheck", Doc: "fail if any secret reaches the device unmasked",
		Run: func(m *ir.Module) error {
			var leaks, errs []error
			for _, g := range m.Graphs {
				l, e := leakcheck(g)
				leaks = append(leaks, l...)
				errs = append(errs, e...)
			}
			if len(errs) > 0 {
				return errors.Join(append(errs, leaks...)...)
			}
			if err := checkSecurity(m); err != nil {
				return err
			}
			if len(leaks) == 0 {
				delete(m.Meta, "insecure")
				if why := brokenFamilies(m); why != "" {
					m.Meta["insecure"] = why
				}
				return nil
			}
			if !allowInsecure {
				return errors.Join(leaks...)
			}
			m.Meta["insecure"] = fmt.Sprintf("mask none: %d secret values cross to the device in plaintext", len(leaks))
			return nil
		}}
}

// brokenFamilies names the attacks that break m's crossings, or "": a
// family an attack breaks whatever the shield, and any shield_stack with
// fewer shield rows than its width (the row space stays visible), per
// family, in the order first met.
func brokenFamilies(m *ir.Module) string {
	seen := map[string]bool{}
	var parts []string
	add := func(name, why string) {
		if !seen[name+why] {
			seen[name+why] = true
			parts = append(parts, "mask "+name+": "+why)
		}
	}
	for _, g := range m.Graphs {
		for _, n := range g.Nodes {
			switch n.Op {
			case ir.OpMask:
				name, _ := n.Attrs.Str("family")
				if f, ok := ir.LookupMaskFamily(name); ok && f.Insecure != "" {
					add(name, f.Insecure)
				}
			case ir.OpShieldStack:
				name, _ := n.Attrs.Str("family")
				if !fullSpan(g, n) {
					add(name, ir.RowSpaceBreak)
				}
			}
		}
	}
	// A full-span level an attack breaks, when anything crosses under it.
	if l, ok := LookupLevel(m.Meta["security"]); ok && l.FullSpan && l.Insecure != "" && crosses(m) {
		parts = append(parts, "security "+l.Name+": "+l.Insecure)
	}
	return strings.Join(parts, "; ")
}

// crosses reports whether any graph of m sends a masked payload.
func crosses(m *ir.Module) bool {
	for _, g := range m.Graphs {
		for _, n := range g.Nodes {
			if n.Op == ir.OpMask {
				return true
			}
		}
	}
	return false
}

// fullSpan reports whether a shield_stack's stack has at least as many
// shield rows as its width (s >= n + d): the payload has full column rank.
func fullSpan(g *ir.Graph, n *ir.Node) bool {
	k, _ := n.Attrs.Int("k_min")
	if pr, _ := n.Attrs.Bool("per_row"); pr {
		return false // per-sequence stacks are one row plus its own few shield rows
	}
	x := g.Node(n.Inputs[0])
	return x != nil && len(x.Type.Shape) == 2 && !x.Type.Shape[1].IsSym() && k >= int64(x.Type.Shape[1].Size)
}

func describe(g *ir.Graph, v ir.ValueID) string {
	n := g.Node(v)
	if n == nil {
		return v.String()
	}
	if name, ok := n.Attrs.Str("name"); ok {
		return fmt.Sprintf("%v = %s %q", v, n.Op, name)
	}
	return fmt.Sprintf("%v = %s", v, n.Op)
}

// leakcheck returns plaintext crossings (leaks) and hard errors apart.
func leakcheck(g *ir.Graph) (leaks, errs []error) {
	for _, n := range g.Nodes {
		if n.Op == ir.OpWeight {
			continue
		}
		where := fmt.Sprintf("graph %s: %s", g.Name, describe(g, n.ID))
		if n.Place == ir.Unplaced {
			errs = append(errs, fmt.Errorf("%s: not placed (run the place pass)", where))
			continue
		}
		if n.Place == ir.Device {
			if ir.ClassOf(n.Op) == ir.ClassGather {
				errs = append(errs, fmt.Errorf("%s: secret-indexed gather placed on the device (the index itself leaks)", where))
			}
			for _, in := range n.Inputs {
				src := g.Node(in)
				if src.Secrecy == ir.Secret {
					leaks = append(leaks, fmt.Errorf("%s: on the device, reads secret %s unmasked", where, describe(g, in)))
				}
			}
			continue
		}
		if info := ir.Op(n.Op); info != nil && (info.Crossing == ir.ToTEE || info.ChecksDevice) {
			continue // unmask, to_tee: the way back; a probe: a check
		}
		for _, in := range n.Inputs {
			src := g.Node(in)
			if src.Op != ir.OpWeight && (src.Place == ir.Device || checksDevice(src.Op)) {
				errs = append(errs, fmt.Errorf("%s: in the TEE, reads device result %s without unmask", where, describe(g, in)))
			}
		}
	}
	return leaks, errs
}

// checksDevice reports whether op is a probe: its result is the device's
// value, passed through.
func checksDevice(op string) bool {
	info := ir.Op(op)
	return info != nil && info.ChecksDevice
}
