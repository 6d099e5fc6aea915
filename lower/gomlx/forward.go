package gomlx

// Forward lowers a whole unprotected (mask none) forward pass, prefill or
// decode step, to one GoMLX executable: the "plain accelerator" baseline
// the protected plan is compared against. Nothing runs op by op on the
// host; embedding, norms, RoPE, the KV-cache write, attention, the MLP and
// the LM head are all nodes of one graph the engine compiles once per
// binding of the symbolic dims (n for prefill; B and the kv bucket L for
// decode; T the cache capacity).
//
// # What stays and what moves
//
// Weights (and the stacked Q|K|V and gate|up matrices of a fused graph,
// and the RoPE cos/sin tables) are uploaded once per Forward and stay
// resident as backend buffers, shared by every program it compiles. On
// simplego a matmul's weight is resident cut into row blocks laid out as
// a batch axis (as Device does, see splitFor), so the engine spreads the
// product over cores; a tied embedding is then resident twice (the
// gather's [vocab, d] and the LM head's blocks).
//
// The KV caches are the runtime's: it binds caller-owned []float32
// storage with BindFloat32 (shared by the session's prefill and decode
// programs) and expects Run to update it in place. Each Run therefore
// uploads every bound cache, runs the graph, and copies the updated caches
// back into the caller's slices, besides the small tokens/pos/seq inputs
// and the logits. That is 2 x layers x 2 x S*T*kv floats of traffic per
// step: negligible on simplego for short contexts, but under XLA on an
// accelerator it is a host<->device round trip of the whole cache per
// token. A better design keeps the caches resident on the device (a
// per-Forward registry of device cache buffers keyed by the bound
// storage, donated to each Run and replaced by its outputs) and copies
// them back to host only when the caller reads them (Session.Cache); the
// runtime's Executable interface does not yet say when that is, so this
// version takes the simple, always-correct route.
//
// # Numerics
//
// Everything is float32. Sums (dot products, RMS norms, softmax) are in
// the engine's order, not the cpu kernels' canonical one, and softmax
// uses the engine's exp, so logits differ from the cpu backend by
// round-off (measured ~1e-6 relative; the tests allow 1e-4). RoPE uses
// the same float64-computed, float32-rounded tables as the cpu kernels.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"gelo/ir"
	"gelo/models"
	"gelo/models/rope"
	"gelo/models/safetensors"
)

// Forward compiles whole unprotected graphs on one GoMLX backend, over
// one set of weights it keeps resident. It is safe for concurrent use;
// a program it returns is not (like the cpu backend's).
type Forward struct {
	name    string
	be      backends.Backend
	weights *models.Weights
	// split: matmul weights are resident as row blocks laid out as a batch
	// axis (simplego only, as Device does; see splitFor).
	split bool

	mu       sync.Mutex
	resident map[string]*resBuf // weights, stacked weights and rope tables by key
	closed   bool
}

type resBuf struct {
	buf   backends.Buffer
	shape shapes.Shape
}

// NewForward opens the named backend (as New: "go", "go:<options>",
// "xla:cpu", "xla:cuda", or "" for $GOMLX_BACKEND) for whole-forward
// programs over w. Weights are uploaded lazily, once, by the first
// Compile that uses them.
func NewForward(backendName string, w *models.Weights) (*Forward, error) {
	if w == nil {
		return nil, errors.New("gomlx forward: nil weights")
	}
	d, err := New(backendName)
	if err != nil {
		return nil, err
	}
	// New's Device wraps the backend; Forward only needs the engine.
	return &Forward{name: d.name, be: d.be, weights: w, split: d.split, resident: map[string]*resBuf{}}, nil
}

// Name identifies the backend in sessions and reports: "gomlx-forward:<backend>".
func (f *Forward) Name() string { return "gomlx-forward:" + f.name }

// Close frees the resident buffers and the backend. Programs compiled by
// f must not be run afterwards. Close is idempotent.
func (f *Forward) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	var errs []error
	for k, r := range f.resident {
		errs = append(errs, guard("free "+k, func() error { return f.be.BufferFinalize(r.buf) }))
	}
	f.resident = nil
	errs = append(errs, guard("finalize backend", func() error { f.be.Finalize(); return nil }))
	return errors.Join(errs...)
}

// residentBuf returns the resident buffer for key, uploading make()'s
// data once.
func (f *Forward) residentBuf(key string, mk func() ([]float32, []int, error)) (*resBuf, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errors.New("forward is closed")
	}
	if r, ok := f.resident[key]; ok {
		return r, nil
	}
	data, dims, err := mk()
	if err != nil {
		return nil, err
	}
	sh := shapes.Make(dtypes.Float32, dims...)
	if sh.Size() != len(data) {
		return nil, fmt.Errorf("%s: %d values for shape %v", key, len(data), dims)
	}
	var buf backends.Buffer
	if err := guard("upload "+key, func() (err error) {
		buf, err = f.be.BufferFromFlatData(0, data, sh)
		return err
	}); err != nil {
		return nil, err
	}
	r := &resBuf{buf: buf, shape: sh}
	f.resident[key] = r
	return r, nil
}

