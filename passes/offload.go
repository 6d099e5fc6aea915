package passes

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"gelo/ir"
	"gelo/lwe"
)

// Planning defaults of the offload decision: the rows a crossing is
// costed at when its row count is symbolic.
const (
	// DefaultPlanRows is the prefill length (n) decisions are made for.
	DefaultPlanRows = 2040
	// DefaultPlanBatch is the decode batch (B) decisions are made for.
	DefaultPlanBatch = 1
	// DeviceSpeedup is the device's multiply-add rate over the TEE's in
	// the cost model: an accelerator against a few enclave cores.
	DeviceSpeedup = 50.0
)

// Cost is one linear op's offload decision under a full-span level: the
// TEE's work (multiply-add equivalents) to protect it, the device's work
// in TEE time, and the TEE's work to compute it itself.
type Cost struct {
	Op           string
	Rows         int // the rows it was costed at
	D, DOut      int
	S            int     // the protected stack's rows
	Protect      float64 // TEE work of a secure offload: shield, mix, unmix (and whitening, Haar sampling)
	Device       float64 // device multiply-adds, in TEE time (/ DeviceSpeedup)
	Local        float64 // TEE work of the matmul itself
	Offload      bool
	RowsSymbolic string // "n" or "B" when Rows is a planning figure
	// Speedup is the device's rate over the TEE's that Device assumes
	// (DeviceSpeedup unless the plan said otherwise: At).
	Speedup float64
	// Lattice: costed as an lwe crossing (Protect is pads, encode and
	// decode; S is the rows).
	Lattice bool
}

// At is c for a device speedup times the TEE's multiply-add rate (the
// decision taken again): at 1 or below the device is the TEE's own cores
// and its work adds to the TEE's, so nothing secured can pay.
func (c Cost) At(speedup float64) Cost {
	if speedup <= 0 || speedup == c.Speedup {
		return c
	}
	c.Device *= c.Speedup / speedup
	c.Speedup = speedup
	c.Offload = c.Protect+c.Device < c.Local
	return c
}

// Reason is the decision in one line, as inspect prints it.
func (c Cost) Reason() string {
	at := fmt.Sprintf("%d", c.Rows)
	if c.RowsSymbolic != "" {
		at = fmt.Sprintf("%s=%d (planned)", c.RowsSymbolic, c.Rows)
	}
	verdict := "TEE-local: securing it costs the TEE more than computing it"
	if c.Speedup <= 1 {
		verdict = "TEE-local: the device runs on the TEE's own cores (no accelerator), so securing it can only add work"
	}
	if c.Offload {
		verdict = "offload"
	}
	if c.Lattice {
		return fmt.Sprintf("%s %dx%d at rows %s: pads+encode+decode %.3g + device %.3g vs local %.3g multiply-adds: %s",
			c.Op, c.D, c.DOut, at, c.Protect, c.Device, c.Local, verdict)
	}
	return fmt.Sprintf("%s %dx%d at rows %s, s=%d: protect %.3g + device %.3g vs local %.3g multiply-adds: %s",
		c.Op, c.D, c.DOut, at, c.S, c.Protect, c.Device, c.Local, verdict)
}

// CostOf prices one linear op of rows x d -> d_out under level l (any
// level: none sends the rows as they are; a level that is not full-span
// stacks its k shield rows, per sequence when perSequence).
func CostOf(l Level, op string, rows, d, dout int) Cost { return costOf(l, op, rows, d, dout, false) }

// CostOfBatch is CostOf for a decode batch of rows sequences under the
// per-sequence topology (each row its own stack and mask) when
// perSequence, else one stack for the batch.
func CostOfBatch(l Level, op string, rows, d, dout int, perSequence bool) Cost {
	return costOf(l, op, rows, d, dout, perSequence)
}

