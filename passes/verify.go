package passes

import (
	"errors"
	"fmt"

	"gelo/ir"
)

// Verify checks a compiled module whatever its origin (compiled now, IR
// text, a plan file), before it is lowered: the IR is valid; leakcheck
// passes (no secret reaches the device unmasked, no secret-indexed gather
// there, no device result read without unmask), except that a module
// whose meta says mask none may cross in plaintext; the module carries
// exactly the insecure label the compiler would give it; and every unmask
// undoes the mask its device product was computed from (same slot and
// family). The binary is what is measured and attested; a plan is data,
// so the binary must refuse a plan its compiler would refuse.
func Verify(m *ir.Module) error {
	if err := ir.ValidateModule(m); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	var leaks, errs []error
	for _, g := range m.Graphs {
		l, e := leakcheck(g)
		leaks = append(leaks, l...)
		errs = append(errs, e...)
		errs = append(errs, checkPairing(g)...)
	}
	errs = append(errs, checkProbes(m)...)
	if len(errs) > 0 {
		return fmt.Errorf("verify: %w", errors.Join(append(leaks, errs...)...))
	}
	if err := checkSecurity(m); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	want := brokenFamilies(m)
	if len(leaks) > 0 {
		if m.Meta["mask"] != MaskNone {
			return fmt.Errorf("verify: mask %q, yet: %w", m.Meta["mask"], errors.Join(leaks...))
		}
		want = fmt.Sprintf("mask none: %d secret values cross to the device in plaintext", len(leaks))
	}
	if got := m.Meta["insecure"]; got != want {
		return fmt.Errorf("verify: the module's insecure label is %q; its crossings and mask families call for %q", got, want)
	}
	return nil
}

// checkPairing finds, for every unmask, the mask its input was computed
// from (through device ops), and refuses a missing one or one with another
// slot or family: such a plan runs and silently decodes wrong tokens.
func checkPairing(g *ir.Graph) []error {
	var errs []error
	for _, n := range g.Nodes {
		if n.Op != ir.OpUnmask {
			continue
		}
		where := fmt.Sprintf("graph %s: %s", g.Name, describe(g, n.ID))
		m := maskOf(g, n.Inputs[0])
		if m == nil {
			errs = append(errs, fmt.Errorf("%s: its input does not come from a mask through device ops", where))
			continue
		}
		us, _ := n.Attrs.Int("slot")
		ms, _ := m.Attrs.Int("slot")
		uf, _ := n.Attrs.Str("family")
		mf, _ := m.Attrs.Str("family")
		if us != ms || uf != mf {
			errs = append(errs, fmt.Errorf("%s: slot %d family %q undoes %s, which is slot %d family %q",
				where, us, uf, describe(g, m.ID), ms, mf))
		}
	}
	return errs
}

// maskOf walks back from a device value along first operands to the mask
// that produced its rows, or nil.
func maskOf(g *ir.Graph, v ir.ValueID) *ir.Node {
	for range len(g.Nodes) {
		n := g.Node(v)
		if n == nil || len(n.Inputs) == 0 {
			return nil
		}
		if n.Op == ir.OpMask {
			return n
		}
		if n.Place != ir.Device && !checksDevice(n.Op) {
			return nil
		}
		v = n.Inputs[0]
	}
	return nil
}
