package passes

import (
	"fmt"
	"sort"
	"strings"

	"gelo/ir"
)

// Memory planning: every value a program computes gets a fixed offset in
// one arena per phase, assigned from liveness so dead values' space is
// reused. Weights (resident, public) and KV caches (session state) are
// not in the arena; a kv_append result is its cache.

// ArenaAlign is the alignment of every slot, in elements (64 bytes).
const ArenaAlign = 16

// Slot is one value's place in the arena.
type Slot struct {
	Value  ir.ValueID
	Offset int // in 4-byte elements
	Size   int // in elements
	// Def and LastUse are node indices bounding the value's lifetime.
	Def, LastUse int
}

// MemPlan is the arena layout of one graph at fixed bindings.
type MemPlan struct {
	Graph string
	Bind  map[string]int
	Slots map[ir.ValueID]Slot
	// ArenaElems is the arena size; PeakLive the most elements live at once
	// (the lower bound any plan must meet).
	ArenaElems int
	PeakLive   int
}

// InArena reports whether a node's value lives in the arena: fresh values
// only. Resident weights, in-place cache updates (their cache is their
// storage) and views into a pair are not.
func InArena(n *ir.Node) bool {
	if ir.ResultOf(n.Op) != ir.Fresh {
		return false
	}
	if n.Op == ir.OpInput && n.Type.Rank() == 3 { // a KV cache: session storage
		return false
	}
	if n.Type.DType.IsQuantized() { // q8_0 rows: the backend's block buffers
		return false
	}
	return true
}

// PlanMemory assigns arena offsets for g at the given bindings. Inputs
// and outputs live for the whole program (the runtime writes and reads
// them between runs); every other value from its definition to its last
// use. Offsets are assigned best-fit in definition order, so the plan is
// deterministic.
func PlanMemory(g *ir.Graph, bind map[string]int) (*MemPlan, error) {
	p := &MemPlan{Graph: g.Name, Bind: bind, Slots: map[ir.ValueID]Slot{}}
	end := len(g.Nodes)
	last := make([]int, len(g.Nodes))
	for i, n := range g.Nodes {
		last[i] = i
		for _, in := range n.Inputs {
			last[in] = max(last[in], i)
		}
	}
	for _, o := range g.Outputs {
		last[o.Value] = end
	}
	// A view's parent, and the storage an in-place result shares (a
	// probe passes its device result through), lives as long as the view
	// or the result is read.
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		if info := ir.Op(n.Op); info != nil && (info.Result == ir.View || info.Result == ir.InPlace) {
			for _, a := range info.Aliases {
				parent := n.Inputs[a]
				last[parent] = max(last[parent], last[i])
			}
		}
	}
	// kv_append results are their cache; a value read through one lives as
	// long as the cache chain is read.
	var free []freeBlock
	top := 0
	type release struct {
		at   int
		slot Slot
	}
	var pending []release
	live, peak := 0, 0
	for i, n := range g.Nodes {
		// Release values whose last use was before this node.
		sort.SliceStable(pending, func(a, b int) bool { return pending[a].at < pending[b].at })
		for len(pending) > 0 && pending[0].at < i {
			s := pending[0].slot
			pending = pending[1:]
			free = append(free, freeBlock{s.Offset, roundUp(s.Size)})
			live -= s.Size
			free = coalesce(free)
		}
		if !InArena(n) {
			continue
		}
		size, err := n.Type.Elems(bind)
		if err != nil {
			return nil, fmt.Errorf("memplan %s: %v = %s: %w", g.Name, n.ID, n.Op, err)
		}
		want := roundUp(size)
		best := -1
		for j, b := range free {
			if b.size >= want && (best < 0 || b.size < free[best].size) {
				best = j
			}
		}
		var off int
		if best >= 0 {
			off = free[best].off
			free[best].off += want
			free[best].size -= want
			if free[best].size == 0 {
				free = append(free[:best], free[best+1:]...)
			}
		} else {
			// Grow the arena, absorbing a free block at its top.
			off = top
			if k := len(free) - 1; k >= 0 && free[k].off+free[k].size == top {
				off = free[k].off
				free = free[:k]
			}
			top = off + want
		}
		lu := last[i]
		if n.Op == ir.OpInput {
			lu = end
		}
		s := Slot{Value: n.ID, Offset: off, Size: size, Def: i, LastUse: lu}
		p.Slots[n.ID] = s
		live += size
		peak = max(peak, live)
		pending = append(pending, release{lu, s})
	}
	p.ArenaElems, p.PeakLive = top, peak
	return p, nil
}

func roundUp(n int) int { return (n + ArenaAlign - 1) / ArenaAlign * ArenaAlign }

type freeBlock struct{ off, size int }

// coalesce sorts free blocks by offset and merges neighbours.
func coalesce(free []freeBlock) []freeBlock {
	sort.Slice(free, func(a, b int) bool { return free[a].off < free[b].off })
	out := free[:0]
	for _, b := range free {
		if k := len(out) - 1; k >= 0 && out[k].off+out[k].size == b.off {
			out[k].size += b.size
			continue
		}
		out = append(out, b)
	}
	return out
}

// String summarises the plan for inspect.
func (p *MemPlan) String() string {
	keys := make([]string, 0, len(p.Bind))
	for k := range p.Bind {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%s=%d", k, p.Bind[k])
	}
	return fmt.Sprintf("%s(%s): arena %s for %d values, peak live %s (%.0f%% of the arena)",
		p.Graph, b.String(), HumanBytes(int64(p.ArenaElems)*4), len(p.Slots), HumanBytes(int64(p.PeakLive)*4),
		100*float64(p.PeakLive)/float64(max(p.ArenaElems, 1)))
}

// Check verifies that no two slots live at the same time overlap: the
// invariant a plan must hold, tested and run after planning in tests.
func (p *MemPlan) Check() error {
	slots := make([]Slot, 0, len(p.Slots))
	for _, s := range p.Slots {
		slots = append(slots, s)
	}
	sort.Slice(slots, func(a, b int) bool { return slots[a].Offset < slots[b].Offset })
	for i := range slots {
		for j := i + 1; j < len(slots) && slots[j].Offset < slots[i].Offset+slots[i].Size; j++ {
			a, b := slots[i], slots[j]
			if a.Def <= b.LastUse && b.Def <= a.LastUse {
				return fmt.Errorf("memplan %s: %v [%d,+%d) and %v [%d,+%d) overlap while both live", p.Graph,
					a.Value, a.Offset, a.Size, b.Value, b.Offset, b.Size)
			}
		}
		if slots[i].Offset+slots[i].Size > p.ArenaElems {
			return fmt.Errorf("memplan %s: %v ends past the arena", p.Graph, slots[i].Value)
		}
	}
	return nil
}
