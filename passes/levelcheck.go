package passes

import (
	"errors"
	"fmt"

	"gelo/ir"
)

// checkSecurity holds a module to the level its meta names: a full-span
// level must be met statically on every crossing (the level's family and
// energy, s >= n + d, whitening where the level whitens, no per-sequence
// stacks, no plaintext transfer) and, under a per-offload level, one mask
// slot per crossing (two crossings under one A give U_a^T U_b = X_a^T X_b).
// It names the node that breaks the level; compile and every load run it.
func checkSecurity(m *ir.Module) error {
	name := m.Meta["security"]
	l, ok := LookupLevel(name)
	if !ok {
		if name == "" || name == LevelCustom {
			return nil
		}
		return fmt.Errorf("meta security %q is not a level (want %s)", name, ir.OrList(LevelNames()))
	}
	if mk := m.Meta["mask"]; mk != l.Mask {
		return fmt.Errorf("security %s uses mask %s; the module's meta says mask %q", l.Name, l.Mask, mk)
	}
	if l.Lattice() {
		return checkLatticeLevel(m, l)
	}
	if !l.FullSpan {
		return nil
	}
	var errs []error
	for _, g := range m.Graphs {
		uses := map[int64]int{}
		for _, n := range g.Nodes {
			where := fmt.Sprintf("graph %s: %s", g.Name, describe(g, n.ID))
			bad := func(format string, a ...any) {
				errs = append(errs, fmt.Errorf("security %s: %s: %s", l.Name, where, fmt.Sprintf(format, a...)))
			}
			fam, _ := n.Attrs.Str("family")
			wh, _ := n.Attrs.Bool("whiten")
			switch n.Op {
			case ir.OpToDevice:
				bad("a plaintext transfer")
			case ir.OpShieldStack:
				e, _ := n.Attrs.Float("energy")
				k, _ := n.Attrs.Int("k_min")
				switch {
				case fam != l.Mask:
					bad("family %q, the level's is %q", fam, l.Mask)
				case !fullSpan(g, n):
					bad("k_min %d shield rows under rows of width %v: the level needs s >= n + d", k, g.Node(n.Inputs[0]).Type.Shape[1])
				case wh != l.Whiten:
					bad("whiten = %v, the level's is %v", wh, l.Whiten)
				case !l.Whiten && e != l.ShieldEnergy:
					bad("shield energy %v, the level's is %v", e, l.ShieldEnergy)
				}
			case ir.OpMask:
				if fam != l.Mask {
					bad("family %q, the level's is %q", fam, l.Mask)
				}
				s, _ := n.Attrs.Int("slot")
				uses[s]++
				if l.Cadence == PerOffload && uses[s] > 1 {
					bad("slot %d masks a second crossing: the level draws a fresh mask per crossing", s)
				}
			case ir.OpShieldStrip:
				if wh != l.Whiten {
					bad("whiten = %v, the level's is %v", wh, l.Whiten)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkLatticeLevel holds a module to level lwe: the meta names the
// level's parameters; nothing crosses but lwe ciphertexts (no plaintext
// transfer, no mask, no shield); every encode has the level's parameters
// and a slot of its own; every device linear op multiplies an encode's
// rows and every decode reads a device product of its slot's encode and
// the weight that product multiplied.
func checkLatticeLevel(m *ir.Module, l Level) error {
	if got, want := m.Meta["lwe"], LWEMeta(*l.LWE); got != want {
		return fmt.Errorf("security %s: meta lwe %q, the level's parameters are %q", l.Name, got, want)
	}
	var errs []error
	for _, g := range m.Graphs {
		encodes := map[int64]ir.ValueID{}
		for _, n := range g.Nodes {
			where := fmt.Sprintf("graph %s: %s", g.Name, describe(g, n.ID))
			bad := func(format string, a ...any) {
				errs = append(errs, fmt.Errorf("security %s: %s: %s", l.Name, where, fmt.Sprintf(format, a...)))
			}
			switch {
			case n.Op == ir.OpToDevice:
				bad("a plaintext transfer")
			case n.Op == ir.OpMask || n.Op == ir.OpShieldStack:
				bad("a row-mixing crossing under a lattice level")
			case n.Op == ir.OpLWEEncode:
				s, _ := n.Attrs.Int("slot")
				lam, _ := n.Attrs.Int("lambda")
				h, _ := n.Attrs.Int("h")
				d, _ := n.Attrs.Int("delta")
				if int(lam) != l.LWE.Lambda || int(h) != l.LWE.H || uint32(d) != l.LWE.Delta {
					bad("lambda %d, h %d, delta %d; the level's are %d, %d, %d", lam, h, d, l.LWE.Lambda, l.LWE.H, l.LWE.Delta)
				}
				if prev, dup := encodes[s]; dup {
					bad("slot %d was encoded already by %v: a slot's pads are one crossing's", s, prev)
				}
				encodes[s] = n.ID
			case n.Place == ir.Device && ir.IsLinear(n.Op):
				if x := g.Node(n.Inputs[0]); x.Op != ir.OpLWEEncode {
					bad("multiplies %s, not lwe ciphertext rows", describe(g, x.ID))
				}
			case n.Op == ir.OpLWEDecode:
				s, _ := n.Attrs.Int("slot")
				y := g.Node(n.Inputs[0])
				if y.Op == ir.OpProbe { // a checked product: the probe passes it through
					y = g.Node(y.Inputs[0])
				}
				if y.Place != ir.Device || !ir.IsLinear(y.Op) {
					bad("decodes %s, not a device product", describe(g, y.ID))
					continue
				}
				if y.Inputs[1] != n.Inputs[1] {
					bad("decodes against weight %v; the product multiplied %v", n.Inputs[1], y.Inputs[1])
				}
				enc := g.Node(y.Inputs[0])
				if es, _ := enc.Attrs.Int("slot"); enc.Op != ir.OpLWEEncode || es != s {
					bad("slot %d decodes a product of %s", s, describe(g, enc.ID))
				}
			}
		}
	}
	return errors.Join(errs...)
}
