//go:build cgo

package vulkan

// The lowering of one graph into its step's command buffer: a dispatch
// (or a view, for free) per op, a barrier after each.

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"gelo/device/wire"
	"gelo/ir"
	"gelo/lower"
	"gelo/models/rope"
)

// val is an f32 value on the device: rows x cols floats of buf starting
// at element off, rows stride apart.
type val struct {
	buf                     *buffer
	off, stride, rows, cols int
	at                      int // a cache: where in idx its offset lies
}

func (v val) contiguous() bool { return v.off == 0 && v.stride == v.cols }

// qval is q8_0 activation rows on the device: int8 quants four a word and
// a scale a block.
type qval struct {
	q, d       *buffer
	rows, cols int
}

// recorder lowers one graph into one command buffer.
type recorder struct {
	p      *ForwardProgram
	cb     cmdBuffer
	vals   []val
	pairs  map[ir.ValueID][2]val
	cache  map[ir.ValueID]val    // cache values: buf, off; rows = S*T, cols = W
	cpairs map[ir.ValueID][2]val // norm_rope_append_kv's (k, v) caches
	qvals  map[ir.ValueID]qval   // q8_0 activation rows
	mbufs  map[int]*buffer       // matmul row counts, one tiny buffer each
	n      int
}

func u32(v float64) uint32 { return math.Float32bits(float32(v)) }

// fresh allocates a contiguous rows x cols value.
func (r *recorder) fresh(rows, cols int) (val, error) {
	b, err := r.p.f.d.c.newBuffer(4*int64(rows*cols), memDevice)
	if err != nil {
		return val{}, err
	}
	r.p.bufs = append(r.p.bufs, b)
	return val{buf: b, rows: rows, cols: cols, stride: cols}, nil
}

func (r *recorder) set(dsl setLayout, bs []*buffer) (descSet, error) {
	f := r.p.f
	bind := make([]binding, len(bs))
	for i, b := range bs {
		if b == nil {
			b = f.dummy
		}
		bind[i] = binding{b, 0, b.size()}
	}
	p := r.p
	if len(p.pools) == 0 || p.poolUsed == poolSets {
		pl, err := f.d.c.pool(poolSets, poolSets*fwdBindings)
		if err != nil {
			return 0, err
		}
		p.pools, p.poolUsed = append(p.pools, pl), 0
	}
	p.poolUsed++
	return f.d.c.set(p.pools[len(p.pools)-1], dsl, bind)
}

// op records one fwd shader dispatch and a barrier after it.
func (r *recorder) op(kind int, bs [5]*buffer, push []uint32, gx, gy int) error {
	f := r.p.f
	s, err := r.set(f.fdsl, append([]*buffer{r.p.idx}, bs[:]...))
	if err != nil {
		return err
	}
	var pc [fwdPush]uint32
	copy(pc[:], push)
	f.d.c.dispatchPush(r.cb, f.fpipes[kind], f.fpl, s, pc[:], gx, max(gy, 1), 1)
	f.d.c.barrier(r.cb)
	r.n++
	return nil
}

// ew records an elementwise op over rows x cols into out.
func (r *recorder) ew(op int, a, b, out val) error {
	n := out.rows * out.cols
	groups := (n + 63) / 64
	gx := min(groups, r.p.f.d.c.info.MaxGroupCount[0])
	gy := min((groups+gx-1)/gx, r.p.f.d.c.info.MaxGroupCount[1])
	return r.op(fwdEW, [5]*buffer{a.buf, b.buf, out.buf},
		[]uint32{uint32(op), uint32(out.rows), uint32(out.cols), uint32(a.off), uint32(a.stride),
			uint32(b.off), uint32(b.stride), uint32(out.off), uint32(out.stride)}, gx, gy)
}