// ForwardProgram is one graph compiled for fixed bindings: it implements
// runtime.Executable (Float32, Int32, Elems, BindFloat32, Run).
type ForwardProgram struct {
	f    *Forward
	g    *ir.Graph
	exe  backends.Executable
	bind map[string]int

	// Per-run parameters, in executable parameter order, then the
	// resident ones.
	i32In   []hostI32 // tokens, pos, seq ...
	f32In   []hostF32 // KV caches: bound caller storage
	res     []backends.Buffer
	outs    []hostOut
	named   map[string]int // name -> elems
	f32Name map[string]*hostF32
	i32Name map[string]*hostI32
	outName map[string][]float32

	// run-time checks
	maxT, nseq, limit, vocab int
	tokIn                    string // the embed's ids input, if an input
}

type hostI32 struct {
	name  string
	data  []int32
	shape shapes.Shape
}

type hostF32 struct {
	name  string
	data  []float32 // nil until bound
	shape shapes.Shape
}

// hostOut is where an output lands after a run: a program-owned slice
// (logits) or a bound cache's storage (cache names an f32 input).
type hostOut struct {
	name  string
	data  []float32
	cache *hostF32
}

// buildPanic carries a builder error out of the lowering through panic,
// so the lowering reads like the model (the tracer's idiom).
type buildPanic struct{ err error }

type fb struct {
	b backends.Builder
}

func (g fb) m(op backends.Op, err error) backends.Op {
	if err != nil {
		panic(buildPanic{err})
	}
	return op
}

func (g fb) shape(x backends.Op) shapes.Shape {
	s, err := g.b.OpShape(x)
	if err != nil {
		panic(buildPanic{err})
	}
	return s
}

// bcast broadcasts x to dims, x's axes going to axes of the output.
func (g fb) bcast(x backends.Op, axes []int, dims ...int) backends.Op {
	return g.m(g.b.BroadcastInDim(x, shapes.Make(g.shape(x).DType, dims...), axes))
}

func (g fb) constF(v float32, dims ...int) backends.Op {
	c := g.m(g.b.Constant([]float32{v}))
	if len(dims) == 0 {
		return c
	}
	return g.bcast(c, nil, dims...)
}

func (g fb) constI(v int32, dims ...int) backends.Op {
	c := g.m(g.b.Constant([]int32{v}))
	if len(dims) == 0 {
		return c
	}
	return g.bcast(c, nil, dims...)
}

func (g fb) reshape(x backends.Op, dims ...int) backends.Op { return g.m(g.b.Reshape(x, dims...)) }

// slice takes [start, limit) along axis, everything else whole.
func (g fb) slice(x backends.Op, axis, start, limit int) backends.Op {
	dims := g.shape(x).Dimensions
	starts, limits, strides := make([]int, len(dims)), append([]int(nil), dims...), make([]int, len(dims))
	for i := range strides {
		strides[i] = 1
	}
	starts[axis], limits[axis] = start, limit
	return g.m(g.b.Slice(x, starts, limits, strides))
}

// rms is RMSNorm over the last axis of x [r, d] with weight w [d]:
// w * (x * rsqrt(mean(x^2) + eps)).
func (g fb) rms(x, w backends.Op, eps float64) backends.Op {
	dims := g.shape(x).Dimensions
	r, d := dims[0], dims[1]
	ss := g.m(g.b.ReduceSum(g.m(g.b.Mul(x, x)), 1))
	ms := g.m(g.b.Div(ss, g.constF(float32(d), r)))
	inv := g.m(g.b.Rsqrt(g.m(g.b.Add(ms, g.constF(float32(eps), r)))))
	y := g.m(g.b.Mul(x, g.bcast(inv, []int{0}, r, d)))
	return g.m(g.b.Mul(g.bcast(w, []int{1}, r, d), y))
}

// headRMS is RMSNorm of every head_dim slice of x [rows, heads*hd].
func (g fb) headRMS(x, w backends.Op, heads, hd int, eps float64) backends.Op {
	rows := g.shape(x).Dimensions[0]
	y := g.rms(g.reshape(x, rows*heads, hd), w, eps)
	return g.reshape(y, rows, heads*hd)
}

// rope rotates x [rows, heads*hd] by the positions pos [rows] with the
// resident tables cos, sin [T, hd/2] (HF rotate_half convention).
func (g fb) rope(x, pos, cos, sin backends.Op, heads, hd int) backends.Op {
	rows, h := g.shape(x).Dimensions[0], hd/2
	idx := g.reshape(pos, rows, 1)
	gather := func(t backends.Op) backends.Op {
		c := g.m(g.b.Gather(t, idx, 1, []int{1}, []int{0}, []int{0}, []int{1, h}, false)) // [rows, h]
		return g.bcast(c, []int{0, 2}, rows, heads, h)
	}
	c, s := gather(cos), gather(sin)
	x4 := g.reshape(x, rows, heads, 2, h)
	a := g.reshape(g.slice(x4, 2, 0, 1), rows, heads, h)
	b := g.reshape(g.slice(x4, 2, 1, 2), rows, heads, h)
	oa := g.m(g.b.Sub(g.m(g.b.Mul(a, c)), g.m(g.b.Mul(b, s))))
	ob := g.m(g.b.Add(g.m(g.b.Mul(b, c)), g.m(g.b.Mul(a, s))))
	out := g.m(g.b.Concatenate(2, g.reshape(oa, rows, heads, 1, h), g.reshape(ob, rows, heads, 1, h)))
	return g.reshape(out, rows, heads*hd)
}