func costOf(l Level, op string, rows, d, dout int, perSequence bool) Cost {
	if l.Lattice() {
		return latticeCost(*l.LWE, op, rows, d, dout)
	}
	groups, data := 1, rows
	if perSequence && !l.FullSpan {
		groups, data = rows, 1
	}
	k := l.ShieldK
	if l.FullSpan {
		k = max(k, d)
	}
	s := data + k
	if f, ok := ir.LookupMaskFamily(l.Mask); ok && f.PowerOfTwo {
		s = 1 << bits.Len(uint(s-1))
	}
	if l.Mask == MaskNone {
		s = data
	}
	fs, fd, fo, fr, fg := float64(s), float64(d), float64(dout), float64(rows), float64(groups)
	c := Cost{Op: op, Rows: rows, D: d, DOut: dout, S: s * groups, Local: fr * fd * fo, Device: fg * fs * fd * fo / DeviceSpeedup, Speedup: DeviceSpeedup}
	switch l.Mask {
	case MaskHD3:
		lg := math.Log2(fs)
		c.Protect = fg * (3*fs*lg*(fd+fo) + 4*(fs-float64(data))*fd) // three rounds each way, Gaussian shield rows
	case MaskHaar:
		c.Protect = fg * (4.0/3*fs*fs*fs + fs*fs*(fd+fo)) // QR sample per crossing, A X and A^T Y
	}
	if l.Whiten { // the eigendecomposition on the smaller side and S
		if rows <= d {
			c.Protect += fr*fr*fd + fr*fd*fd + 4*fr*fr*fr
		} else {
			c.Protect += fr*fd*fd + 4*fd*fd*fd
		}
	}
	c.Offload = c.Protect+c.Device < c.Local
	return c
}

// PadWordCost is what one word addition of an lwe pad costs in
// multiply-adds of a TEE-local int8 matmul, and CodeWordCost what one
// word of encode or decode costs (a norm, a scale, a rounding, an
// addition; a subtraction, the range check, a rescale). Measured by the lwe
// suite (gelo bench --suite lwe, docs/performance.md) on a 2-core AVX2
// VM, both on the cores the TEE-local pass runs on: at the 8B widths pads
// at 5.2-9.5 G word additions a second, encode and decode at 1.6-5.8 ns a
// word, the int8 matmul at 32-36 G multiply-adds a second batched (17 at
// B = 1, where it is memory-bound); at the 0.6B widths 4.7-8.6 G, 4.6 ns,
// 26-37 G. So 5 and 100, the batched ratios: right where the matmul is
// batched, cautious at prefill and B = 1 (an earlier 10 counted the pads
// at one core's speed against a two-core matmul, and 4 a word of encode
// was 25 times too cheap). Read again on 2026-12-08, after the pads' tiled
// layout and the vectorised encode and decode: a pad's word addition 1.5
// to 3.5 multiply-adds, a word of encode or decode 23 to 128 (the pads
// read from memory), so both still stand, cautious.
const (
	PadWordCost  = 5.0
	CodeWordCost = 100.0
)

// latticeCost prices one linear op under an lwe level. Per row the TEE
// makes a pad, m = A s + e and u = H s (h column additions: h (d + d_out)
// word additions, each PadWordCost multiply-adds), encodes d words and
// decodes d_out (CodeWordCost each); the device multiplies rows x d x
// d_out words. A fused op (q, k and v under one ciphertext) is one linear
// op here, so its pad is counted once. The rows do not share anything, so
// the decision does not depend on them; it pays when
// d d_out > (PadWordCost h + CodeWordCost)(d + d_out) + d d_out / DeviceSpeedup,
// i.e. at widths well above h (qwen3-tiny's 64-wide projections stay in
// the TEE; 0.6B's 1024 and up offload).
func latticeCost(p lwe.Params, op string, rows, d, dout int) Cost {
	fr, fd, fo, fh := float64(rows), float64(d), float64(dout), float64(p.H)
	c := Cost{Op: op, Rows: rows, D: d, DOut: dout, S: rows, Lattice: true, Local: fr * fd * fo, Device: fr * fd * fo / DeviceSpeedup, Speedup: DeviceSpeedup,
		Protect: fr * (PadWordCost*fh + CodeWordCost) * (fd + fo)}
	c.Offload = c.Protect+c.Device < c.Local
	return c
}