// matmul records y = x W^T on the resident weight's parts with the
// crossing shaders.
func (r *recorder) matmul(x val, xq *qval, w *weight) (val, error) {
	quant := w.format == fmtQ8 || w.format == fmtQ4
	if quant != (xq != nil) {
		return val{}, fmt.Errorf("a %s weight multiplies %s activations", formatNames[w.format], map[bool]string{true: "q8_0", false: "f32"}[quant])
	}
	if xq != nil {
		x = val{rows: xq.rows, cols: xq.cols, stride: xq.cols}
	}
	if x.cols != w.cols {
		return val{}, fmt.Errorf("activation of %d cols for a [%d, %d] weight", x.cols, w.rows, w.cols)
	}
	if xq == nil && !x.contiguous() {
		cx, err := r.fresh(x.rows, x.cols)
		if err != nil {
			return val{}, err
		}
		if err := r.ew(ewCopy, x, x, cx); err != nil {
			return val{}, err
		}
		x = cx
	}
	y, err := r.fresh(x.rows, w.rows)
	if err != nil {
		return val{}, err
	}
	d := r.p.f.d
	c := d.c
	m := x.rows
	mb := r.mbufs[m]
	if mb == nil {
		if mb, err = c.newBuffer(16, memHost); err != nil {
			return val{}, err
		}
		r.p.bufs = append(r.p.bufs, mb)
		*(*uint32)(unsafe.Pointer(&mb.mapped()[0])) = uint32(m)
		r.mbufs[m] = mb
	}
	kind := d.kind(w.format, m)
	for _, pt := range w.parts {
		bs := []*buffer{mb, pt.buf, x.buf, r.p.f.dummy, y.buf}
		if xq != nil {
			bs[2], bs[3] = xq.q, xq.d
		}
		s, err := r.set(d.dsl, bs)
		if err != nil {
			return val{}, err
		}
		push := [4]uint32{uint32(pt.rows), uint32(w.cols), uint32(pt.r0), uint32(w.rows)}
		var groups, gy, gz int
		switch kind {
		case kindTiled:
			groups, gy, gz = (pt.rows+15)/16, (m+15)/16, 1
		case kindRows:
			groups, gz = (pt.rows+63)/64, (m+matVecRows-1)/matVecRows
		default:
			per := max(1, 64/c.info.SubgroupSize)
			groups, gz = (pt.rows+per-1)/per, 1
		}
		gx := groups
		if kind != kindTiled {
			gx = min(groups, c.info.MaxGroupCount[0])
			gy = min((groups+gx-1)/gx, c.info.MaxGroupCount[1])
		}
		c.dispatch(r.cb, d.pipes[kind][w.format], d.pl, s, &push, gx, gy, gz)
		r.n++
	}
	c.barrier(r.cb)
	return y, nil
}

// quantize records the q8_0 activation rows of x as value id.
func (r *recorder) quantize(id ir.ValueID, x val) error {
	if x.cols%wire.QK != 0 {
		return fmt.Errorf("q8_0 rows of %d columns (want a multiple of %d)", x.cols, wire.QK)
	}
	c := r.p.f.d.c
	q, err := c.newBuffer(int64(x.rows*x.cols), memDevice)
	if err != nil {
		return err
	}
	r.p.bufs = append(r.p.bufs, q)
	dd, err := c.newBuffer(4*int64(x.rows*x.cols/wire.QK), memDevice)
	if err != nil {
		return err
	}
	r.p.bufs = append(r.p.bufs, dd)
	blocks := x.rows * x.cols / wire.QK
	groups := (blocks + 63) / 64
	gx := min(groups, c.info.MaxGroupCount[0])
	if err := r.op(fwdQuant, [5]*buffer{x.buf, q, dd},
		[]uint32{uint32(blocks), uint32(x.cols / wire.QK), uint32(x.off), uint32(x.stride)}, gx, (groups+gx-1)/gx); err != nil {
		return err
	}
	r.qvals[id] = qval{q: q, d: dd, rows: x.rows, cols: x.cols}
	return nil
}