// kvAppend writes row r of x [rows, W] at (seq[r], pos[r]) of the cache
// [S, T, W]: a ScatterSum of the rows into zeros, and a ScatterSum of
// ones that marks the written slots, selecting between the two.
// (simplego has no DynamicUpdateSlice.) Two rows aimed at one slot would
// add up; the runtime never does that.
func (g fb) kvAppend(cache, x, seq, pos backends.Op) backends.Op {
	cd := g.shape(cache).Dimensions
	S, T, W := cd[0], cd[1], cd[2]
	rows := g.shape(x).Dimensions[0]
	idx := g.m(g.b.Add(g.m(g.b.Mul(seq, g.constI(int32(T), rows))), pos))
	idx = g.reshape(idx, rows, 1)
	flat := g.reshape(cache, S*T, W)
	upd := g.m(g.b.ScatterSum(g.constF(0, S*T, W), idx, x, 1, []int{1}, []int{0}, []int{0}, false, true))
	hit := g.m(g.b.ScatterSum(g.constF(0, S*T), idx, g.constF(1, rows), 1, nil, []int{0}, []int{0}, false, true))
	cond := g.m(g.b.GreaterThan(hit, g.constF(0, S*T)))
	cond = g.bcast(cond, []int{0}, S*T, W)
	return g.reshape(g.m(g.b.Where(cond, upd, flat)), S, T, W)
}

// attention is causal GQA of q [rows, heads*hd] against the caches
// [S, T, kvh*hd], over cache positions [0, limit): row r sees positions
// 0..pos[r] of sequence seq[r].
func (g fb) attention(q, kc, vc, seq, pos backends.Op, heads, kvh, hd, limit int, scale float64) backends.Op {
	cd := g.shape(kc).Dimensions
	S, T := cd[0], cd[1]
	rows := g.shape(q).Dimensions[0]
	G := heads / kvh
	Tn := min(limit, T)
	if Tn < T {
		kc, vc = g.slice(kc, 1, 0, Tn), g.slice(vc, 1, 0, Tn)
	}
	// valid[r, t] = t <= pos[r]
	valid := g.m(g.b.LessOrEqual(g.m(g.b.Iota(shapes.Make(dtypes.Int32, rows, Tn), 1)), g.bcast(pos, []int{0}, rows, Tn)))
	softmax := func(s backends.Op, dims []int, maskAxes []int) backends.Op {
		s = g.m(g.b.Mul(s, g.constF(float32(scale), dims...)))
		s = g.m(g.b.Where(g.bcast(valid, maskAxes, dims...), s, g.constF(float32(math.Inf(-1)), dims...)))
		last := len(dims) - 1
		mx := g.bcast(g.m(g.b.ReduceMax(s, last)), []int{0, 1, 2}, dims...)
		e := g.m(g.b.Exp(g.m(g.b.Sub(s, mx))))
		sum := g.bcast(g.m(g.b.ReduceSum(e, last)), []int{0, 1, 2}, dims...)
		return g.m(g.b.Div(e, sum))
	}
	if S == 1 {
		// One sequence (every prefill, decode at B = 1): batch over the KV
		// heads, all rows and their group's query heads against one cache.
		k := g.m(g.b.Transpose(g.reshape(kc, Tn, kvh, hd), 1, 0, 2)) // [kvh, Tn, hd]
		v := g.m(g.b.Transpose(g.reshape(vc, Tn, kvh, hd), 1, 0, 2))
		qq := g.m(g.b.Transpose(g.reshape(q, rows, kvh, G, hd), 1, 0, 2, 3)) // [kvh, rows, G, hd]
		qq = g.reshape(qq, kvh, rows*G, hd)
		s := g.m(g.b.DotGeneral(qq, []int{2}, []int{0}, k, []int{2}, []int{0})) // [kvh, rows*G, Tn]
		dims := []int{kvh, rows, G, Tn}
		p := softmax(g.reshape(s, dims...), dims, []int{1, 3})
		o := g.m(g.b.DotGeneral(g.reshape(p, kvh, rows*G, Tn), []int{2}, []int{0}, v, []int{1}, []int{0})) // [kvh, rows*G, hd]
		o = g.m(g.b.Transpose(g.reshape(o, kvh, rows, G, hd), 1, 0, 2, 3))
		return g.reshape(o, rows, heads*hd)
	}
	// Several sequences: gather each row's cache, batch over (row, KV head).
	W := kvh * hd
	idx := g.reshape(seq, rows, 1)
	gather := func(c backends.Op) backends.Op {
		r := g.m(g.b.Gather(c, idx, 1, []int{1, 2}, []int{0}, []int{0}, []int{1, Tn, W}, false)) // [rows, Tn, W]
		return g.m(g.b.Transpose(g.reshape(r, rows, Tn, kvh, hd), 0, 2, 1, 3))                   // [rows, kvh, Tn, hd]
	}
	k, v := gather(kc), gather(vc)
	qq := g.reshape(q, rows, kvh, G, hd)
	s := g.m(g.b.DotGeneral(qq, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1})) // [rows, kvh, G, Tn]
	dims := []int{rows, kvh, G, Tn}
	p := softmax(s, dims, []int{0, 3})
	o := g.m(g.b.DotGeneral(p, []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1})) // [rows, kvh, G, hd]
	return g.reshape(o, rows, heads*hd)
}

func (g fb) linear(x, w backends.Op, bias *backends.Op) backends.Op {
	y := g.m(g.b.DotGeneral(x, []int{1}, nil, w, []int{1}, nil))
	if bias != nil {
		d := g.shape(y).Dimensions
		y = g.m(g.b.Add(y, g.bcast(*bias, []int{1}, d...)))
	}
	return y
}