// Offload decides, for every linear op on the device under a full-span
// level, between a secure offload and a TEE-local matmul, from its rows
// (planning figures for symbolic n and B), widths and the cost model: a
// full-span crossing costs the TEE O(s log s (d + d_out)) at best, so it
// pays only for many rows (prefill, large batches), never at B = 1 decode.
// Ops kept in the TEE are listed in meta "offload.<graph>" with the
// reason. Runs after fuse (stacked projections are costed as one) and
// before quantize (a TEE-local op keeps f32 weights).
func Offload(o ProtectOptions) Pass {
	return Pass{Name: "offload", Doc: "keep in the TEE each linear op whose secure offload costs more than computing it",
		Run: func(m *ir.Module) error {
			l := o.level()
			if !l.FullSpan && !l.Lattice() {
				return nil
			}
			for _, g := range m.Graphs {
				var local []string
				for _, n := range g.Nodes {
					if !ir.IsLinear(n.Op) || n.Place != ir.Device {
						continue
					}
					c, err := costNode(g, n, l, o)
					if err != nil {
						return fmt.Errorf("graph %s: %s: %w", g.Name, describe(g, n.ID), err)
					}
					if len(o.OffloadOnly) > 0 {
						if name, _ := ir.WeightName(g, n.Inputs[1]); !hasAnyPrefix(name, o.OffloadOnly) {
							n.Place = ir.TEE
							local = append(local, fmt.Sprintf("%v %s: not asked for (offload only %s)", n.ID, n.Op, strings.Join(o.OffloadOnly, ", ")))
						}
						continue
					}
					if !c.Offload && !o.OffloadAll {
						n.Place = ir.TEE
						local = append(local, fmt.Sprintf("%v %s", n.ID, c.Reason()))
					}
				}
				if len(local) > 0 {
					m.Meta["offload."+g.Name] = strings.Join(local, "; ")
				}
				placeStacked(g)
				placeWeights(g)
			}
			m.Meta["offload_plan"] = fmt.Sprintf("n=%d,B=%d,device_speedup=%g", o.planRows(), o.planBatch(), o.deviceSpeedup())
			if o.OffloadAll {
				m.Meta["offload_plan"] = "all"
			}
			if len(o.OffloadOnly) > 0 {
				m.Meta["offload_plan"] = "only " + strings.Join(o.OffloadOnly, ",")
			}
			return nil
		}}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// costNode prices a linear node at its rows (planning figures for n, B).
func costNode(g *ir.Graph, n *ir.Node, l Level, o ProtectOptions) (Cost, error) {
	x, w := g.Node(n.Inputs[0]), g.Node(n.Inputs[1])
	if len(x.Type.Shape) != 2 || len(w.Type.Shape) != 2 {
		return Cost{}, fmt.Errorf("linear op operands are not matrices")
	}
	r := x.Type.Shape[0]
	rows, sym := r.Size, ""
	if r.IsSym() {
		sym = r.Sym
		switch r.Sym {
		case "n":
			rows = o.planRows()
		case "B":
			rows = o.planBatch()
		default:
			return Cost{}, fmt.Errorf("rows %s: no planning figure", r.Sym)
		}
	}
	c := CostOf(l, n.Op, rows, x.Type.Shape[1].Size, w.Type.Shape[0].Size).At(o.DeviceSpeedup)
	c.RowsSymbolic = sym
	return c, nil
}

// placeStacked puts stacked weights in the TEE when no device op reads
// them (their projection was kept TEE-local).
func placeStacked(g *ir.Graph) {
	onDevice := map[ir.ValueID]bool{}
	for _, n := range g.Nodes {
		if n.Place == ir.Device && ir.ClassOf(n.Op) != ir.ClassStackedWeights {
			for _, in := range n.Inputs {
				onDevice[in] = true
			}
		}
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		if ir.ClassOf(n.Op) != ir.ClassStackedWeights {
			continue
		}
		if onDevice[n.ID] {
			for _, in := range n.Inputs {
				onDevice[in] = true
			}
			continue
		}
		n.Place = ir.TEE
	}
}

func (o ProtectOptions) deviceSpeedup() float64 {
	if o.DeviceSpeedup > 0 {
		return o.DeviceSpeedup
	}
	return DeviceSpeedup
}

func (o ProtectOptions) planRows() int {
	if o.PlanRows > 0 {
		return o.PlanRows
	}
	return DefaultPlanRows
}

func (o ProtectOptions) planBatch() int {
	if o.PlanBatch > 0 {
		return o.PlanBatch
	}
	return DefaultPlanBatch
}