// idxOf returns the idx offset of an index operand, which must be a
// graph input.
func (r *recorder) idxOf(id ir.ValueID) (uint32, error) {
	n := r.p.g.Node(id)
	if n == nil || n.Op != ir.OpInput {
		return 0, fmt.Errorf("index operand %v is not a graph input", id)
	}
	name, _ := n.Attrs.Str("name")
	off, ok := r.p.i32Off[name]
	if !ok {
		return 0, fmt.Errorf("index operand %q is not an i32 vector", name)
	}
	return uint32(off), nil
}

// normWeight returns the resident f32 buffer of a 1-D weight operand.
func (r *recorder) normWeight(id ir.ValueID) (*buffer, error) {
	n := r.p.g.Node(id)
	if n == nil || n.Op != ir.OpWeight {
		return nil, fmt.Errorf("operand %v is not a weight", id)
	}
	name, _ := n.Attrs.Str("name")
	return r.p.f.smallBuf("w:"+name, func() ([]float32, error) {
		data, _, err := r.p.f.weights.Get(name)
		return data, err
	})
}

func (r *recorder) ropeTables(hd int, theta float64) (cos, sin *buffer, err error) {
	T := max(r.p.maxT, 1)
	key := fmt.Sprintf("rope:%d:%g:%d", hd, theta, T)
	var cs, sn []float32
	mk := func() error {
		if cs == nil {
			cs, sn, err = rope.Tables(hd, theta, T)
		}
		return err
	}
	if cos, err = r.p.f.smallBuf(key+":cos", func() ([]float32, error) { return cs, mk() }); err != nil {
		return nil, nil, err
	}
	sin, err = r.p.f.smallBuf(key+":sin", func() ([]float32, error) { return sn, mk() })
	return cos, sin, err
}

// headOp records fwd_rope over every (row, head) of x: flags 1 norm,
// 2 rope, 4 write into the cache slot of (seq, pos).
func (r *recorder) headOp(x val, heads, hd int, flags uint32, eps float64, w, cos, sin *buffer, posOff, seqOff uint32, out val, T int) error {
	if hd > maxHeadDim || hd%2 != 0 {
		return fmt.Errorf("head_dim %d: want an even size up to %d", hd, maxHeadDim)
	}
	at := r.p.zeroAt
	if flags&4 != 0 {
		at = out.at
	}
	return r.op(fwdRope, [5]*buffer{x.buf, w, cos, sin, out.buf},
		[]uint32{uint32(heads), uint32(hd), uint32(x.off), uint32(x.stride), flags, u32(eps),
			uint32(out.off), uint32(out.stride), uint32(T), posOff, seqOff, uint32(at)}, x.rows*heads, 1)
}

func (p *ForwardProgram) record() error {
	f, g := p.f, p.g
	c := f.d.c
	var err error
	if p.cb, err = c.begin(); err != nil {
		return err
	}
	r := &recorder{p: p, cb: p.cb, vals: make([]val, len(g.Nodes)), pairs: map[ir.ValueID][2]val{},
		cache: map[ir.ValueID]val{}, cpairs: map[ir.ValueID][2]val{}, qvals: map[ir.ValueID]qval{}, mbufs: map[int]*buffer{}}
	for _, n := range g.Nodes {
		if err := r.node(n); err != nil {
			return fmt.Errorf("%v = %s: %w", n.ID, n.Op, err)
		}
	}
	for _, o := range g.Outputs {
		if id, ok := p.cacheIn[o.Name]; ok {
			got, isCache := r.cache[o.Value]
			if !isCache || got.buf != r.cache[id].buf || got.off != r.cache[id].off {
				return fmt.Errorf("output %q is not its cache input updated in place", o.Name)
			}
			continue
		}
		v := r.vals[o.Value]
		if v.buf == nil {
			return fmt.Errorf("output %q has no value", o.Name)
		}
		if v.buf.mapped() == nil {
			// A device without host-visible device memory: the logits
			// come back through a host buffer.
			h, err := c.newBuffer(4*int64(v.rows*v.cols), memHost)
			if err != nil {
				return err
			}
			p.bufs = append(p.bufs, h)
			hv := val{buf: h, rows: v.rows, cols: v.cols, stride: v.cols}
			if err := r.ew(ewCopy, v, v, hv); err != nil {
				return err
			}
			v = hv
		}
		p.out = v
	}
	if err := c.end(p.cb); err != nil {
		return err
	}
	p.dispatches = r.n
	return nil
}

