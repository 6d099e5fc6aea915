package passes

import (
	"regexp"
	"strings"
	"testing"

	"gelo/formats"
	"gelo/ir"
)

// TestVerifyAcceptsCompiled: every module the pipeline compiles verifies.
func TestVerifyAcceptsCompiled(t *testing.T) {
	for _, mask := range []string{MaskNone, MaskHaar, MaskHD3} {
		for _, cad := range []string{PerForward, PerOffload} {
			for _, w := range []string{formats.F32, formats.Q8_0} {
				for _, off := range [][]string{nil, Unfused()} {
					po := DefaultProtect()
					po.Mask, po.Cadence, po.Weights = mask, cad, w
					m := traced(t)
					if err := Pipeline(po, off...).Run(m); err != nil {
						t.Fatal(err)
					}
					if err := Verify(m); err != nil {
						t.Errorf("mask %s cadence %s weights %s no-fuse %v: %v", mask, cad, w, off, err)
					}
				}
			}
		}
	}
}

// edit compiles the default plan, applies a text edit to its IR (and drops
// the digest line, which the edit invalidates) and parses it back.
func edit(t *testing.T, po ProtectOptions, f func(string) string) *ir.Module {
	t.Helper()
	m := traced(t)
	if err := Pipeline(po).Run(m); err != nil {
		t.Fatal(err)
	}
	text := f(ir.Print(m))
	text = regexp.MustCompile(`(?m)^digest .*\n`).ReplaceAllString(text, "")
	out, err := ir.Parse(text)
	if err != nil {
		t.Fatalf("edited IR does not parse: %v", err)
	}
	return out
}

func TestVerifyRefusesEditedPlans(t *testing.T) {
	// A device matmul reading the shield-stacked rows before the mask, with
	// every secrecy annotation made consistent again (what a careful editor
	// of the IR text or the plan file would write).
	m := traced(t)
	if err := Pipeline(DefaultProtect()).Run(m); err != nil {
		t.Fatal(err)
	}
	g := m.Graphs[0]
	edited := false
	for _, n := range g.Nodes {
		if n.Op == ir.OpMatMul && n.Place == ir.Device {
			if src := g.Node(n.Inputs[0]); src.Op == ir.OpMask {
				n.Inputs[0] = src.Inputs[0]
				edited = true
				break
			}
		}
	}
	if !edited {
		t.Fatal("no masked device matmul")
	}
	for _, n := range g.Nodes {
		n.Secrecy = ir.InferSecrecy(g, n)
	}
	if err := Verify(m); err == nil || !strings.Contains(err.Error(), "reads secret") || !strings.Contains(err.Error(), "shield_stack") {
		t.Errorf("a matmul on the unmasked stack: %v", err)
	}

	// An unmask given another slot than its mask.
	m = edit(t, DefaultProtect(), func(s string) string {
		re := regexp.MustCompile(`(?m)^(  %\d+ = unmask %\d+, %\d+ \{family="hd3", slot=)0\}`)
		return re.ReplaceAllString(s, "${1}7}")
	})
	if err := Verify(m); err == nil || !strings.Contains(err.Error(), "slot 7") {
		t.Errorf("an unmask with another slot: %v", err)
	}

	// The insecure label removed from an hd3 plan.
	m = edit(t, DefaultProtect(), func(s string) string {
		return regexp.MustCompile(`(?m)^meta insecure = .*\n`).ReplaceAllString(s, "")
	})
	if err := Verify(m); err == nil || !strings.Contains(err.Error(), "insecure label") {
		t.Errorf("a dropped insecure label: %v", err)
	}

	// The baseline relabelled as hd3: plaintext crossings under a protected name.
	none := DefaultProtect()
	none.Mask = MaskNone
	m = edit(t, none, func(s string) string {
		s = strings.Replace(s, `meta security = "none"`, `meta security = "gelo-8x4"`, 1)
		return strings.Replace(s, `meta mask = "none"`, `meta mask = "hd3"`, 1)
	})
	if err := Verify(m); err == nil || !strings.Contains(err.Error(), "reads secret") {
		t.Errorf("plaintext crossings under meta mask hd3: %v", err)
	}
}

