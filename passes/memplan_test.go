package passes

import (
	"strings"
	"testing"
)

func TestPlanMemory(t *testing.T) {
	m := traced(t)
	if err := Pipeline(ProtectOptions{Mask: MaskNone, Cadence: PerForward}).Run(m); err != nil {
		t.Fatal(err)
	}
	for _, g := range m.Graphs {
		bind := map[string]int{"n": 37, "B": 3, "T": 64}
		p, err := PlanMemory(g, bind)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Check(); err != nil {
			t.Fatal(err)
		}
		var total int
		for _, s := range p.Slots {
			total += s.Size
			if s.Offset%ArenaAlign != 0 {
				t.Errorf("%v at offset %d is not aligned", s.Value, s.Offset)
			}
		}
		if p.PeakLive > p.ArenaElems || p.ArenaElems >= total {
			t.Errorf("%s: arena %d, peak %d, sum of values %d: no reuse happened", g.Name, p.ArenaElems, p.PeakLive, total)
		}
		for _, n := range g.Nodes {
			_, in := p.Slots[n.ID]
			if in != InArena(n) || (in && (n.Op == "weight" || n.Op == "kv_append" || n.Op == "take")) {
				t.Errorf("%v = %s: in arena %v", n.ID, n.Op, in)
			}
		}
		again, _ := PlanMemory(g, bind)
		for v, s := range p.Slots {
			if again.Slots[v] != s {
				t.Fatalf("plan is not deterministic at %v", v)
			}
		}
	}
}

func TestPlanMemoryUnboundDim(t *testing.T) {
	m := traced(t)
	_, err := PlanMemory(m.Graph("prefill"), map[string]int{"T": 8})
	if err == nil || !strings.Contains(err.Error(), `"n" is not bound`) {
		t.Fatalf("plan with n unbound: %v", err)
	}
}