// lowering is one node being recorded: what every entry of lowerings
// reads.
type lowering struct {
	r  *recorder
	n  *ir.Node
	in []ir.ValueID
	d  []int // the node's bound dims
}

// lowerFunc records one node: its dispatches, or the view, pair or cache
// entry it makes.
type lowerFunc func(l lowering) error

// lowerings is this backend's op table for whole-forward programs: each
// op it records, and how.
var lowerings = map[string]lowerFunc{
	ir.OpWeight:           lowerResident,
	ir.OpConcatWeights:    lowerResident,
	ir.OpInput:            lowerInput,
	ir.OpEmbed:            lowerEmbed,
	ir.OpRMSNorm:          lowerRMSNorm,
	ir.OpQKNorm:           lowerRMSNorm,
	ir.OpAddRMSNorm:       lowerRMSNorm,
	ir.OpTake:             lowerTake,
	ir.OpMatMul:           lowerMatMul,
	ir.OpLMHead:           lowerMatMul,
	ir.OpBiasAdd:          lowerBiasAdd,
	ir.OpRope:             lowerRope,
	ir.OpNormRope:         lowerRope,
	ir.OpKVAppend:         lowerKVAppend,
	ir.OpNormRopeAppend:   lowerNormRopeAppend,
	ir.OpNormRopeAppendKV: lowerNormRopeAppendKV,
	ir.OpAttention:        lowerAttention,
	ir.OpSiLU:             lowerElementwise,
	ir.OpMul:              lowerElementwise,
	ir.OpAdd:              lowerElementwise,
	ir.OpSwiGLU:           lowerElementwise,
	ir.OpSliceCols:        lowerSliceCols,
	ir.OpLastRow:          lowerLastRow,
	ir.OpToDevice:         lowerCrossing,
	ir.OpToTEE:            lowerCrossing,
	ir.OpProbe:            lowerCrossing,
}

// loweredOps are the ops of lowerings, sorted (Capabilities).
func loweredOps() []string { return lower.SortedKeys(lowerings) }

func (r *recorder) node(n *ir.Node) error {
	lower := lowerings[n.Op]
	if lower == nil {
		return fmt.Errorf("op not supported")
	}
	return lower(lowering{r: r, n: n, in: n.Inputs, d: r.p.dims[n.ID]})
}

func (l lowering) attr(name string) int { x, _ := l.n.Attrs.Int(name); return int(x) }

func (l lowering) eps() float64 { eps, _ := l.n.Attrs.Float("eps"); return eps }

// v is operand i's f32 value on the device.
func (l lowering) v(i int) (val, error) {
	x := l.r.vals[l.in[i]]
	if x.buf == nil {
		return val{}, fmt.Errorf("operand %d (%v) has no f32 value on the device", i, l.in[i])
	}
	return x, nil
}

// cacheOf is operand i as a KV cache.
func (l lowering) cacheOf(i int) (val, error) {
	cv, ok := l.r.cache[l.in[i]]
	if !ok {
		return val{}, fmt.Errorf("operand %d (%v) is not a KV cache", i, l.in[i])
	}
	return cv, nil
}

// setOut makes x the node's value and returns err (the error of the
// dispatch that fills x).
func (l lowering) setOut(x val, err error) error {
	l.r.vals[l.n.ID] = x
	return err
}

// lowerResident: weights are resident, fetched by their users.
func lowerResident(lowering) error { return nil }

func lowerInput(l lowering) error {
	p, d := l.r.p, l.d
	name, _ := l.n.Attrs.Str("name")
	if _, ok := p.cacheIn[name]; ok {
		l.r.cache[l.n.ID] = val{buf: p.bound[name], rows: d[0] * d[1], cols: d[2], stride: d[2], at: p.cacheAt[name]}
	}
	return nil
}

