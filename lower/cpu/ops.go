package cpu

import (
	"fmt"
	"slices"

	"gelo/device"
	"gelo/device/wire"
	"gelo/formats"
	"gelo/ir"
	"gelo/lower/cpu/kernels"
	"gelo/lower/cpu/mask"
	"gelo/models/safetensors"
)

// kernel lowers one TEE-placed node to its instruction.
type kernel func(l *lowering) (func() error, error)

// deviceKernels are the ops a device-placed node may hold: each sends its
// operand rows to the Device.
var deviceKernels = map[string]func(b *Backend, p *Program, n *ir.Node) (func() error, error){
	ir.OpMatMul: (*Backend).lowerDevice,
	ir.OpLMHead: (*Backend).lowerDevice,
}

// storageOps are ops that run no instruction: Compile gives their value
// storage (bound, loaded, stacked or viewed), and the reason says how.
var storageOps = map[string]string{
	ir.OpInput:         "bound by the runtime (or in the arena)",
	ir.OpWeight:        "loaded once at compile",
	ir.OpConcatWeights: "stacked once at compile",
	ir.OpTake:          "a view into its pair",
}

// Supports reports whether the cpu backend lowers op: a TEE kernel, a
// device kernel, or storage prepared at compile. It declines no op.
func Supports(op string) bool {
	_, tee := teeKernels[op]
	_, dev := deviceKernels[op]
	_, st := storageOps[op]
	return tee || dev || st
}

// teeKernels is the backend's op table for TEE-placed nodes: every op it
// runs an instruction for in the TEE, keyed by op.
var teeKernels = map[string]kernel{
	ir.OpShieldStack:      lowerShieldStack,
	ir.OpMask:             lowerMask,
	ir.OpUnmask:           lowerMask,
	ir.OpShieldStrip:      lowerShieldStrip,
	ir.OpSliceCols:        lowerSliceCols,
	ir.OpSwiGLU:           lowerSwiGLU,
	ir.OpAddRMSNorm:       lowerAddRMSNorm,
	ir.OpNormRope:         lowerNormRope,
	ir.OpNormRopeAppend:   lowerNormRope,
	ir.OpNormRopeAppendKV: lowerNormRope,
	ir.OpToDevice:         lowerToDevice,
	ir.OpToTEE:            lowerToTEE,
	ir.OpMeanRows:         lowerMeanRows,
	ir.OpSubRow:           lowerSubRow,
	ir.OpAddRow:           lowerSubRow,
	ir.OpBiasAdd:          lowerBiasAdd,
	ir.OpEmbed:            lowerEmbed,
	ir.OpRMSNorm:          lowerRMSNorm,
	ir.OpMatMul:           lowerMatMul,
	ir.OpLMHead:           lowerMatMul,
	ir.OpQKNorm:           lowerQKNorm,
	ir.OpRope:             lowerRope,
	ir.OpKVAppend:         lowerKVAppend,
	ir.OpAttention:        lowerAttention,
	ir.OpSiLU:             lowerSiLU,
	ir.OpMul:              lowerMul,
	ir.OpAdd:              lowerAdd,
	ir.OpLastRow:          lowerLastRow,
	ir.OpProbe:            lowerProbe,
	ir.OpLWEEncode:        lowerLWEEncode,
	ir.OpLWEDecode:        lowerLWEDecode,
}

// lowering is one node being lowered: what every kernel reads. Buffers are
// looked up through p at run time, so an input rebound after compile (the
// KV cache) is seen.
type lowering struct {
	b    *Backend
	p    *Program
	n    *ir.Node
	ctx  *kernels.Ctx
	out  ir.ValueID
	in   []ir.ValueID
	rows int
	eps  float64
}

func (l *lowering) dims(v ir.ValueID) []int    { return l.p.dims[v] }
func (l *lowering) f(v ir.ValueID) []float32   { return l.p.f32[l.p.storage(v)] }
func (l *lowering) i32(v ir.ValueID) []int32   { return l.p.i32[v] }
func (l *lowering) kv(v ir.ValueID) kernels.KV { return l.p.kv(v) }
func (l *lowering) attr(name string) int       { v, _ := l.n.Attrs.Int(name); return int(v) }

