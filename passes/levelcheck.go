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