// linearBlocks is linear with W resident as [blocks, rows/blocks, cols]:
// x is broadcast over the block axis, which is a batch axis of the
// DotGeneral (simplego parallelises over batch), and the product is
// transposed back to [m, rows]; each element is the same dot product.
func (g fb) linearBlocks(x, w backends.Op, rows int, bias *backends.Op) backends.Op {
	xd := g.shape(x).Dimensions
	m, k := xd[0], xd[1]
	blocks := g.shape(w).Dimensions[0]
	xb := g.bcast(x, []int{1, 2}, blocks, m, k)
	p := g.m(g.b.DotGeneral(xb, []int{2}, []int{0}, w, []int{2}, []int{0})) // [blocks, m, rows/blocks]
	y := g.reshape(g.m(g.b.Transpose(p, 1, 0, 2)), m, rows)
	if bias != nil {
		y = g.m(g.b.Add(y, g.bcast(*bias, []int{1}, m, rows)))
	}
	return y
}

func (g fb) silu(x backends.Op) backends.Op { return g.m(g.b.Mul(x, g.m(g.b.Logistic(x)))) }

// Compile lowers g, with its symbolic dims bound, to one executable. It
// refuses protected graphs and any op it has no lowering for, by name.
func (f *Forward) Compile(g *ir.Graph, bind map[string]int) (*ForwardProgram, error) {
	for _, n := range g.Nodes {
		switch {
		case forwardDeclined[n.Op] != "":
			return nil, fmt.Errorf("gomlx forward: compile %s: %v = %s: %s", g.Name, n.ID, n.Op, forwardDeclined[n.Op])
		case forwardLowerings[n.Op] == nil:
			return nil, fmt.Errorf("gomlx forward: compile %s: %v = %s: op not supported", g.Name, n.ID, n.Op)
		case n.Type.DType.IsQuantized():
			return nil, fmt.Errorf("gomlx forward: compile %s: %v = %s: quantized values (%v) are not supported", g.Name, n.ID, n.Op, n.Type)
		}
		if q, _ := n.Attrs.Str("quant"); q != "" {
			return nil, fmt.Errorf("gomlx forward: compile %s: %v = %s: quantized crossings (%s) are not supported", g.Name, n.ID, n.Op, q)
		}
	}
	for _, param := range g.Params {
		if v, ok := bind[param]; !ok || v <= 0 {
			return nil, fmt.Errorf("gomlx forward: compile %s: dim %s must be bound to a positive size", g.Name, param)
		}
	}
	p := &ForwardProgram{f: f, g: g, bind: bind, named: map[string]int{},
		f32Name: map[string]*hostF32{}, i32Name: map[string]*hostI32{}, outName: map[string][]float32{}}
	var exe backends.Executable
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				if bp, ok := r.(buildPanic); ok {
					err = bp.err
					return
				}
				err = fmt.Errorf("gomlx panicked: %v", r)
			}
		}()
		exe, err = p.build()
		return err
	}()
	if err != nil {
		return nil, fmt.Errorf("gomlx forward: compile %s: %w", g.Name, err)
	}
	p.exe = exe
	return p, nil
}

func dimsOf(t ir.Type, bind map[string]int) ([]int, error) {
	dims := make([]int, len(t.Shape))
	for i, d := range t.Shape {
		v, err := d.Bind(bind)
		if err != nil {
			return nil, err
		}
		dims[i] = v
	}
	return dims, nil
}

// graphBuild is one graph being lowered to a gomlx builder: what every
// entry of forwardLowerings reads and writes.
type graphBuild struct {
	p       *ForwardProgram
	b       fb
	vals    []backends.Op
	pairs   map[ir.ValueID][2]backends.Op // add_rms_norm's and norm_rope_append_kv's results, read by take
	dims    [][]int
	wdefs   map[ir.ValueID]wdef
	inputOp map[string]backends.Op
	// Resident buffers become parameters as they are met, after the
	// per-run inputs (parameter order is creation order).
	nparam   int
	resOps   []resParam
	resByKey map[string]backends.Op
}

// wdef is a weight (or stacked weights) not yet made a parameter: its
// resident key and how to make its data.
type wdef struct {
	key  string
	dims []int
	mk   func() ([]float32, []int, error)
}

type resParam struct {
	op  backends.Op
	buf backends.Buffer
}

// lowerFunc lowers one node to its graph op (nil for a node that only
// records state, such as a weight made a parameter at its first use).
type lowerFunc func(gb *graphBuild, n *ir.Node) (backends.Op, error)

// forwardLowerings is this backend's op table for whole-forward programs:
// each op it lowers to graph nodes, and how.
var forwardLowerings = map[string]lowerFunc{
	ir.OpInput:            lowerInput,
	ir.OpWeight:           lowerWeight,
	ir.OpConcatWeights:    lowerConcatWeights,
	ir.OpEmbed:            lowerEmbed,
	ir.OpRMSNorm:          lowerRMSNorm,
	ir.OpAddRMSNorm:       lowerAddRMSNorm,
	ir.OpTake:             lowerTake,
	ir.OpMatMul:           lowerMatMul,
	ir.OpLMHead:           lowerMatMul,
	ir.OpBiasAdd:          lowerBiasAdd,
	ir.OpQKNorm:           lowerQKNorm,
	ir.OpRope:             lowerRope,
	ir.OpNormRope:         lowerRope,
	ir.OpNormRopeAppend:   lowerNormRopeAppend,
	ir.OpNormRopeAppendKV: lowerNormRopeAppendKV,
	ir.OpKVAppend:         lowerKVAppend,
	ir.OpAttention:        lowerAttention,
	ir.OpSiLU:             lowerSiLU,
	ir.OpMul:              lowerMul,
	ir.OpAdd:              lowerAdd,
	ir.OpSwiGLU:           lowerSwiGLU,
	ir.OpSliceCols:        lowerSliceCols,
	ir.OpLastRow:          lowerLastRow,
	// Mask none: a crossing is the identity. The whole forward runs in
	// one engine, so there is no device result for a probe to check: it
	// passes its value through.
	ir.OpToDevice: lowerIdentity,
	ir.OpToTEE:    lowerIdentity,
	ir.OpProbe:    lowerIdentity,
}

