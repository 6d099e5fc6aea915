package passes

import (
	"fmt"

	"gelo/formats"
	"gelo/ir"
)

// Quantize gives every matmul (the LM head included) its weights in bf16
// or a GGUF block format, on either side of the boundary: the device
// multiplies them, and so does the TEE where a linear op is kept local (the
// offload decision), with the same kernels, so a protected plan computes
// the bits of the unprotected plan in the same format and holds no f32
// copy of a weight it multiplies. A tied embedding table is gathered
// from the LM head's converted copy, so no weight is held twice.
// Runs after fuse (stacked weights are converted as one matrix) and before
// protect. bf16 weights multiply the same f32 rows as f32 ones (widened
// exactly), so a bf16 checkpoint gives the f32 plan's bits from half the
// weight bytes; for q8_0 and q4_0 the rows are quantized to q8_0 blocks
// first: for a crossing protect makes the mask emit them (the quantize
// epilogue), a TEE-local product quantizes its own input. bf16dot stores
// bf16 weights and marks every matmul on them ir.AttrBF16Dot: the bf16 dot
// product, its input rounded to bf16 (a crossing's payload is rounded
// before it leaves, so the device multiplies exactly what was sent).
func Quantize(format string) Pass { return quantize(format, "") }

// QuantizeLattice is Quantize for a plan under an lwe level: a matmul the
// device runs multiplies the level's integer format (device, int8 per
// output channel: the product is taken modulo 2^32), one kept in the TEE
// the plan's --weights format, so a plan whose ops all stay in the TEE
// computes exactly what the same format computes at any other level.
func QuantizeLattice(format, device string) Pass { return quantize(format, device) }

func quantize(format, device string) Pass {
	doc := "matmul weights in " + ir.OrList(formats.PlanNames()) + " (device and TEE-local alike)"
	if device != "" {
		doc = "matmul weights in " + device + " on the device, in " + ir.OrList(formats.PlanNames()) + " in the TEE"
	}
	return Pass{Name: "quantize", Doc: doc,
		Run: func(m *ir.Module) error {
			f, err := formats.LookupPlan("--weights", format)
			if err != nil {
				return err
			}
			df := f
			if device != "" {
				if df, err = formats.LookupPlan("the device's format", device); err != nil {
					return err
				}
			}
			if f.DType == ir.F32 && df.DType == ir.F32 {
				m.Meta["weights"] = f.Name
				return nil
			}
			at := func(place ir.Placement) *formats.Format {
				if place == ir.Device {
					return df
				}
				return f
			}
			for i, g := range m.Graphs {
				ng, err := quantizeGraph(g, at)
				if err != nil {
					return fmt.Errorf("graph %s: %w", g.Name, err)
				}
				m.Graphs[i] = ng
			}
			m.Meta["weights"] = f.Name
			return nil
		}}
}