// lower returns the instruction for one node from the op tables.
func (b *Backend) lower(p *Program, n *ir.Node) (func() error, error) {
	if n.Place == ir.Device {
		k := deviceKernels[n.Op]
		if k == nil {
			return nil, fmt.Errorf("no device kernel for op %q", n.Op)
		}
		return k(b, p, n)
	}
	k := teeKernels[n.Op]
	if k == nil {
		return nil, fmt.Errorf("the cpu backend has no kernel for op %q", n.Op)
	}
	l := &lowering{b: b, p: p, n: n, ctx: b.ctx, out: n.ID, in: n.Inputs, rows: p.dims[n.ID][0]}
	l.eps, _ = n.Attrs.Float("eps")
	return k(l)
}

func lowerShieldStack(l *lowering) (func() error, error) {
	p, n, out, in, rows, dims, f := l.p, l.n, l.out, l.in, l.rows, l.dims, l.f
	family, _ := n.Attrs.Str("family")
	energy, _ := n.Attrs.Float("energy")
	r, d := dims(in[0])[0], dims(in[0])[1]
	centered, _ := n.Attrs.Bool("center")
	fillSlot := p.slotOfStack(n)
	if !mask.HasSampler(family) {
		return nil, fmt.Errorf("unknown mask family %q", family)
	}
	if pr, _ := n.Attrs.Bool("per_row"); pr {
		// Each row is a sequence: [x_g; its own shield rows], g = 0..r-1.
		s1 := rows / r
		return func() error {
			y, x := f(out), f(in[0])
			for g := 0; g < r; g++ {
				blk := y[g*s1*d : (g+1)*s1*d]
				copy(blk[:d], x[g*d:(g+1)*d])
				if err := p.fillShield(fillSlot, blk[d:], s1-1, d, x[g*d:(g+1)*d], 1, energy); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}
	if wh, _ := n.Attrs.Bool("whiten"); wh {
		if centered {
			return nil, fmt.Errorf("shield_stack: whiten and center together are not supported")
		}
		return func() error {
			sl := p.slots[fillSlot]
			if sl == nil {
				return fmt.Errorf("whitened shield_stack %v has no mask slot", n.ID)
			}
			a, err := mask.Whiten(f(out), f(in[0]), r, d, rows)
			sl.alpha = a
			return err
		}, nil
	}
	data := r
	if centered {
		data++
	}
	k := rows - data
	acc := make([]float64, d)
	ref := in[0] // the rows the shield energy is measured against
	if len(in) == 3 {
		ref = in[2]
	}
	return func() error {
		y, x := f(out), f(in[0])
		if centered {
			centerRows(y[:data*d], x, acc, r, d)
		} else {
			copy(y, x)
		}
		return p.fillShield(fillSlot, y[data*d:], k, d, f(ref), r, energy)
	}, nil
}

func lowerMask(l *lowering) (func() error, error) {
	p, n, out, in, rows, dims, f := l.p, l.n, l.out, l.in, l.rows, l.dims, l.f
	sl, err := p.useSlot(n)
	if err != nil {
		return nil, err
	}
	d := dims(out)[1]
	apply := n.Op == ir.OpMask
	blk := sl.size * d
	qa := p.qa[out] // the quantize epilogue: masked rows leave as q8_0
	return func() error {
		if err := p.maskGroups(f(out), f(in[0]), sl, blk, d, apply); err != nil {
			return err
		}
		if qa != nil {
			return p.b.qctx.QuantizeActivations(qa, f(out), rows, d)
		}
		return nil
	}, nil
}

func lowerShieldStrip(l *lowering) (func() error, error) {
	n, ctx, out, in, rows, dims, f := l.n, l.ctx, l.out, l.in, l.rows, l.dims, l.f
	if wh, _ := n.Attrs.Bool("whiten"); wh {
		u := l.p.g.Node(in[0])
		if u == nil || u.Op != ir.OpUnmask {
			return nil, fmt.Errorf("whitened shield_strip reads %v, not an unmask", in[0])
		}
		id, _ := u.Attrs.Int("slot")
		cols := dims(out)[1]
		return func() error {
			sl := l.p.slots[id]
			if sl == nil || sl.alpha == 0 {
				return fmt.Errorf("whitened shield_strip: slot %d has no whitening scale this pass", id)
			}
			y, x := f(out), f(in[0])
			for i := range y[:rows*cols] {
				y[i] = x[i] * sl.alpha
			}
			return nil
		}, nil
	}
	if pr, _ := n.Attrs.Bool("per_row"); pr {
		cols := dims(out)[1]
		s1 := dims(in[0])[0] / rows
		return func() error {
			y, u := f(out), f(in[0])
			for g := 0; g < rows; g++ {
				copy(y[g*cols:(g+1)*cols], u[g*s1*cols:(g*s1+1)*cols])
			}
			return nil
		}, nil
	}
	if c, _ := n.Attrs.Bool("center"); c {
		cols := dims(out)[1]
		return func() error {
			y, u := f(out), f(in[0])
			mean := u[rows*cols : (rows+1)*cols]
			for r := 0; r < rows; r++ {
				ctx.Add(y[r*cols:(r+1)*cols], u[r*cols:(r+1)*cols], mean)
			}
			return nil
		}, nil
	}
	return func() error { copy(f(out), f(in[0])); return nil }, nil
}

func lowerSliceCols(l *lowering) (func() error, error) {
	n, ctx, out, in, rows, dims, f := l.n, l.ctx, l.out, l.in, l.rows, l.dims, l.f
	start, _ := n.Attrs.Int("start")
	cols, src := dims(out)[1], dims(in[0])[1]
	return func() error {
		ctx.SliceCols(f(out), f(in[0]), rows, src, int(start), cols)
		return nil
	}, nil
}

func lowerSwiGLU(l *lowering) (func() error, error) {
	n, ctx, out, in, rows, dims, f := l.n, l.ctx, l.out, l.in, l.rows, l.dims, l.f
	if len(in) == 2 {
		return func() error { ctx.SwiGLU(f(out), f(in[0]), f(in[1])); return nil }, nil
	}
	cols := dims(out)[1]
	if pr, _ := n.Attrs.Bool("per_row"); pr {
		// Row 0 of each sequence's block of the unmasked stack.
		s1 := dims(in[0])[0] / rows
		return func() error {
			y, x := f(out), f(in[0])
			for g := 0; g < rows; g++ {
				r := g * s1
				ctx.SwiGLU(y[g*cols:(g+1)*cols], x[2*r*cols:(2*r+1)*cols], x[(2*r+1)*cols:(2*r+2)*cols])
			}
			return nil
		}, nil
	}
	return func() error {
		y, x := f(out), f(in[0])
		for r := 0; r < rows; r++ {
			ctx.SwiGLU(y[r*cols:(r+1)*cols], x[2*r*cols:(2*r+1)*cols], x[(2*r+1)*cols:(2*r+2)*cols])
		}
		return nil
	}, nil
}

func lowerAddRMSNorm(l *lowering) (func() error, error) {
	ctx, out, in, eps, dims, f := l.ctx, l.out, l.in, l.eps, l.dims, l.f
	r, d := dims(out)[1], dims(out)[2]
	return func() error {
		y := f(out)
		ctx.AddRMSNorm(y[:r*d], y[r*d:], f(in[0]), f(in[1]), f(in[2]), r, d, float32(eps))
		return nil
	}, nil
}

func lowerNormRope(l *lowering) (func() error, error) {
	b, p, n, ctx, out, in, rows, eps, dims, f, i32, attr, kv := l.b, l.p, l.n, l.ctx, l.out, l.in, l.rows, l.eps, l.dims, l.f, l.i32, l.attr, l.kv
	heads, hd := attr("heads"), attr("head_dim")
	theta, _ := n.Attrs.Float("theta")
	rope := b.rope(hd, theta, maxPositions(p))
	if n.Op == ir.OpNormRope {
		return func() error {
			return ctx.NormRope(f(out), f(in[0]), f(in[1]), rope, rows, heads, hd, i32(in[2]), float32(eps))
		}, nil
	}
	if n.Op == ir.OpNormRopeAppendKV {
		kr, maxT := dims(in[2])[0], dims(in[0])[1]
		return func() error {
			return ctx.NormRopeAppendKV(kv(in[0]), kv(in[1]), f(in[2]), f(in[3]), f(in[4]), rope, kr, heads, hd, maxT,
				i32(in[5]), i32(in[6]), float32(eps))
		}, nil
	}
	xr, maxT := dims(in[1])[0], dims(in[0])[1]
	return func() error {
		return ctx.NormRopeAppend(kv(in[0]), f(in[1]), f(in[2]), rope, xr, heads, hd, maxT, i32(in[3]), i32(in[4]), float32(eps))
	}, nil
}

func lowerToDevice(l *lowering) (func() error, error) {
	p, out, in, rows, dims, f := l.p, l.out, l.in, l.rows, l.dims, l.f
	if qa := p.qa[out]; qa != nil {
		d := dims(out)[1]
		return func() error { return p.b.qctx.QuantizeActivations(qa, f(in[0]), rows, d) }, nil
	}
	return func() error { copy(f(out), f(in[0])); return nil }, nil
}

func lowerToTEE(l *lowering) (func() error, error) {
	out, in, f := l.out, l.in, l.f
	return func() error { copy(f(out), f(in[0])); return nil }, nil
}

func lowerMeanRows(l *lowering) (func() error, error) {
	out, in, dims, f := l.out, l.in, l.dims, l.f
	r, d := dims(in[0])[0], dims(in[0])[1]
	acc := make([]float64, d)
	return func() error {
		meanRows(f(out), f(in[0]), acc, r, d)
		return nil
	}, nil
}

func lowerSubRow(l *lowering) (func() error, error) {
	n, out, in, rows, dims, f := l.n, l.out, l.in, l.rows, l.dims, l.f
	cols := dims(out)[1]
	sub := n.Op == ir.OpSubRow
	return func() error {
		y, x, m := f(out), f(in[0]), f(in[1])
		for r := 0; r < rows; r++ {
			yr, xr := y[r*cols:(r+1)*cols], x[r*cols:(r+1)*cols]
			for j, v := range m[:cols] {
				if sub {
					yr[j] = xr[j] - v
				} else {
					yr[j] = xr[j] + v
				}
			}
		}
		return nil
	}, nil
}

func lowerBiasAdd(l *lowering) (func() error, error) {
	ctx, out, in, rows, dims, f := l.ctx, l.out, l.in, l.rows, l.dims, l.f
	cols := dims(out)[1]
	return func() error {
		y, x, bias := f(out), f(in[0]), f(in[1])
		for r := 0; r < rows; r++ {
			ctx.Add(y[r*cols:(r+1)*cols], x[r*cols:(r+1)*cols], bias)
		}
		return nil
	}, nil
}

func lowerEmbed(l *lowering) (func() error, error) {
	ctx, out, in, dims, f, i32 := l.ctx, l.out, l.in, l.dims, l.f, l.i32
	d, vocab := dims(in[1])[1], dims(in[1])[0]
	// A table held as blocks or bf16 (the tied LM head's) is gathered from
	// them: each row expanded to f32, the values the head multiplies by.
	if qm := l.p.q[in[1]]; qm != nil {
		buf := make([]byte, qm.RowBytes())
		return func() error {
			y, ids := f(out), i32(in[0])
			if err := checkIDs(ids, vocab, len(y), d); err != nil {
				return err
			}
			for r, id := range ids {
				if err := qm.DequantizeRowBuf(y[r*d:(r+1)*d], int(id), buf); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}
	if tab := l.p.b16[in[1]]; tab != nil {
		return func() error {
			y, ids := f(out), i32(in[0])
			if err := checkIDs(ids, vocab, len(y), d); err != nil {
				return err
			}
			for r, id := range ids {
				row, dst := tab[int(id)*d:(int(id)+1)*d], y[r*d:(r+1)*d]
				for j, h := range row {
					dst[j] = safetensors.BF16ToF32(h)
				}
			}
			return nil
		}, nil
	}
	return func() error { return ctx.Embed(f(out), f(in[1]), i32(in[0]), d, vocab) }, nil
}

// checkIDs refuses a gather whose ids fall outside the table (or whose
// output cannot hold its rows), as kernels.Embed does.
func checkIDs(ids []int32, vocab, outLen, d int) error {
	if outLen < len(ids)*d {
		return fmt.Errorf("embed: %d rows of %d need %d values, the output holds %d", len(ids), d, len(ids)*d, outLen)
	}
	for r, id := range ids {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("embed: token id %d at index %d out of range [0,%d)", id, r, vocab)
		}
	}
	return nil
}

func lowerRMSNorm(l *lowering) (func() error, error) {
	ctx, out, in, rows, eps, dims, f := l.ctx, l.out, l.in, l.rows, l.eps, l.dims, l.f
	d := dims(out)[1]
	return func() error { ctx.RMSNorm(f(out), f(in[0]), f(in[1]), rows, d, float32(eps)); return nil }, nil
}

func lowerMatMul(l *lowering) (func() error, error) {
	p, ctx, out, in, rows, dims, f := l.p, l.ctx, l.out, l.in, l.rows, l.dims, l.f
	k, nOut := dims(in[0])[1], dims(in[1])[0]
	var bias []float32
	if len(in) == 3 {
		bias = f(in[2])
	}
	// A TEE-local product runs the kernel the local device would run on
	// the same weights (so a kept-local op gives the bits of an offloaded
	// one): q8_0/q4_0 quantize the input rows to q8_0 blocks first, bf16
	// widens exactly.
	if qm := p.q[in[1]]; qm != nil {
		if qm.Format == wire.Int8 {
			// int8 rows multiply the f32 rows as they are.
			return func() error { ctx.MatMulTInt8(f(out), f(in[0]), qm.Data, rows, k, nOut, bias); return nil }, nil
		}
		qc := l.b.qctx
		return func() error { return qc.MatMul(f(out), f(in[0]), rows, qm, bias) }, nil
	}
	if w := p.b16[in[1]]; w != nil {
		if dot, _ := l.n.Attrs.Bool(ir.AttrBF16Dot); dot {
			return func() error { ctx.MatMulTBF16Dot(f(out), f(in[0]), w, rows, k, nOut, bias); return nil }, nil
		}
		return func() error { ctx.MatMulTBF16(f(out), f(in[0]), w, rows, k, nOut, bias); return nil }, nil
	}
	if p.f32[in[1]] == nil {
		return nil, fmt.Errorf("the TEE multiplies f32, bf16, q8_0, q4_0, q4_k or int8 weights, %v is %v", in[1], p.g.Node(in[1]).Type)
	}
	return func() error { ctx.MatMulT(f(out), f(in[0]), f(in[1]), rows, k, nOut, bias); return nil }, nil
}

func lowerQKNorm(l *lowering) (func() error, error) {
	ctx, out, in, rows, eps, f, attr := l.ctx, l.out, l.in, l.rows, l.eps, l.f, l.attr
	heads, hd := attr("heads"), attr("head_dim")
	return func() error {
		copy(f(out), f(in[0]))
		ctx.HeadRMSNorm(f(out), f(in[1]), rows, heads, hd, float32(eps))
		return nil
	}, nil
}

func lowerRope(l *lowering) (func() error, error) {
	b, p, n, out, in, rows, f, i32, attr := l.b, l.p, l.n, l.out, l.in, l.rows, l.f, l.i32, l.attr
	heads, hd := attr("heads"), attr("head_dim")
	theta, _ := n.Attrs.Float("theta")
	maxPos := maxPositions(p)
	r := b.rope(hd, theta, maxPos)
	return func() error {
		copy(f(out), f(in[0]))
		return r.Apply(f(out), rows, heads, hd, i32(in[1]))
	}, nil
}

func lowerKVAppend(l *lowering) (func() error, error) {
	p, ctx, in, dims, f, i32, kv := l.p, l.ctx, l.in, l.dims, l.f, l.i32, l.kv
	cd := dims(in[0])
	width, maxT := cd[2], cd[1]
	xr := dims(in[1])[0]
	// The head-major layout needs the head width: the attention that
	// reads this cache has it.
	hd, err := cacheHeadDim(p, l.out)
	if err != nil {
		return nil, err
	}
	return func() error { return ctx.KVAppend(kv(in[0]), f(in[1]), xr, width/hd, hd, maxT, i32(in[2]), i32(in[3])) }, nil
}

// cacheHeadDim is the head_dim of the attention that reads cache value v
// (through in-place updates): kv_append carries no head attributes.
func cacheHeadDim(p *Program, v ir.ValueID) (int, error) {
	s := p.storage(v)
	for _, n := range p.g.Nodes {
		if n.Op != ir.OpAttention {
			continue
		}
		for _, c := range n.Inputs[1:3] {
			if p.storage(c) == s {
				hd, _ := n.Attrs.Int("head_dim")
				return int(hd), nil
			}
		}
	}
	return 0, fmt.Errorf("kv_append: no attention reads its cache %v, so its head width is unknown", v)
}

func lowerAttention(l *lowering) (func() error, error) {
	p, n, ctx, out, in, rows, dims, f, i32, attr, kv := l.p, l.n, l.ctx, l.out, l.in, l.rows, l.dims, l.f, l.i32, l.attr, l.kv
	heads, kvh, hd := attr("heads"), attr("kv_heads"), attr("head_dim")
	scale, _ := n.Attrs.Float("scale")
	maxT := dims(in[1])[1]
	// A captured decode step is keyed by a kv-length bucket L: it
	// serves positions below L only, and refuses others rather than
	// silently running outside the geometry it was captured for.
	limit := maxT
	if l, ok := p.bind["L"]; ok && l > 0 && l < maxT {
		limit = l
	}
	return func() error {
		for _, q := range i32(in[4]) {
			if int(q) >= limit {
				return fmt.Errorf("position %d is outside the kv bucket of %d this step was captured for", q, limit)
			}
		}
		return ctx.Attention(f(out), f(in[0]), kv(in[1]), kv(in[2]), rows, heads, kvh, hd, maxT, i32(in[3]), i32(in[4]), float32(scale))
	}, nil
}

func lowerSiLU(l *lowering) (func() error, error) {
	ctx, out, in, f := l.ctx, l.out, l.in, l.f
	return func() error { ctx.SiLU(f(out), f(in[0])); return nil }, nil
}

func lowerMul(l *lowering) (func() error, error) {
	ctx, out, in, f := l.ctx, l.out, l.in, l.f
	return func() error { ctx.Mul(f(out), f(in[0]), f(in[1])); return nil }, nil
}

func lowerAdd(l *lowering) (func() error, error) {
	ctx, out, in, f := l.ctx, l.out, l.in, l.f
	return func() error { ctx.Add(f(out), f(in[0]), f(in[1])); return nil }, nil
}

func lowerLastRow(l *lowering) (func() error, error) {
	out, in, dims, f := l.out, l.in, l.dims, l.f
	d := dims(in[0])[1]
	return func() error {
		x := f(in[0])
		copy(f(out), x[len(x)-d:])
		return nil
	}, nil
}

// lowerDevice sends a device-placed matmul to the Device: the operand
// rows cross, the weight is already resident, the product comes back.
func (b *Backend) lowerDevice(p *Program, n *ir.Node) (func() error, error) {
	if len(n.Inputs) != 2 {
		return nil, fmt.Errorf("a device %s takes no bias (the protect pass moves it to the TEE)", n.Op)
	}
	if p.g.Node(n.Inputs[0]).Type.DType == ir.U32 {
		return b.lowerLatticeDevice(p, n)
	}
	name, ok := WeightName(p.g, n.Inputs[1])
	if !ok {
		return nil, fmt.Errorf("device %s: operand 2 is not a named weight", n.Op)
	}
	w := n.Inputs[1]
	if qm := p.q[w]; qm != nil && !roundsInput(qm.Format) {
		// A format whose product takes the f32 rows as they are (int8):
		// its rows are uploaded as they are kept, the product is MatMul's.
		name = p.g.Node(w).Type.DType.String() + ":" + name
		if err := b.uploadOnce(name, func() error { return b.dev.UploadQ(name, qm) }); err != nil {
			return nil, fmt.Errorf("upload %q: %w", name, err)
		}
		x, out, rows, dev, tr := n.Inputs[0], n.ID, p.dims[n.ID][0], b.dev, b.traffic
		wr, wc := qm.Rows, qm.Cols
		return func() error {
			tr.add(rows, 4*rows*wc, 4*rows*wr)
			return dev.MatMul(n.Op, name, p.f32[p.storage(x)], rows, p.f32[out])
		}, nil
	}
	if qm := p.q[w]; qm != nil {
		name = p.g.Node(w).Type.DType.String() + ":" + name
		if err := b.uploadOnce(name, func() error { return b.dev.UploadQ(name, qm) }); err != nil {
			return nil, fmt.Errorf("upload %q: %w", name, err)
		}
		x, out, dev := n.Inputs[0], n.ID, b.dev
		if p.qa[x] == nil {
			return nil, fmt.Errorf("device %s on quantized weights reads %v, which is not q8_0 rows", n.Op, x)
		}
		tr, wrows := b.traffic, p.dims[w][0]
		return func() error {
			a := p.qa[x]
			tr.add(a.Rows(), a.Rows()*(a.Cols()/ir.QuantBlock)*ir.BlockBytesQ8_0, 4*a.Rows()*wrows)
			return dev.MatMulQ(n.Op, name, a, p.f32[out])
		}, nil
	}
	wr, wc, err := matrixShape(p.dims[w])
	if err != nil {
		return nil, fmt.Errorf("upload %q: %w", name, err)
	}
	var send func() error
	data := p.b16[w]
	dot, _ := n.Attrs.Bool(ir.AttrBF16Dot)
	dot = dot && data != nil
	switch {
	case dot:
		dd, ok := b.dev.(device.BF16Dotter)
		if !ok {
			return nil, fmt.Errorf("device %s %q: the device (%T) has no bf16 dot product (--weights bf16dot): use --device local, or --weights bf16", n.Op, name, b.dev)
		}
		if err := payloadOnlyMatMuls(p.g, n.Inputs[0]); err != nil {
			return nil, err
		}
		name = "bf16dot:" + name
		send = func() error { return dd.UploadBF16Dot(name, data, wr, wc) }
	case data != nil:
		name = "bf16:" + name
		send = func() error { return b.dev.UploadBF16(name, data, wr, wc) }
	default:
		send = func() error { return b.dev.Upload(name, p.f32[w], wr, wc) }
	}
	if err := b.uploadOnce(name, send); err != nil {
		return nil, fmt.Errorf("upload %q: %w", name, err)
	}
	x, out, rows, dev, tr := n.Inputs[0], n.ID, p.dims[n.ID][0], b.dev, b.traffic
	if dot {
		// The payload leaves rounded to bf16 (what the dot product
		// multiplies), so the device computes exactly the product of
		// what it was sent and the probes check that.
		return func() error {
			tr.add(rows, 4*rows*wc, 4*rows*wr)
			pay := p.f32[p.storage(x)][:rows*wc]
			kernels.RoundToBF16(pay)
			return dev.MatMul(n.Op, name, pay, rows, p.f32[out])
		}, nil
	}
	return func() error {
		tr.add(rows, 4*rows*wc, 4*rows*wr)
		return dev.MatMul(n.Op, name, p.f32[p.storage(x)], rows, p.f32[out])
	}, nil
}

// roundsInput reports whether the product on f's matrices multiplies
// q8_0 rows of its input (the GGUF block formats), from f's format
// record; false for int8, whose product takes f32 rows.
func roundsInput(f wire.Format) bool {
	dt, _ := f.DType()
	rec, err := formats.ByDType(dt)
	return err != nil || rec.RoundsInput()
}

// payloadOnlyMatMuls refuses a bf16dot crossing whose payload x (rounded
// to bf16 in place before it leaves) is read by anything other than
// bf16dot linear ops and the probes of their products: nothing in the TEE
// may see the rounded values in place of its own.
func payloadOnlyMatMuls(g *ir.Graph, x ir.ValueID) error {
	for _, c := range g.Nodes {
		if !slices.Contains(c.Inputs, x) {
			continue
		}
		dot, _ := c.Attrs.Bool(ir.AttrBF16Dot)
		if ir.IsLinear(c.Op) && dot && c.Inputs[0] == x || c.Op == ir.OpProbe {
			continue
		}
		return fmt.Errorf("bf16dot payload %v is also read by %v = %s, which must not see it rounded", x, c.ID, c.Op)
	}
	return nil
}

// useSlot records that the next instruction uses n's mask slot.
func (p *Program) useSlot(n *ir.Node) (*slot, error) {
	id, _ := n.Attrs.Int("slot")
	family, _ := n.Attrs.Str("family")
	size, groups := p.dims[n.ID][0], 1
	if pr, _ := n.Attrs.Bool("per_row"); pr {
		// The operand stacks one block per sequence; its data rows are the
		// batch B, bound on the graph.
		groups = p.bind["B"]
		if groups <= 0 || size%groups != 0 {
			return nil, fmt.Errorf("per-row mask over %d rows: batch B = %d does not divide them", size, groups)
		}
		size /= groups
	}
	at := len(p.instrs)
	sl, ok := p.slots[id]
	if !ok {
		sl = &slot{family: family, size: size, groups: groups, first: at}
		p.slots[id] = sl
	}
	if sl.family != family || sl.size != size || sl.groups != groups {
		return nil, fmt.Errorf("mask slot %d is used as %dx%s[%d] and as %dx%s[%d]", id, sl.groups, sl.family, sl.size, groups, family, size)
	}
	sl.last = at
	return sl, nil
}

// maxPositions is the cache capacity T, the bound on every position: the
// T of the first in-place result (a cache [S, T, kv] or a pair of them).
func maxPositions(p *Program) int {
	for i, n := range p.g.Nodes {
		if ir.WritesCache(n.Op) {
			d := p.dims[i]
			return d[len(d)-2]
		}
	}
	return 1 << 16
}

// meanRows writes the mean of the r rows of x into y: each column summed
// in float64 in row order (acc is d float64 of scratch), streaming the
// rows once.
func meanRows(y, x []float32, acc []float64, r, d int) {
	clear(acc)
	for i := 0; i < r; i++ {
		for j, v := range x[i*d : (i+1)*d] {
			acc[j] += float64(v)
		}
	}
	for j := range acc {
		y[j] = float32(acc[j] / float64(r))
	}
}

// centerRows writes the r rows of x minus their mean, then the mean row,
// into y (r+1 rows of d). The mean is summed in float64 in row order, so
// the result does not depend on the worker count.
func centerRows(y, x []float32, acc []float64, r, d int) {
	mean := y[r*d : (r+1)*d]
	meanRows(mean, x, acc, r, d)
	for i := 0; i < r; i++ {
		for j := 0; j < d; j++ {
			y[i*d+j] = x[i*d+j] - mean[j]
		}
	}
}

// maskGroups copies x into y and applies (or unapplies) each group's mask
// to its block of rows.
func (p *Program) maskGroups(y, x []float32, sl *slot, blk, d int, apply bool) error {
	copy(y, x)
	for g := 0; g < sl.groups; g++ {
		m, err := p.maskOf(sl, g)
		if err != nil {
			return err
		}
		part := y[g*blk : (g+1)*blk]
		if apply {
			err = m.Apply(part, d)
		} else {
			err = m.Unapply(part, d)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// slotOfStack finds the mask slot the stacked rows go to (the mask that
// reads them), so the shield fill can run on that slot's workspace team;
// -1 when there is none (the fill then runs serially).
func (p *Program) slotOfStack(n *ir.Node) int64 {
	for _, m := range p.g.Nodes[n.ID+1:] {
		if m.Op == ir.OpMask && len(m.Inputs) > 0 && m.Inputs[0] == n.ID {
			id, _ := m.Attrs.Int("slot")
			return id
		}
	}
	return -1
}

// fillShield fills shield rows from the pass stream, in parallel on the
// workspace of the slot the rows are masked with. The rows are the same
// bits as the serial fill's, whatever the worker count.
func (p *Program) fillShield(slot int64, dst []float32, k, d int, data []float32, n int, energy float64) error {
	if sl := p.slots[slot]; sl != nil && len(sl.ws) > 0 {
		return sl.ws[0].FillShield(dst, k, d, data, n, energy, p.b.rng)
	}
	return mask.FillShield(dst, k, d, data, n, energy, p.b.rng)
}