func (gb *graphBuild) param(sh shapes.Shape) backends.Op {
	gb.nparam++
	return gb.b.m(gb.b.b.Parameter(fmt.Sprintf("p%d", gb.nparam-1), sh, nil))
}

// resident returns the parameter of the resident buffer key, uploading
// mk()'s data once per Forward and adding the parameter once per graph.
func (gb *graphBuild) resident(key string, mk func() ([]float32, []int, error)) (backends.Op, error) {
	if op, ok := gb.resByKey[key]; ok {
		return op, nil
	}
	r, err := gb.p.f.residentBuf(key, mk)
	if err != nil {
		return nil, err
	}
	op := gb.param(r.shape)
	gb.resByKey[key] = op
	gb.resOps = append(gb.resOps, resParam{op, r.buf})
	return op, nil
}

// weightOp makes weight id a parameter: in its own layout, or (a
// matmul's on simplego) cut into row blocks.
func (gb *graphBuild) weightOp(id ir.ValueID, blocks int) backends.Op {
	d := gb.wdefs[id]
	key, mk := d.key, d.mk
	if blocks > 1 {
		key = fmt.Sprintf("%s#blocks=%d", d.key, blocks)
		mk = func() ([]float32, []int, error) {
			data, dims, err := d.mk()
			return data, []int{blocks, dims[0] / blocks, dims[1]}, err
		}
	}
	op, err := gb.resident(key, mk)
	if err != nil {
		panic(buildPanic{fmt.Errorf("%v: %w", id, err)})
	}
	return op
}

// v is operand i of n; a weight becomes a parameter at its first use.
func (gb *graphBuild) v(n *ir.Node, i int) backends.Op {
	id := n.Inputs[i]
	if gb.vals[id] == nil {
		if _, ok := gb.wdefs[id]; ok {
			gb.vals[id] = gb.weightOp(id, 1)
		}
	}
	return gb.vals[id]
}

func attrInt(n *ir.Node, name string) int { x, _ := n.Attrs.Int(name); return int(x) }

func attrEps(n *ir.Node) float64 { eps, _ := n.Attrs.Float("eps"); return eps }

// ropeTables returns the resident cos and sin tables [T, hd/2].
func (gb *graphBuild) ropeTables(hd int, theta float64) (cos, sin backends.Op, err error) {
	T := max(gb.p.maxT, 1)
	key := fmt.Sprintf("rope:%d:%g:%d", hd, theta, T)
	var c, s []float32
	mk := func() (err error) {
		if c == nil {
			c, s, err = rope.Tables(hd, theta, T)
		}
		return err
	}
	if cos, err = gb.resident(key+":cos", func() ([]float32, []int, error) { err := mk(); return c, []int{T, hd / 2}, err }); err != nil {
		return nil, nil, err
	}
	sin, err = gb.resident(key+":sin", func() ([]float32, []int, error) { err := mk(); return s, []int{T, hd / 2}, err })
	return cos, sin, err
}

// normRope is the rotation every rope op shares: operand xi rotated by the
// positions of operand posi, each head RMS-normalised first by the weight
// of operand wi when wi >= 0.
func (gb *graphBuild) normRope(n *ir.Node, xi, wi, posi int) (backends.Op, error) {
	theta, _ := n.Attrs.Float("theta")
	heads, hd := attrInt(n, "heads"), attrInt(n, "head_dim")
	cos, sin, err := gb.ropeTables(hd, theta)
	if err != nil {
		return nil, err
	}
	x := gb.v(n, xi)
	if wi >= 0 {
		x = gb.b.headRMS(x, gb.v(n, wi), heads, hd, attrEps(n))
	}
	return gb.b.rope(x, gb.v(n, posi), cos, sin, heads, hd), nil
}

func lowerInput(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	name, _ := n.Attrs.Str("name")
	return gb.inputOp[name], nil
}

// weightKey is the resident key of the named weights held as dt: a bf16
// copy is another buffer than the f32 one.
func weightKey(dt ir.DType, names ...string) string {
	key := "w:" + strings.Join(names, "|")
	if dt == ir.BF16 {
		key = "w:bf16:" + strings.Join(names, "|")
	}
	return key
}

// planValues returns data as a weight of dtype dt holds it: a bf16 weight
// rounded to bf16 (to nearest even, as the cpu backend rounds it) and
// widened back exactly, so the graph multiplies the values the plan
// names whatever the checkpoint's dtype; an f32 weight unchanged.
func planValues(dt ir.DType, data []float32) []float32 {
	if dt != ir.BF16 {
		return data
	}
	out := make([]float32, len(data))
	for i, v := range data {
		out[i] = safetensors.BF16ToF32(safetensors.F32ToBF16(v))
	}
	return out
}