// quantizeGraph converts the weights g's matmuls read to the format
// at(place) names for the side that multiplies them (one format for both
// sides but under an lwe level).
func quantizeGraph(g *ir.Graph, at func(ir.Placement) *formats.Format) (*ir.Graph, error) {
	ng := &ir.Graph{Name: g.Name, Params: g.Params}
	remap := make([]ir.ValueID, len(g.Nodes))
	type key struct {
		v ir.ValueID
		f string
	}
	quantized := map[key]ir.ValueID{} // f32 weight operand, format -> its converted copy
	var quant func(v ir.ValueID, place ir.Placement, f *formats.Format) (ir.ValueID, error)
	quant = func(v ir.ValueID, place ir.Placement, f *formats.Format) (ir.ValueID, error) {
		if q, ok := quantized[key{v, f.Name}]; ok {
			if place == ir.Device {
				markDevice(ng, q)
			}
			return q, nil
		}
		n := g.Nodes[v]
		var q ir.ValueID
		var err error
		if f.DType == ir.F32 { // this side multiplies the weight as traced
			q = remap[v]
			quantized[key{v, f.Name}] = q
			return q, nil
		}
		switch n.Op {
		case ir.OpWeight:
			// Rows that are not whole blocks take the format's
			// fallback (q4_k's q8_0, as llama.cpp's quantizer too).
			wf := f
			if last := n.Type.Shape[n.Type.Rank()-1]; !last.IsSym() {
				if wf, err = f.ForRow(last.Size); err != nil {
					return -1, fmt.Errorf("weight %v: %w", v, err)
				}
			}
			q, err = ng.AddDeclared(ir.OpWeight, n.Attrs, ir.Type{DType: wf.DType, Shape: n.Type.Shape})
		case ir.OpConcatWeights:
			ins := make([]ir.ValueID, len(n.Inputs))
			for i, in := range n.Inputs {
				if ins[i], err = quant(in, place, f); err != nil {
					return -1, err
				}
			}
			q, err = ng.Add(ir.OpConcatWeights, n.Attrs, ins...)
		default:
			return -1, fmt.Errorf("%v = %s is not a weight", v, n.Op)
		}
		if err != nil {
			return -1, fmt.Errorf("quantize %v: %w", v, err)
		}
		ng.Nodes[q].Place = place
		quantized[key{v, f.Name}] = q
		return q, nil
	}
	// Where each weight a converted matmul reads is multiplied (the first
	// such matmul's side).
	multiplied := map[ir.ValueID]ir.Placement{}
	for _, n := range g.Nodes {
		if ir.IsLinear(n.Op) && (n.Place == ir.Device || n.Place == ir.TEE) {
			if _, ok := multiplied[n.Inputs[1]]; !ok {
				multiplied[n.Inputs[1]] = n.Place
			}
		}
	}
	for _, n := range g.Nodes {
		in := make([]ir.ValueID, len(n.Inputs))
		for i, v := range n.Inputs {
			in[i] = remap[v]
		}
		if place, ok := tiedPlace(g, n, multiplied); ok {
			// A table a matmul reads converted (a tied embedding, the
			// LM head's) is gathered from that copy: the TEE holds each
			// weight once, in the plan's format, as llama.cpp gathers a
			// quantized token_embd. The rows gathered are the values the
			// head multiplies by (bf16 widens exactly).
			q, err := quant(n.Inputs[1], place, at(place))
			if err != nil {
				return nil, err
			}
			in[1] = q
		}
		cn := n
		if ir.IsLinear(n.Op) && (n.Place == ir.Device || n.Place == ir.TEE) {
			f := at(n.Place)
			q, err := quant(n.Inputs[1], n.Place, f)
			if err != nil {
				return nil, err
			}
			in[1] = q
			if f.BF16Dot {
				c := *n
				c.Attrs = ir.Attrs{ir.AttrBF16Dot: true}
				for k, v := range n.Attrs {
					c.Attrs[k] = v
				}
				cn = &c
			}
		}
		v, err := copyNode(ng, cn, in)
		if err != nil {
			return nil, err
		}
		remap[n.ID] = v
	}
	for _, o := range g.Outputs {
		ng.Outputs = append(ng.Outputs, ir.Output{Name: o.Name, Value: remap[o.Value]})
	}
	ng, err := deadCode(ng)
	if err != nil {
		return nil, err
	}
	// An f32 weight the device no longer reads (a tied embedding table,
	// now only gathered) is resident in the TEE alone; a converted weight
	// sits where its matmuls run (the device if any of them is there).
	placeWeights(ng)
	return ng, nil
}

// tiedPlace reports whether n gathers from a table a converted matmul
// reads (and where that matmul runs).
func tiedPlace(g *ir.Graph, n *ir.Node, multiplied map[ir.ValueID]ir.Placement) (ir.Placement, bool) {
	if n.Op != ir.OpEmbed || len(n.Inputs) != 2 || g.Nodes[n.Inputs[1]].Op != ir.OpWeight {
		return 0, false
	}
	place, ok := multiplied[n.Inputs[1]]
	return place, ok
}

// markDevice places a converted weight, and the weights it stacks, on the
// device: a device matmul reads it.
func markDevice(g *ir.Graph, v ir.ValueID) {
	n := g.Nodes[v]
	n.Place = ir.Device
	for _, in := range n.Inputs {
		markDevice(g, in)
	}
}
