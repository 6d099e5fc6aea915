package passes

import (
	"fmt"
	"strconv"

	"gelo/formats"
	"gelo/ir"
	"gelo/lwe"
)

// Protection families (the registered mask families of ir, and none) and
// cadences.
const (
	MaskNone = "none"
	MaskHaar = ir.FamilyHaar
	MaskHD3  = ir.FamilyHD3
	// MaskLWE is no mask family: level lwe's crossings are lwe
	// ciphertexts (lwe_encode / lwe_decode), not mixed rows.
	MaskLWE = "lwe"

	PerForward = "per-forward"
	PerOffload = "per-offload"
)

// ProtectOptions configure the protect pass.
type ProtectOptions struct {
	// Security names the protection level (passes.Levels) whose knobs
	// the fields below hold, or custom; "" is taken as the level the knobs
	// match (LevelOf).
	Security string
	// Mask is none (the insecure baseline), haar or hd3.
	Mask string
	// Cadence is per-forward (one mask per forward pass and shielded row
	// count, shared by every crossing of the pass) or per-offload (a fresh
	// mask for every crossing).
	Cadence string
	// ShieldK is the minimum number of shield rows (>= 8 for a protected
	// plan); HD3 pads further to a power of two.
	ShieldK int
	// ShieldEnergy scales shield rows to this multiple of the mean data
	// row norm.
	ShieldEnergy float64
	// Center sends multi-row crossings as their rows minus the mean row,
	// plus the mean as one extra row, and adds the mean's product back
	// after unmasking. Exact in real arithmetic (a linear change of
	// basis); it stops rows that share a large common component (attention
	// outputs early in a prompt, massive activations) from adding up
	// coherently in every masked row, where the shield rows cannot drown
	// them. Single-row crossings (decode at B = 1) are sent as they are.
	Center bool
	// Topology of batched decode: per-sequence (each sequence's row gets
	// its own shield rows and mask, the default: users never share a
	// mask) or shared (the B rows are stacked under one mask with
	// next_pow2(B + 8) - B shield rows; opt-in, far fewer device rows).
	Topology string
	// PlanRows and PlanBatch are the prefill length n and decode batch B
	// the offload decision of a full-span level is costed at (0: the
	// defaults, DefaultPlanRows and DefaultPlanBatch).
	PlanRows, PlanBatch int
	// DeviceSpeedup is the device's multiply-add rate over the TEE's the
	// offload pass costs against (0: DeviceSpeedup, an accelerator). At 1
	// or below the device runs on the TEE's own cores (--device local), so
	// no secure offload can pay and every op the cost model decides stays
	// in the TEE.
	DeviceSpeedup float64
	// OffloadAll offloads every linear op under a full-span level, paying
	// or not (the attack harness and the level's tests need crossings to
	// look at; the exact level never pays).
	OffloadAll bool
	// OffloadOnly, when set under a full-span level, offloads exactly the
	// linear ops whose weight name (ir.WeightName) starts with one of
	// these prefixes, paying or not, and keeps every other one in the TEE:
	// the attack harness records the crossings it attacks without paying
	// for the others' protection (at the 0.6B widths a full-span crossing
	// is 2048-4096 rows). No flag of compile sets it.
	OffloadOnly []string
	// Weights is the weight format's name (package formats): f32
	// (default), bf16, bf16dot, q8_0, q4_0, q4_k.
	// It is a compile option like the protection, so it travels with it.
	Weights string
	// Verify is the integrity probes per device matmul (the verify-probes
	// pass; 0: none) and VerifyPool the secret vectors per weight they are
	// drawn from (0: DefaultProbePool).
	Verify, VerifyPool int
	// Unshielded lets ShieldK go below 8, down to 0: the attack harness's
	// C1 condition (row mixing alone), which must be shown broken. No
	// flag sets it; users get the refusal.
	Unshielded bool
}

// Batched decode topologies.
const (
	PerSequence = "per-sequence"
	Shared      = "shared"
)

// DefaultProtect is the seed protocol's knobs (gelo-8x4's) with no level
// named, so callers may change them; the level is then whatever they
// match. The level a plan gets unless told otherwise is DefaultLevel
// (plan.Defaults).
func DefaultProtect() ProtectOptions {
	l, _ := LookupLevel(Level8x4)
	o := l.Options(ProtectOptions{Topology: PerSequence})
	o.Security = ""
	return o
}