// TestVerifyHoldsLevels: a plan labelled with a full-span level is refused,
// naming the node, when one crossing carries too few shield rows, shares a
// mask slot with another, or drops the whitening; the same edits of the
// security label itself are refused too.
func TestVerifyHoldsLevels(t *testing.T) {
	for _, name := range []string{LevelSpan, LevelWhiten, LevelExact} {
		l, _ := LookupLevel(name)
		po := l.Options(DefaultProtect())
		po.OffloadAll = true
		m := traced(t)
		if err := Pipeline(po).Run(m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := Verify(m); err != nil {
			t.Fatalf("%s: the compiled plan: %v", name, err)
		}
		if got, want := m.Meta["insecure"] != "", l.Insecure != ""; got != want {
			t.Errorf("%s: labelled insecure %v (%q), the level says %v", name, got, m.Meta["insecure"], want)
		}
		for _, c := range []struct {
			what, re, repl, want string
		}{
			{"too few shield rows", `k_min=(64|192)`, "k_min=8", "the level needs s >= n + d"},
			{"a shared mask slot", `slot=1\b`, "slot=0", "masks a second crossing"},
			{"another level's label", `meta security = "[a-z]+"`, `meta security = "gelo-8x4"`, "security gelo-8x4 uses mask hd3"},
		} {
			if name != LevelExact && c.what == "another level's label" {
				continue // span is hd3 too: its relabelling is caught by the insecure label instead
			}
			m := edit(t, po, func(s string) string {
				return regexp.MustCompile(c.re).ReplaceAllString(s, c.repl)
			})
			if err := Verify(m); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, %s: %v, want %q", name, c.what, err, c.want)
			}
		}
		if l.Whiten {
			m := edit(t, po, func(s string) string { return strings.ReplaceAll(s, ", whiten=true", "") })
			if err := Verify(m); err == nil || !strings.Contains(err.Error(), "whiten = false") {
				t.Errorf("%s without whitening: %v", name, err)
			}
		}
	}
}

// Verify refuses a module whose probes are not what its meta claims: a
// crossing left unchecked, a probe with fewer draws, probes under a meta
// that says none, a probe of another product; and accepts the compiled
// module with and without probes.
func TestVerifyChecksProbes(t *testing.T) {
	po := DefaultProtect()
	po.Verify = 2
	m := traced(t)
	if err := Pipeline(po).Run(m); err != nil {
		t.Fatal(err)
	}
	if err := Verify(m); err != nil {
		t.Fatalf("compiled module with probes: %v", err)
	}
	edits := map[string]func(m *ir.Module) bool{
		"a crossing unchecked": func(m *ir.Module) bool {
			for _, g := range m.Graphs {
				for _, n := range g.Nodes {
					if n.Op == ir.OpUnmask && g.Node(n.Inputs[0]).Op == ir.OpProbe {
						n.Inputs[0] = g.Node(n.Inputs[0]).Inputs[0]
						return true
					}
				}
			}
			return false
		},
		"fewer draws": func(m *ir.Module) bool {
			for _, g := range m.Graphs {
				for _, n := range g.Nodes {
					if n.Op == ir.OpProbe {
						n.Attrs["k"] = int64(1)
						return true
					}
				}
			}
			return false
		},
		"meta says none": func(m *ir.Module) bool { m.Meta["verify"] = "0"; return true },
		"another product": func(m *ir.Module) bool {
			for _, g := range m.Graphs {
				var probes []*ir.Node
				for _, n := range g.Nodes {
					if n.Op == ir.OpProbe {
						probes = append(probes, n)
					}
				}
				for i, a := range probes {
					for _, b := range probes[i+1:] {
						if g.Node(a.Inputs[2]).Type.Equal(g.Node(b.Inputs[2]).Type) {
							b.Inputs[2] = a.Inputs[2] // layer 1's product checked against layer 0's weight
							return true
						}
					}
				}
			}
			return false
		},
	}
	for name, f := range edits {
		c := traced(t)
		if err := Pipeline(po).Run(c); err != nil {
			t.Fatal(err)
		}
		if !f(c) {
			t.Fatalf("%s: the edit found nothing to change", name)
		}
		if err := Verify(c); err == nil {
			t.Errorf("%s: Verify accepts it", name)
		} else {
			t.Logf("%s: %v", name, firstLine(err.Error()))
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