func lowerEmbed(l lowering) error {
	r, p, in, d := l.r, l.r.p, l.in, l.d
	ids, err := r.idxOf(in[0])
	if err != nil {
		return err
	}
	if src := p.g.Node(in[0]); src != nil {
		p.tokIn, _ = src.Attrs.Str("name")
	}
	p.vocab = p.dims[in[1]][0]
	w, err := p.f.embedTable(p.g, p.g.Node(in[1]), p.dims[in[1]][0], p.dims[in[1]][1])
	if err != nil {
		return err
	}
	out, err := r.fresh(d[0], d[1])
	if err != nil {
		return err
	}
	for _, pt := range w.parts {
		if err := r.op(fwdEmbed, [5]*buffer{pt.buf, out.buf},
			[]uint32{uint32(d[1]), uint32(pt.r0), uint32(pt.rows), ids, 0, uint32(d[1])}, d[0], 1); err != nil {
			return err
		}
	}
	r.vals[l.n.ID] = out
	return nil
}

// lowerRMSNorm: rms_norm (x, w), qk_norm (x, w; per head) and
// add_rms_norm (a, b, w; the pair of the sum and its norm), one shader.
func lowerRMSNorm(l lowering) error {
	r, n := l.r, l.n
	x, err := l.v(0)
	if err != nil {
		return err
	}
	b := x
	wi := 1
	if n.Op == ir.OpAddRMSNorm {
		if b, err = l.v(1); err != nil {
			return err
		}
		wi = 2
	}
	w, err := r.normWeight(l.in[wi])
	if err != nil {
		return err
	}
	seg, per := x.cols, 1
	if n.Op == ir.OpQKNorm {
		per, seg = l.attr("heads"), l.attr("head_dim")
	}
	y, err := r.fresh(x.rows, x.cols)
	if err != nil {
		return err
	}
	sum := y
	add := uint32(0)
	if n.Op == ir.OpAddRMSNorm {
		if sum, err = r.fresh(x.rows, x.cols); err != nil {
			return err
		}
		add = 1
	}
	if err := r.op(fwdRMSNorm, [5]*buffer{x.buf, b.buf, w, y.buf, sum.buf},
		[]uint32{uint32(seg), uint32(per), uint32(x.off), uint32(x.stride), uint32(b.off), uint32(b.stride),
			uint32(y.off), uint32(y.stride), uint32(sum.off), uint32(sum.stride), u32(l.eps()), add}, x.rows*per, 1); err != nil {
		return err
	}
	if n.Op == ir.OpAddRMSNorm {
		r.pairs[n.ID] = [2]val{sum, y}
		return nil
	}
	r.vals[n.ID] = y
	return nil
}

func lowerTake(l lowering) error {
	r, in := l.r, l.in
	i := l.attr("index")
	if pr, ok := r.pairs[in[0]]; ok && i < 2 {
		r.vals[l.n.ID] = pr[i]
		return nil
	}
	if cp, ok := r.cpairs[in[0]]; ok && i < 2 {
		r.cache[l.n.ID] = cp[i]
		return nil
	}
	return fmt.Errorf("take %d of %v, which is not a pair", i, in[0])
}

func lowerMatMul(l lowering) error {
	r, p, in := l.r, l.r.p, l.in
	var x val
	var xq *qval
	var err error
	if q, ok := r.qvals[in[0]]; ok {
		xq = &q
	} else if x, err = l.v(0); err != nil {
		return err
	}
	wn := p.g.Node(in[1])
	w, err := p.f.matWeight(p.g, wn, p.dims[in[1]][0], p.dims[in[1]][1])
	if err != nil {
		return err
	}
	y, err := r.matmul(x, xq, w)
	if err != nil {
		return err
	}
	if len(in) == 3 {
		b, err := l.v(2)
		if err != nil {
			return err
		}
		if err := r.ew(ewBias, y, b, y); err != nil {
			return err
		}
	}
	r.vals[l.n.ID] = y
	return nil
}

