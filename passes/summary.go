package passes

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gelo/ir"
)

// Summary is what `gelo inspect` reports about a module besides its text.
type Summary struct {
	Graphs []GraphSummary
	// ParamBytes is the size of every distinct weight the module names,
	// at the dtype the IR declares.
	ParamBytes int64
	Weights    int
	// Security is the plan's level, Claim what it promises, Insecure the
	// attack that breaks it ("" if none does).
	Security, Claim, Insecure string
	// Verify and VerifyPool are the integrity probes per device matmul
	// and their pool (0: unchecked); Products and Probed count the device
	// matmuls and the probes that check them, over every graph.
	Verify, VerifyPool, Products, Probed int
	// KVDType is the KV cache's element type (IR meta kv_dtype; f32 when
	// the IR says none).
	KVDType string
}

// GraphSummary counts one graph's ops.
type GraphSummary struct {
	Name       string
	Nodes      int
	OpCounts   map[string]int
	PlaceCount map[ir.Placement]int
	// DeviceMatmulsPerBlock maps a decoder block index to the number of
	// device-placed matmuls whose weights belong to it; -1 collects the
	// ones outside any block (the LM head).
	DeviceMatmulsPerBlock map[int]int
	// KeptLocal lists the linear ops the offload decision kept in the
	// TEE, with the reason.
	KeptLocal []string
}

// Summarize computes the summary of m.
func Summarize(m *ir.Module) Summary {
	var s Summary
	s.Security = m.Meta["security"]
	if l, ok := LookupLevel(s.Security); ok {
		s.Claim = l.Claim
	}
	s.Insecure = m.Meta["insecure"]
	s.Verify, _ = strconv.Atoi(m.Meta["verify"])
	s.VerifyPool, _ = strconv.Atoi(m.Meta["verify_pool"])
	s.KVDType = m.Meta["kv_dtype"]
	if s.KVDType == "" {
		s.KVDType = ir.F32.String()
	}
	seen := map[string]bool{}
	for _, g := range m.Graphs {
		gs := GraphSummary{Name: g.Name, Nodes: len(g.Nodes), OpCounts: map[string]int{},
			PlaceCount: map[ir.Placement]int{}, DeviceMatmulsPerBlock: map[int]int{}}
		for _, n := range g.Nodes {
			gs.OpCounts[n.Op]++
			if n.Op != ir.OpWeight {
				gs.PlaceCount[n.Place]++
			}
			if n.Op == ir.OpWeight {
				name, _ := n.Attrs.Str("name")
				if !seen[name] {
					seen[name] = true
					s.Weights++
					if e, err := n.Type.Elems(nil); err == nil {
						s.ParamBytes += weightBytes(n.Type, e)
					}
				}
			}
			if n.Place == ir.Device && ir.IsLinear(n.Op) {
				gs.DeviceMatmulsPerBlock[blockOf(g, n)]++
				s.Products++
			}
			if n.Op == ir.OpProbe {
				s.Probed++
			}
		}
		if v := m.Meta["offload."+g.Name]; v != "" {
			gs.KeptLocal = strings.Split(v, "; ")
		}
		s.Graphs = append(s.Graphs, gs)
	}
	return s
}

// blockOf finds the decoder block a matmul belongs to from the name of its
// weight operand (model.layers.N.*); -1 when it belongs to none.
// weightBytes is the storage of a weight of e elements: its rows (the
// last dim wide) with their per-row bytes (int8's scales), as
// ir.DType.MatrixBytes counts them; the element bytes for any other dtype.
func weightBytes(t ir.Type, e int) int64 {
	cols := e
	if r := t.Rank(); r > 0 && t.Shape[r-1].Size > 0 {
		cols = t.Shape[r-1].Size
	}
	if cols == 0 {
		return 0
	}
	return int64(t.DType.MatrixBytes(e/cols, cols))
}

func blockOf(g *ir.Graph, n *ir.Node) int {
	for _, in := range n.Inputs {
		w := g.Node(in)
		if w != nil && w.Op == ir.OpConcatWeights && len(w.Inputs) > 0 {
			w = g.Node(w.Inputs[0]) // stacked weights: the block of the first
		}
		if w == nil || w.Op != ir.OpWeight {
			continue
		}
		name, _ := w.Attrs.Str("name")
		rest, ok := strings.CutPrefix(name, "model.layers.")
		if !ok {
			continue
		}
		idx, _, _ := strings.Cut(rest, ".")
		if i, err := strconv.Atoi(idx); err == nil {
			return i
		}
	}
	return -1
}

// String prints the summary deterministically.
func (s Summary) String() string {
	var b strings.Builder
	if s.Security != "" {
		fmt.Fprintf(&b, "security: %s", s.Security)
		if s.Claim != "" {
			fmt.Fprintf(&b, ": %s", s.Claim)
		}
		if s.Insecure != "" {
			fmt.Fprintf(&b, " (INSECURE: %s)", s.Insecure)
		}
		b.WriteString("\n")
	}
	switch {
	case s.Verify > 0:
		fmt.Fprintf(&b, "integrity: %d of %d device matmuls checked by %d secret probes each (pool %d per weight); a failed probe aborts the session\n",
			s.Probed, s.Products, s.Verify, s.VerifyPool)
	case s.Products > 0:
		fmt.Fprintf(&b, "integrity: off (--verify 0): the %d device matmuls' results are not checked\n", s.Products)
	}
	fmt.Fprintf(&b, "weights: %d tensors, %s (%d bytes)\n", s.Weights, HumanBytes(s.ParamBytes), s.ParamBytes)
	fmt.Fprintf(&b, "kv cache: %s\n", s.KVDType)
	for _, g := range s.Graphs {
		fmt.Fprintf(&b, "graph %s: %d nodes; placement tee=%d device=%d unplaced=%d\n", g.Name, g.Nodes,
			g.PlaceCount[ir.TEE], g.PlaceCount[ir.Device], g.PlaceCount[ir.Unplaced])
		ops := make([]string, 0, len(g.OpCounts))
		for op := range g.OpCounts {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		b.WriteString("  ops:")
		for _, op := range ops {
			fmt.Fprintf(&b, " %s=%d", op, g.OpCounts[op])
		}
		b.WriteString("\n")
		b.WriteString("  device matmuls per block: ")
		b.WriteString(perBlock(g.DeviceMatmulsPerBlock))
		b.WriteString("\n")
		for _, k := range g.KeptLocal {
			fmt.Fprintf(&b, "  kept in the TEE: %s\n", k)
		}
	}
	return b.String()
}

// perBlock prints block counts compactly: "28 blocks x 7, outside blocks 1"
// when uniform, else each block.
func perBlock(m map[int]int) string {
	var blocks []int
	for k := range m {
		if k >= 0 {
			blocks = append(blocks, k)
		}
	}
	sort.Ints(blocks)
	var parts []string
	uniform := len(blocks) > 0
	for _, k := range blocks {
		if m[k] != m[blocks[0]] {
			uniform = false
		}
	}
	switch {
	case uniform:
		parts = append(parts, fmt.Sprintf("%d blocks x %d", len(blocks), m[blocks[0]]))
	case len(blocks) == 0:
		parts = append(parts, "no blocks")
	default:
		for _, k := range blocks {
			parts = append(parts, fmt.Sprintf("block %d: %d", k, m[k]))
		}
	}
	if m[-1] > 0 {
		parts = append(parts, fmt.Sprintf("outside blocks %d", m[-1]))
	}
	return strings.Join(parts, ", ")
}

// HumanBytes prints a byte count with a binary unit.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for x := n / unit; x >= unit; x /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