func lowerWeight(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	name, _ := n.Attrs.Str("name")
	want, f, dt := gb.dims[n.ID], gb.p.f, n.Type.DType
	gb.wdefs[n.ID] = wdef{weightKey(dt, name), want, func() ([]float32, []int, error) {
		data, shape, err := f.weights.Get(name)
		if err != nil {
			return nil, nil, err
		}
		if !slices.Equal(shape, want) {
			return nil, nil, fmt.Errorf("weight %q has shape %v, graph wants %v", name, shape, want)
		}
		return planValues(dt, data), shape, nil
	}}
	return nil, nil
}

func lowerConcatWeights(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	var names []string
	for _, x := range n.Inputs {
		wn := gb.p.g.Node(x)
		name, _ := wn.Attrs.Str("name")
		if wn.Op != ir.OpWeight {
			return nil, fmt.Errorf("operand %v is a %s, not a weight", x, wn.Op)
		}
		names = append(names, name)
	}
	want, f, dt := gb.dims[n.ID], gb.p.f, n.Type.DType
	gb.wdefs[n.ID] = wdef{weightKey(dt, names...), want, func() ([]float32, []int, error) {
		var data []float32
		for _, name := range names {
			part, _, err := f.weights.Get(name)
			if err != nil {
				return nil, nil, err
			}
			data = append(data, part...)
		}
		return planValues(dt, data), want, nil
	}}
	return nil, nil
}

func lowerEmbed(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	in, p, b := n.Inputs, gb.p, gb.b
	d := gb.dims[n.ID][1]
	rows := gb.dims[n.ID][0]
	p.vocab = gb.dims[in[1]][0]
	if src := p.g.Node(in[0]); src.Op == ir.OpInput {
		p.tokIn, _ = src.Attrs.Str("name")
	}
	return b.m(b.b.Gather(gb.v(n, 1), b.reshape(gb.v(n, 0), rows, 1), 1, []int{1}, []int{0}, []int{0}, []int{1, d}, false)), nil
}

func lowerRMSNorm(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	return gb.b.rms(gb.v(n, 0), gb.v(n, 1), attrEps(n)), nil
}

func lowerAddRMSNorm(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	b := gb.b
	sum := b.m(b.b.Add(gb.v(n, 0), gb.v(n, 1)))
	gb.pairs[n.ID] = [2]backends.Op{sum, b.rms(sum, gb.v(n, 2), attrEps(n))}
	r, d := gb.dims[n.ID][1], gb.dims[n.ID][2]
	return b.m(b.b.Concatenate(0, b.reshape(gb.pairs[n.ID][0], 1, r, d), b.reshape(gb.pairs[n.ID][1], 1, r, d))), nil
}

func lowerTake(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	idx := attrInt(n, "index")
	if pr, ok := gb.pairs[n.Inputs[0]]; ok && idx < 2 {
		return pr[idx], nil
	}
	return gb.b.reshape(gb.b.slice(gb.v(n, 0), 0, idx, idx+1), gb.dims[n.ID]...), nil
}

func lowerMatMul(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	in := n.Inputs
	var bias *backends.Op
	if len(in) == 3 {
		bo := gb.v(n, 2)
		bias = &bo
	}
	if _, ok := gb.wdefs[in[1]]; ok && gb.p.f.split {
		rows := gb.dims[in[1]][0]
		if blocks := splitFor(rows); blocks > 1 {
			return gb.b.linearBlocks(gb.v(n, 0), gb.weightOp(in[1], blocks), rows, bias), nil
		}
	}
	return gb.b.linear(gb.v(n, 0), gb.v(n, 1), bias), nil
}

func lowerBiasAdd(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	b := gb.b
	return b.m(b.b.Add(gb.v(n, 0), b.bcast(gb.v(n, 1), []int{1}, gb.dims[n.ID]...))), nil
}

func lowerQKNorm(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	return gb.b.headRMS(gb.v(n, 0), gb.v(n, 1), attrInt(n, "heads"), attrInt(n, "head_dim"), attrEps(n)), nil
}

// lowerRope: rope (x, pos) and norm_rope (x, w, pos).
func lowerRope(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	if n.Op == ir.OpNormRope {
		return gb.normRope(n, 0, 1, 2)
	}
	return gb.normRope(n, 0, -1, 1)
}

// lowerNormRopeAppend: cache, k, w, seq, pos.
func lowerNormRopeAppend(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	k, err := gb.normRope(n, 1, 2, 4)
	if err != nil {
		return nil, err
	}
	return gb.b.kvAppend(gb.v(n, 0), k, gb.v(n, 3), gb.v(n, 4)), nil
}

// lowerNormRopeAppendKV: kc, vc, k, v, w, seq, pos. Only its takes are
// read; the pair itself is never materialised (that would copy both
// caches).
func lowerNormRopeAppendKV(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	k, err := gb.normRope(n, 2, 4, 6)
	if err != nil {
		return nil, err
	}
	b := gb.b
	gb.pairs[n.ID] = [2]backends.Op{b.kvAppend(gb.v(n, 0), k, gb.v(n, 5), gb.v(n, 6)), b.kvAppend(gb.v(n, 1), gb.v(n, 3), gb.v(n, 5), gb.v(n, 6))}
	return gb.pairs[n.ID][0], nil
}

func lowerKVAppend(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	return gb.b.kvAppend(gb.v(n, 0), gb.v(n, 1), gb.v(n, 2), gb.v(n, 3)), nil
}