func lowerBiasAdd(l lowering) error {
	x, err := l.v(0)
	if err != nil {
		return err
	}
	b, err := l.v(1)
	if err != nil {
		return err
	}
	out, err := l.r.fresh(x.rows, x.cols)
	if err != nil {
		return err
	}
	return l.setOut(out, l.r.ew(ewBias, x, b, out))
}

// lowerRope: rope (x, pos) and norm_rope (x, w, pos) into a fresh value.
func lowerRope(l lowering) error {
	r, in := l.r, l.in
	theta, _ := l.n.Attrs.Float("theta")
	heads, hd := l.attr("heads"), l.attr("head_dim")
	x, err := l.v(0)
	if err != nil {
		return err
	}
	cos, sin, err := r.ropeTables(hd, theta)
	if err != nil {
		return err
	}
	flags, posIn := uint32(2), in[1]
	var w *buffer
	if l.n.Op == ir.OpNormRope {
		if w, err = r.normWeight(in[1]); err != nil {
			return err
		}
		flags, posIn = 3, in[2]
	}
	pos, err := r.idxOf(posIn)
	if err != nil {
		return err
	}
	out, err := r.fresh(x.rows, x.cols)
	if err != nil {
		return err
	}
	return l.setOut(out, r.headOp(x, heads, hd, flags, l.eps(), w, cos, sin, pos, 0, out, 0))
}

// appendHeads records operand xi written into cache at the (seq, pos)
// slots of operands seqi and posi: every head normalised by operand wi's
// weight and rotated first when wi >= 0 (the K of the norm_rope_append
// ops), as it is otherwise (kv_append's rows, the V of
// norm_rope_append_kv). The appends of all three ops are this one shader
// call. heads 0 writes each row as one head of its width.
func (l lowering) appendHeads(cache val, xi, wi, seqi, posi, heads, hd int) error {
	r, in := l.r, l.in
	x, err := l.v(xi)
	if err != nil {
		return err
	}
	if heads == 0 {
		heads, hd = 1, x.cols
	}
	flags := uint32(4)
	var w, cos, sin *buffer
	if wi >= 0 {
		if w, err = r.normWeight(in[wi]); err != nil {
			return err
		}
		theta, _ := l.n.Attrs.Float("theta")
		if cos, sin, err = r.ropeTables(hd, theta); err != nil {
			return err
		}
		flags = 7
	}
	seq, err1 := r.idxOf(in[seqi])
	pos, err2 := r.idxOf(in[posi])
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	T := r.p.dims[in[0]][1]
	return r.headOp(x, heads, hd, flags, l.eps(), w, cos, sin, pos, seq, cache, T)
}

// lowerKVAppend: cache, x, seq, pos.
func lowerKVAppend(l lowering) error {
	kc, err := l.cacheOf(0)
	if err != nil {
		return err
	}
	l.r.cache[l.n.ID] = kc
	return l.appendHeads(kc, 1, -1, 2, 3, 0, 0)
}

// lowerNormRopeAppend: cache, k, w, seq, pos.
func lowerNormRopeAppend(l lowering) error {
	kc, err := l.cacheOf(0)
	if err != nil {
		return err
	}
	l.r.cache[l.n.ID] = kc
	return l.appendHeads(kc, 1, 2, 3, 4, l.attr("heads"), l.attr("head_dim"))
}

// lowerNormRopeAppendKV: kc, vc, k, v, w, seq, pos; its takes read the
// pair of caches.
func lowerNormRopeAppendKV(l lowering) error {
	kc, err := l.cacheOf(0)
	if err != nil {
		return err
	}
	vc, err := l.cacheOf(1)
	if err != nil {
		return err
	}
	heads, hd := l.attr("heads"), l.attr("head_dim")
	if err := l.appendHeads(kc, 2, 4, 5, 6, heads, hd); err != nil {
		return err
	}
	if err := l.appendHeads(vc, 3, -1, 5, 6, heads, hd); err != nil {
		return err
	}
	l.r.cpairs[l.n.ID] = [2]val{kc, vc}
	return nil
}