// SecurityLevel is the level o compiles to: the named one, or the level
// its knobs match.
func (o ProtectOptions) SecurityLevel() string {
	if o.Security != "" {
		return o.Security
	}
	return LevelOf(o)
}

// Check validates the options and names the bad one.
func (o ProtectOptions) Check() error {
	if o.Mask == MaskLWE {
		return o.checkLattice()
	}
	if _, ok := ir.LookupMaskFamily(o.Mask); !ok && o.Mask != MaskNone {
		return fmt.Errorf("--mask %q: want %s", o.Mask, ir.OrList(MaskFamilyNames()))
	}
	switch o.Cadence {
	case PerForward, PerOffload:
	default:
		return fmt.Errorf("--cadence %q: want per-forward or per-offload", o.Cadence)
	}
	wf, err := formats.LookupPlan("--weights", o.Weights)
	if err != nil {
		return err
	}
	switch o.Topology {
	case "", PerSequence, Shared:
	default:
		return fmt.Errorf("--topology %q: want per-sequence or shared", o.Topology)
	}
	if err := o.checkLevel(); err != nil {
		return err
	}
	if err := o.checkVerify(); err != nil {
		return err
	}
	if l := o.level(); l.FullSpan && !l.Whiten && wf.Input == ir.Q8_0 {
		return fmt.Errorf("--security %s with --weights %s: the payload is quantized after mixing, and shield rows at %g x the data rows' norm turn its block rounding into errors larger than the data (use f32 or bf16 weights, or --security exact)", l.Name, o.Weights, l.ShieldEnergy)
	}
	if o.Mask != MaskNone {
		if o.ShieldK < 0 || (o.ShieldK < 8 && !o.Unshielded) {
			return fmt.Errorf("--shield: k = %d shield rows; the protocol needs at least 8", o.ShieldK)
		}
		if !(o.ShieldEnergy > 0) || o.ShieldEnergy > 1e6 {
			return fmt.Errorf("--shield: energy %v must be positive and finite", o.ShieldEnergy)
		}
	}
	return nil
}

// checkLattice validates options of the lwe level: named lwe (no custom
// lattice knobs), an integer weight format, and the level's parameters.
func (o ProtectOptions) checkLattice() error {
	if o.Security != LevelLWE {
		return fmt.Errorf("--mask %s: lwe ciphertexts come with --security %s only (got %q)", MaskLWE, LevelLWE, o.Security)
	}
	switch o.Topology { // no row mixing, so no topology; a typo is still one
	case "", PerSequence, Shared:
	default:
		return fmt.Errorf("--topology %q: want per-sequence or shared", o.Topology)
	}
	// --weights is the format of the ops kept in the TEE; the device
	// multiplies int8 (QuantizeLattice) whatever it names.
	if _, err := formats.LookupPlan("--weights", o.Weights); err != nil {
		return err
	}
	if err := o.checkVerify(); err != nil {
		return err
	}
	return o.level().LWE.Validate()
}

// LWEMeta is the module meta entry "lwe" of a plan at level lwe: its
// lattice parameters, as inspect prints them.
func LWEMeta(p lwe.Params) string {
	return fmt.Sprintf("q=2^32,lambda=%d,h=%d,delta=%d", p.Lambda, p.H, p.Delta)
}

// MaskFamilyNames lists what --mask takes: none (the insecure baseline),
// then every registered mask family.
func MaskFamilyNames() []string { return append([]string{MaskNone}, ir.MaskFamilyNames()...) }

// MaskFamilyHelp is the --mask flag help, one line.
func MaskFamilyHelp() string {
	return "protection: " + ir.OrList(append([]string{MaskNone + " (insecure baseline)"}, ir.MaskFamilyNames()...))
}

// ShieldedDim names the row dim of a crossing of rows r: S_n, S_B, S_1.
func ShieldedDim(r ir.Dim) string { return "S_" + r.String() }