func lowerAttention(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	scale, _ := n.Attrs.Float("scale")
	return gb.b.attention(gb.v(n, 0), gb.v(n, 1), gb.v(n, 2), gb.v(n, 3), gb.v(n, 4),
		attrInt(n, "heads"), attrInt(n, "kv_heads"), attrInt(n, "head_dim"), gb.p.limit, scale), nil
}

func lowerSiLU(gb *graphBuild, n *ir.Node) (backends.Op, error) { return gb.b.silu(gb.v(n, 0)), nil }

func lowerMul(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	return gb.b.m(gb.b.b.Mul(gb.v(n, 0), gb.v(n, 1))), nil
}

func lowerAdd(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	return gb.b.m(gb.b.b.Add(gb.v(n, 0), gb.v(n, 1))), nil
}

// lowerSwiGLU: silu(gate) * up, from two operands or one [gate | up].
func lowerSwiGLU(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	b := gb.b
	if len(n.Inputs) == 2 {
		return b.m(b.b.Mul(b.silu(gb.v(n, 0)), gb.v(n, 1))), nil
	}
	c := gb.dims[n.ID][1]
	x := gb.v(n, 0)
	return b.m(b.b.Mul(b.silu(b.slice(x, 1, 0, c)), b.slice(x, 1, c, 2*c))), nil
}

func lowerSliceCols(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	start, width := attrInt(n, "start"), attrInt(n, "width")
	return gb.b.slice(gb.v(n, 0), 1, start, start+width), nil
}

func lowerLastRow(gb *graphBuild, n *ir.Node) (backends.Op, error) {
	r := gb.dims[n.Inputs[0]][0]
	return gb.b.slice(gb.v(n, 0), 0, r-1, r), nil
}

func lowerIdentity(gb *graphBuild, n *ir.Node) (backends.Op, error) { return gb.v(n, 0), nil }

// build lowers every node through forwardLowerings; it panics
// (buildPanic) on builder errors.
func (p *ForwardProgram) build() (backends.Executable, error) {
	g, bind, f := p.g, p.bind, p.f
	gb := &graphBuild{p: p, b: fb{f.be.Builder("gelo_forward_" + g.Name)}, vals: make([]backends.Op, len(g.Nodes)),
		pairs: map[ir.ValueID][2]backends.Op{}, dims: make([][]int, len(g.Nodes)), wdefs: map[ir.ValueID]wdef{},
		inputOp: map[string]backends.Op{}, resByKey: map[string]backends.Op{}}
	for i, n := range g.Nodes {
		d, err := dimsOf(n.Type, bind)
		if err != nil {
			return nil, fmt.Errorf("%v = %s: %w", n.ID, n.Op, err)
		}
		gb.dims[i] = d
		if ir.WritesCache(n.Op) && p.maxT == 0 { // a cache [S, T, kv] or a pair of them
			p.maxT, p.nseq = d[len(d)-2], d[len(d)-3]
		}
	}
	if p.maxT == 0 {
		p.maxT = bind["T"]
	}
	p.limit = p.maxT
	if l, ok := bind["L"]; ok && l > 0 && l < p.maxT {
		p.limit = l
	}
	if err := gb.inputs(); err != nil {
		return nil, err
	}
	for _, n := range g.Nodes {
		lower := forwardLowerings[n.Op]
		if lower == nil {
			return nil, fmt.Errorf("%v = %s: op not supported", n.ID, n.Op)
		}
		out, err := lower(gb, n)
		if err != nil {
			return nil, fmt.Errorf("%v = %s: %w", n.ID, n.Op, err)
		}
		gb.vals[n.ID] = out
	}
	return gb.compile()
}

// inputs makes the graph's inputs its first parameters, in node order:
// i32 inputs, then f32 caches.
func (gb *graphBuild) inputs() error {
	p := gb.p
	for _, n := range p.g.Nodes {
		if n.Op != ir.OpInput {
			continue
		}
		name, _ := n.Attrs.Str("name")
		d := gb.dims[n.ID]
		size := 1
		for _, v := range d {
			size *= v
		}
		p.named[name] = size
		switch n.Type.DType {
		case ir.I32:
			h := &hostI32{name: name, data: make([]int32, size), shape: shapes.Make(dtypes.Int32, d...)}
			p.i32In = append(p.i32In, *h)
		case ir.F32:
			p.f32In = append(p.f32In, hostF32{name: name, shape: shapes.Make(dtypes.Float32, d...)})
		default:
			return fmt.Errorf("%v = input %q: dtype %v not supported", n.ID, name, n.Type.DType)
		}
	}
	for i := range p.i32In {
		h := &p.i32In[i]
		gb.inputOp[h.name] = gb.param(h.shape)
		p.i32Name[h.name] = h
	}
	for i := range p.f32In {
		h := &p.f32In[i]
		gb.inputOp[h.name] = gb.param(h.shape)
		p.f32Name[h.name] = h
	}
	return nil
}