// lowerAttention: q, kc, vc, seq, pos.
func lowerAttention(l lowering) error {
	r, p, in := l.r, l.r.p, l.in
	q, err := l.v(0)
	if err != nil {
		return err
	}
	kc, err := l.cacheOf(1)
	if err != nil {
		return err
	}
	vc, err := l.cacheOf(2)
	if err != nil {
		return err
	}
	seq, err1 := r.idxOf(in[3])
	pos, err2 := r.idxOf(in[4])
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	heads, kvh, hd := l.attr("heads"), l.attr("kv_heads"), l.attr("head_dim")
	if hd > maxHeadDim || kvh <= 0 || heads%kvh != 0 {
		return fmt.Errorf("heads %d, kv_heads %d, head_dim %d not supported", heads, kvh, hd)
	}
	scale, _ := l.n.Attrs.Float("scale")
	T := p.dims[in[1]][1]
	out, err := r.fresh(q.rows, heads*hd)
	if err != nil {
		return err
	}
	return l.setOut(out, r.op(fwdAttention, [5]*buffer{q.buf, kc.buf, vc.buf, out.buf},
		[]uint32{uint32(heads), uint32(kvh), uint32(hd), uint32(q.off), uint32(q.stride), uint32(T), uint32(kc.cols),
			uint32(p.limit), u32(scale), 0, uint32(out.stride), pos, seq, uint32(kc.at), uint32(vc.at)}, q.rows*heads, 1))
}

// lowerElementwise: silu, mul, add and swiglu (two operands, or one
// [gate | up]), one shader.
func lowerElementwise(l lowering) error {
	n := l.n
	a, err := l.v(0)
	if err != nil {
		return err
	}
	b := a
	op := ewSiLU
	switch {
	case n.Op == ir.OpMul, n.Op == ir.OpAdd, n.Op == ir.OpSwiGLU && len(l.in) == 2:
		if b, err = l.v(1); err != nil {
			return err
		}
		op = map[string]int{ir.OpMul: ewMul, ir.OpAdd: ewAdd, ir.OpSwiGLU: ewSwiGLU2}[n.Op]
	case n.Op == ir.OpSwiGLU:
		op = ewSwiGLU1
	}
	out, err := l.r.fresh(l.d[0], l.d[1])
	if err != nil {
		return err
	}
	return l.setOut(out, l.r.ew(op, a, b, out))
}

// lowerSliceCols is a view: no dispatch.
func lowerSliceCols(l lowering) error {
	x, err := l.v(0)
	if err != nil {
		return err
	}
	start, width := l.attr("start"), l.attr("width")
	if start < 0 || width <= 0 || start+width > x.cols {
		return fmt.Errorf("columns [%d, %d) of %d", start, start+width, x.cols)
	}
	x.off += start
	x.cols = width
	l.r.vals[l.n.ID] = x
	return nil
}

// lowerLastRow is a view: no dispatch.
func lowerLastRow(l lowering) error {
	x, err := l.v(0)
	if err != nil {
		return err
	}
	x.off += (x.rows - 1) * x.stride
	x.rows = 1
	l.r.vals[l.n.ID] = x
	return nil
}

// lowerCrossing: to_device, to_tee and probe. Mask none, one engine:
// crossings and probes are the identity, but for a quantizing crossing to
// the device, which records the q8_0 rows.
func lowerCrossing(l lowering) error {
	r, n, in := l.r, l.n, l.in
	if q, ok := n.Attrs.Str("quant"); ok && q != "" {
		if n.Op != ir.OpToDevice || q != "q8_0" {
			return fmt.Errorf("quant %q: only q8_0 crossings to the device are supported", q)
		}
		x, err := l.v(0)
		if err != nil {
			return err
		}
		return r.quantize(n.ID, x)
	}
	if q, ok := r.qvals[in[0]]; ok {
		r.qvals[n.ID] = q
		return nil
	}
	if cv, ok := r.cache[in[0]]; ok {
		r.cache[n.ID] = cv
		return nil
	}
	x, err := l.v(0)
	if err != nil {
		return err
	}
	r.vals[n.ID] = x
	return nil
}