// Protect inserts the boundary at every crossing of a placed graph: at a
// TEE->device edge shield_stack then mask, at a device->TEE edge unmask
// then shield_strip (and the projection's bias, which cannot be applied to
// masked rows, is added back in the TEE). With mask none it inserts plain
// to_device / to_tee transfers, which leakcheck reports as insecure. A TEE
// value feeding several device ops (Q, K, V) crosses once.
func Protect(o ProtectOptions) Pass {
	return Pass{Name: "protect", Doc: "insert mask/unmask and shield nodes at every boundary crossing",
		Run: func(m *ir.Module) error {
			if err := o.Check(); err != nil {
				return err
			}
			for i, g := range m.Graphs {
				ng, err := protect(g, o)
				if err != nil {
					return fmt.Errorf("graph %s: %w", g.Name, err)
				}
				m.Graphs[i] = ng
			}
			m.Meta["security"] = o.SecurityLevel()
			m.Meta["mask"] = o.Mask
			m.Meta["cadence"] = o.Cadence
			if p := o.level().LWE; p != nil {
				m.Meta["lwe"] = LWEMeta(*p)
			} else if o.Mask != MaskNone {
				m.Meta["shield"] = strconv.Itoa(o.ShieldK) + "," + strconv.FormatFloat(o.ShieldEnergy, 'g', -1, 64)
				m.Meta["center"] = strconv.FormatBool(o.Center)
				m.Meta["topology"] = o.topology()
			}
			return nil
		}}
}

// rebuilder emits a new graph node by node, remembering the first error.
type rebuilder struct {
	g   *ir.Graph
	err error
}

// emit appends a node with the given placement.
func (r *rebuilder) emit(op string, attrs ir.Attrs, place ir.Placement, in ...ir.ValueID) ir.ValueID {
	if r.err != nil {
		return -1
	}
	v, err := r.g.Add(op, attrs, in...)
	if err != nil {
		r.err = err
		return -1
	}
	r.g.Nodes[v].Place = place
	return v
}