// compile collects the graph's outputs and compiles it.
func (gb *graphBuild) compile() (backends.Executable, error) {
	p, g, vals, dims := gb.p, gb.p.g, gb.vals, gb.dims
	// Outputs: an output named like an f32 input (k.L, v.L) updates that
	// input's bound storage; the others (logits) land in program slices.
	var outs []backends.Op
	for _, o := range g.Outputs {
		outs = append(outs, vals[o.Value])
		h := hostOut{name: o.Name}
		if c, ok := p.f32Name[o.Name]; ok {
			h.cache = c
		} else {
			size := 1
			for _, d := range dims[o.Value] {
				size *= d
			}
			h.data = make([]float32, size)
			p.outName[o.Name] = h.data
			if _, dup := p.named[o.Name]; !dup {
				p.named[o.Name] = size
			}
		}
		p.outs = append(p.outs, h)
	}
	for _, r := range gb.resOps {
		p.res = append(p.res, r.buf)
	}
	exe, err := gb.b.b.Compile(outs, nil)
	if err != nil {
		return nil, err
	}
	return exe, nil
}

// Float32 returns a named f32 output (logits) or a bound f32 input.
func (p *ForwardProgram) Float32(name string) ([]float32, error) {
	if d, ok := p.outName[name]; ok {
		return d, nil
	}
	if h, ok := p.f32Name[name]; ok {
		if h.data == nil {
			return nil, fmt.Errorf("graph %s: input %q is not bound", p.g.Name, name)
		}
		return h.data, nil
	}
	return nil, fmt.Errorf("graph %s has no f32 input or output %q", p.g.Name, name)
}

// Int32 returns a named i32 input buffer, filled by the caller before Run.
func (p *ForwardProgram) Int32(name string) ([]int32, error) {
	if h, ok := p.i32Name[name]; ok {
		return h.data, nil
	}
	return nil, fmt.Errorf("graph %s has no i32 input %q", p.g.Name, name)
}

// Elems is the element count of a named input or output.
func (p *ForwardProgram) Elems(name string) (int, error) {
	if n, ok := p.named[name]; ok {
		return n, nil
	}
	return 0, fmt.Errorf("graph %s has no input or output %q", p.g.Name, name)
}

// BindFloat32 makes a named f32 input (a KV cache) use caller storage;
// Run reads it and writes the updated cache back into it.
func (p *ForwardProgram) BindFloat32(name string, buf []float32) error {
	h, ok := p.f32Name[name]
	if !ok {
		return fmt.Errorf("graph %s has no f32 input %q", p.g.Name, name)
	}
	if len(buf) != h.shape.Size() {
		return fmt.Errorf("graph %s: input %q holds %d values, got a buffer of %d", p.g.Name, name, h.shape.Size(), len(buf))
	}
	h.data = buf
	return nil
}

// check validates the index inputs the engine would otherwise clamp.
func (p *ForwardProgram) check() error {
	for _, h := range p.f32In {
		if h.data == nil {
			return fmt.Errorf("input %q is not bound", h.name)
		}
	}
	if h, ok := p.i32Name[models.InputPos]; ok {
		for i, q := range h.data {
			if q < 0 || int(q) >= p.limit {
				return fmt.Errorf("position %d of row %d is outside [0, %d) (cache %d, kv bucket %d)", q, i, p.limit, p.maxT, p.limit)
			}
		}
	}
	if h, ok := p.i32Name[models.InputSeq]; ok && p.nseq > 0 {
		for i, s := range h.data {
			if s < 0 || int(s) >= p.nseq {
				return fmt.Errorf("sequence %d of row %d is outside [0, %d)", s, i, p.nseq)
			}
		}
	}
	if h, ok := p.i32Name[p.tokIn]; ok && p.vocab > 0 {
		for i, t := range h.data {
			if t < 0 || int(t) >= p.vocab {
				return fmt.Errorf("token id %d at index %d is outside [0, %d)", t, i, p.vocab)
			}
		}
	}
	return nil
}

// Run uploads the index inputs and the bound caches, runs the graph once,
// and copies the logits and the updated caches back.
func (p *ForwardProgram) Run() error {
	if err := p.check(); err != nil {
		return fmt.Errorf("gomlx forward: run %s: %w", p.g.Name, err)
	}
	be := p.f.be
	err := guard("run", func() error {
		inputs := make([]backends.Buffer, 0, len(p.i32In)+len(p.f32In)+len(p.res))
		donate := make([]bool, 0, cap(inputs))
		free := func() {
			for i, buf := range inputs {
				if donate[i] {
					_ = be.BufferFinalize(buf)
				}
			}
		}
		for _, h := range p.i32In {
			buf, err := be.BufferFromFlatData(0, h.data, h.shape)
			if err != nil {
				free()
				return err
			}
			inputs, donate = append(inputs, buf), append(donate, true)
		}
		for _, h := range p.f32In {
			buf, err := be.BufferFromFlatData(0, h.data, h.shape)
			if err != nil {
				free()
				return err
			}
			inputs, donate = append(inputs, buf), append(donate, true)
		}
		for _, buf := range p.res {
			inputs, donate = append(inputs, buf), append(donate, false)
		}
		outs, err := p.exe.Execute(inputs, donate, 0)
		if err != nil {
			// Donated buffers are the engine's once passed; on failure
			// nothing more can be said about them.
			return err
		}
		defer func() {
			for _, o := range outs {
				_ = be.BufferFinalize(o)
			}
		}()
		if len(outs) != len(p.outs) {
			return fmt.Errorf("executable returned %d outputs, want %d", len(outs), len(p.outs))
		}
		for i, h := range p.outs {
			dst := h.data
			if h.cache != nil {
				dst = h.cache.data
			}
			if err := be.BufferToFlatData(outs[i], dst); err != nil {
				return fmt.Errorf("output %q: %w", h.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("gomlx forward: run %s: %w", p.g.Name, err)
	}
	return nil
}