func protect(g *ir.Graph, o ProtectOptions) (*ir.Graph, error) {
	r := &rebuilder{g: &ir.Graph{Name: g.Name, Params: append([]string(nil), g.Params...)}}
	tee := make([]ir.ValueID, len(g.Nodes)) // the value TEE users see
	dev := make([]ir.ValueID, len(g.Nodes)) // the value device users see
	for i := range tee {
		tee[i], dev[i] = -1, -1
	}
	teeUsers := map[ir.ValueID]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if n.Place != ir.Device {
				teeUsers[in] = true
			}
		}
	}
	for _, out := range g.Outputs {
		teeUsers[out.Value] = true
	}
	slots := map[string]int64{} // per-forward: one slot per shielded dim
	next := int64(0)
	slotFor := func(dim string) int64 {
		if o.Cadence == PerOffload {
			next++
			return next - 1
		}
		if s, ok := slots[dim]; ok {
			return s
		}
		slots[dim] = int64(len(slots))
		return slots[dim]
	}
	type crossing struct {
		v     ir.ValueID
		quant bool
	}
	crossed := map[crossing]ir.ValueID{}  // TEE value -> its device-side copy
	slotOf := map[ir.ValueID]int64{}      // device-side copy -> mask slot
	meanOf := map[ir.ValueID]ir.ValueID{} // device-side copy -> the mean row kept in the TEE
	f32w := map[ir.ValueID]ir.ValueID{}   // device weight -> its f32 copy for TEE products
	addParam := func(p string) {
		for _, q := range r.g.Params {
			if q == p {
				return
			}
		}
		r.g.Params = append(r.g.Params, p)
	}
	lattice := o.level().Lattice()
	var pass ir.ValueID = -1
	if o.Mask != MaskNone && !lattice {
		v, err := r.g.AddDeclared(ir.OpInput, ir.Attrs{"name": ir.PassInput}, ir.T(ir.I32, 2))
		if err != nil {
			return nil, err
		}
		r.g.Nodes[v].Place = ir.TEE
		pass = v
	}
	for _, n := range g.Nodes {
		if n.Op == ir.OpWeight {
			v, err := r.g.AddDeclared(ir.OpWeight, n.Attrs, n.Type)
			if err != nil {
				return nil, err
			}
			r.g.Nodes[v].Place = n.Place
			tee[n.ID], dev[n.ID] = v, v
			continue
		}
		if n.Op == ir.OpInput {
			v, err := r.g.AddDeclared(ir.OpInput, n.Attrs, n.Type)
			if err != nil {
				return nil, err
			}
			r.g.Nodes[v].Place = n.Place
			tee[n.ID] = v
			continue
		}
		if n.Place != ir.Device {
			in := make([]ir.ValueID, len(n.Inputs))
			for i, v := range n.Inputs {
				in[i] = tee[v]
			}
			tee[n.ID] = r.emit(n.Op, n.Attrs, n.Place, in...)
			continue
		}
		// A device node: cross its activation operands, drop the bias.
		var in []ir.ValueID
		var bias ir.ValueID = -1
		var slot int64 = -1
		var mean ir.ValueID = -1
		var rows ir.Dim
		for i, v := range n.Inputs {
			src := g.Nodes[v]
			switch {
			case ir.IsLinear(n.Op) && i == 2:
				bias = dev[v] // a public bias (weight or stacked weights)
			case src.Op == ir.OpWeight || src.Place == ir.Device:
				if ir.ResultOf(src.Op) != ir.Resident && src.Secrecy == ir.Secret {
					return nil, fmt.Errorf("%v = %s reads secret device value %v directly", n.ID, n.Op, v)
				}
				in = append(in, dev[v])
			case lattice:
				// One ciphertext per TEE value: q, k and v share one,
				// gate and up another.
				c, ok := crossed[crossing{v, false}]
				if !ok {
					p := o.level().LWE
					c = r.emit(ir.OpLWEEncode, ir.Attrs{"slot": next, "lambda": int64(p.Lambda), "h": int64(p.H), "delta": int64(p.Delta)}, ir.TEE, tee[v])
					slotOf[c] = next
					next++
					crossed[crossing{v, false}] = c
				}
				slot = slotOf[c]
				in = append(in, c)
			default:
				q := len(n.Inputs) > 1 && g.Node(n.Inputs[1]).Type.DType.IsQuantized()
				c, ok := crossed[crossing{v, q}]
				x := tee[v]
				xt := r.g.Node(x).Type
				rows = xt.Shape[0]
				if !ok {
					if o.Mask == MaskNone {
						var attrs ir.Attrs
						if q {
							attrs = ir.Attrs{"quant": ir.Q8_0.String()}
						}
						c = r.emit(ir.OpToDevice, attrs, ir.TEE, x)
					} else {
						lv := o.level()
						width := xt.Shape[1].Size
						dim := ShieldedDim(rows)
						kmin := int64(o.ShieldK)
						if lv.FullSpan {
							// s >= n + d: the payload has full column rank.
							dim = fmt.Sprintf("%s_%d", dim, width)
							kmin = max(kmin, int64(width))
						}
						addParam(dim)
						attrs := ir.Attrs{"family": o.Mask, "k_min": kmin, "energy": o.ShieldEnergy, "rows": dim}
						if lv.Whiten {
							attrs["whiten"] = true
						}
						var mu ir.ValueID = -1
						ref := x
						switch {
						case perRow(o, rows):
							attrs["per_row"] = true
						case centerInTEE(o, rows):
							// The mean stays in the TEE (its product is
							// computed there), so centring costs no row.
							mu = r.emit(ir.OpMeanRows, nil, ir.TEE, x)
							x = r.emit(ir.OpSubRow, nil, ir.TEE, x, mu)
						case center(o, rows):
							attrs["center"] = true
						}
						ops := []ir.ValueID{x, pass}
						if ref != x {
							ops = append(ops, ref) // shield energy against the uncentred rows
						}
						s := r.emit(ir.OpShieldStack, attrs, ir.TEE, ops...)
						slotOf[s] = slotFor(dim)
						mattrs := ir.Attrs{"family": o.Mask, "slot": slotOf[s]}
						if perRow(o, rows) {
							mattrs["per_row"] = true
						}
						if q {
							mattrs["quant"] = ir.Q8_0.String()
						}
						c = r.emit(ir.OpMask, mattrs, ir.TEE, s, pass)
						slotOf[c] = slotOf[s]
						if mu >= 0 {
							meanOf[c] = mu
						}
					}
					crossed[crossing{v, q}] = c
				}
				if s, ok := slotOf[c]; ok {
					slot = s
				}
				if m, ok := meanOf[c]; ok {
					mean = m
				}
				in = append(in, c)
			}
		}
		if bias >= 0 && o.Mask == MaskNone {
			in, bias = append(in, bias), -1
		}
		d := r.emit(n.Op, n.Attrs, ir.Device, in...)
		dev[n.ID] = d
		if !teeUsers[n.ID] || r.err != nil {
			continue
		}
		var back ir.ValueID
		switch {
		case o.Mask == MaskNone:
			back = r.emit(ir.OpToTEE, nil, ir.TEE, d)
		case lattice:
			if slot < 0 || len(n.Inputs) < 2 {
				return nil, fmt.Errorf("%v = %s: device result has no ciphertext operand to decode", n.ID, n.Op)
			}
			back = r.emit(ir.OpLWEDecode, ir.Attrs{"slot": slot}, ir.TEE, d, dev[n.Inputs[1]])
		default:
			if slot < 0 {
				return nil, fmt.Errorf("%v = %s: device result has no masked operand to unmask", n.ID, n.Op)
			}
			uattrs := ir.Attrs{"family": o.Mask, "slot": slot}
			attrs := ir.Attrs{"rows": rows.String()}
			if perRow(o, rows) {
				uattrs["per_row"], attrs["per_row"] = true, true
			} else if center(o, rows) && mean < 0 {
				attrs["center"] = true
			}
			if o.level().Whiten {
				attrs["whiten"] = true
			}
			u := r.emit(ir.OpUnmask, uattrs, ir.TEE, d, pass)
			back = r.emit(ir.OpShieldStrip, attrs, ir.TEE, u)
			if mean >= 0 {
				w, err := f32Weight(r, g, n.Inputs[1], f32w)
				if err != nil {
					return nil, err
				}
				back = r.emit(ir.OpAddRow, nil, ir.TEE, back, r.emit(ir.OpMatMul, nil, ir.TEE, mean, w))
			}
		}
		if bias >= 0 {
			back = r.emit(ir.OpBiasAdd, nil, ir.TEE, back, bias)
		}
		tee[n.ID] = back
	}
	if r.err != nil {
		return nil, r.err
	}
	for _, out := range g.Outputs {
		r.g.Outputs = append(r.g.Outputs, ir.Output{Name: out.Name, Value: tee[out.Value]})
	}
	return r.g, nil
}

// centerInTEE: prefill crossings are centred with the mean row kept in
// the TEE and its product computed there (one matvec over the public
// weight), so the stack stays n + k rows: HD3 at n = 2040 keeps s = 2048.
// Decode batches under the shared topology send the mean as one more row
// instead, which is cheaper than a TEE matvec per step.
func centerInTEE(o ProtectOptions, rows ir.Dim) bool {
	return o.Center && rows.IsSym() && rows.Sym == "n"
}

// f32Weight returns (emitting once) a copy in the TEE of a device weight
// operand (a weight, or stacked weights, possibly quantized), for the
// product of the centred rows' mean. The copy is f32, except where the
// operand's format multiplies f32 rows as they are (bf16, int8: its
// record's Input is f32): then it keeps the operand's dtype, so the mean's
// product uses the weights the device multiplies and the sum is their
// product of the uncentred rows (an f32 copy made an int8 plan's masked
// products differ from its unprotected ones by 2e-2 relative RMS).
func f32Weight(r *rebuilder, g *ir.Graph, v ir.ValueID, memo map[ir.ValueID]ir.ValueID) (ir.ValueID, error) {
	if w, ok := memo[v]; ok {
		return w, nil
	}
	n := g.Node(v)
	var w ir.ValueID
	switch n.Op {
	case ir.OpWeight:
		dt := ir.F32
		if f, err := formats.ByDType(n.Type.DType); err == nil && !f.RoundsInput() {
			dt = n.Type.DType
		}
		var err error
		w, err = r.g.AddDeclared(ir.OpWeight, n.Attrs, ir.Type{DType: dt, Shape: n.Type.Shape})
		if err != nil {
			return -1, err
		}
		r.g.Nodes[w].Place = ir.TEE
	case ir.OpConcatWeights:
		var ins []ir.ValueID
		for _, in := range n.Inputs {
			c, err := f32Weight(r, g, in, memo)
			if err != nil {
				return -1, err
			}
			ins = append(ins, c)
		}
		w = r.emit(ir.OpConcatWeights, nil, ir.TEE, ins...)
	default:
		return -1, fmt.Errorf("%v = %s is not a weight", v, n.Op)
	}
	memo[v] = w
	return w, nil
}

// center reports whether a crossing of the given rows is centred: only
// when asked, and never for a single row (its centred row would be zero).
func center(o ProtectOptions, rows ir.Dim) bool {
	return o.Center && !(!rows.IsSym() && rows.Size == 1)
}

func (o ProtectOptions) topology() string {
	if o.Topology == "" {
		return PerSequence
	}
	return o.Topology
}

// perRow reports whether a crossing's rows are separate sequences masked
// apart: the decode batch B under the per-sequence topology.
func perRow(o ProtectOptions, rows ir.Dim) bool {
	return rows.IsSym() && rows.Sym == "B" && o.topology() == PerSequence
}
