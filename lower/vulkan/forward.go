//go:build cgo

package vulkan

// Forward runs a whole unprotected (mask none) forward pass on the Vulkan
// device: the plain accelerator baseline. Every op of a step is a shader
// (shaders/fwd_*.comp, the matmuls on the crossing shaders), the whole
// step one command buffer recorded at its program's first Run and
// replayed by every later one: the step's token ids, positions and
// sequence slots live in a small host-visible buffer the shaders read,
// shapes and offsets in push constants, so nothing per step is recorded.
// Only the logits come back to the host.
//
// The embedding gather is a shader over the resident table. Prefill is
// one multi-row program per prompt length (the runtime compiles one per
// length): every op takes all n rows. Weights are resident once per
// Forward in the plan's format (f32, bf16, q8_0 or q4_0; a quantizing
// crossing is a shader making the q8_0 activation rows) and shared by its
// programs; so are the KV caches: BindFloat32 maps the caller's storage to
// a device buffer (one per storage, shared by the session's prefill and
// decode programs) and the step updates it in place on the device. The
// host storage is not kept in step: SyncCaches copies the device caches
// back into it when a caller wants to read them.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"gelo/device/wire"
	"gelo/ir"
	"gelo/models"
	"gelo/models/rope"
	"gelo/models/safetensors"
)

// forward op shaders, as named in shaders/gen.sh.
const (
	fwdEmbed = iota
	fwdRMSNorm
	fwdRope
	fwdAttention
	fwdEW
	fwdQuant
	numFwd
)

var fwdNames = [numFwd]string{"embed", "rmsnorm", "rope", "attention", "ew", "quant"}

const (
	fwdBindings = 6  // shaders/fwd.glsl: idx + five operands
	fwdPush     = 32 // words of push constants
	maxAttnT    = 4096
	poolSets    = 256 // descriptor sets a pool holds (one a dispatch)
	maxHeadDim  = 512
)

// elementwise op codes of fwd_ew.comp.
const (
	ewAdd = iota
	ewMul
	ewSiLU
	ewSwiGLU1
	ewSwiGLU2
	ewCopy
	ewBias
)

// Forward compiles whole unprotected graphs for one Vulkan device over
// one set of weights it keeps resident. It is safe for concurrent use; a
// program it returns is not.
type Forward struct {
	d       *Device // matmul pipelines and resident matmul weights
	weights *models.Weights
	fdsl    setLayout
	fpl     pipeLayout
	fpipes  [numFwd]pipeline
	dummy   *buffer

	mu     sync.Mutex
	small  map[string]*buffer // norm weights, rope tables
	caches []*devCache
	gen    int // bumped when a cache buffer is replaced
	stats  ForwardStats
	progs  map[*ForwardProgram]bool
}

// devCache is the device copy of one caller cache storage.
type devCache struct {
	host []float32
	buf  *buffer
}

// NewForward opens a Vulkan device for whole-forward programs over w.
func NewForward(opt Options, w *models.Weights) (*Forward, error) {
	if w == nil {
		return nil, errors.New("vulkan forward: nil weights")
	}
	if opt.IOBytes <= 0 {
		opt.IOBytes = 4 << 20 // the Device's crossing buffers go unused here
	}
	d, err := New(opt)
	if err != nil {
		return nil, err
	}
	f := &Forward{d: d, weights: w, small: map[string]*buffer{}, progs: map[*ForwardProgram]bool{}}
	if err := f.init(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (f *Forward) init() error {
	c := f.d.c
	if c.info.MaxPushBytes < 4*fwdPush {
		return fmt.Errorf("vulkan forward: %s allows %d push-constant bytes, need %d", c.info.Name, c.info.MaxPushBytes, 4*fwdPush)
	}
	var err error
	if f.fdsl, f.fpl, err = c.layout(fwdBindings, 4*fwdPush); err != nil {
		return err
	}
	for i, name := range fwdNames {
		spv, err := shaders.ReadFile("shaders/fwd_" + name + ".spv")
		if err != nil {
			return fmt.Errorf("vulkan forward: shader fwd_%s: %w", name, err)
		}
		if f.fpipes[i], err = c.pipeline(f.fpl, spv); err != nil {
			return fmt.Errorf("fwd_%s: %w", name, err)
		}
	}
	f.dummy, err = c.newBuffer(16, memDevice)
	return err
}

// Name identifies the engine: "vulkan-forward:<device>".
func (f *Forward) Name() string { return "vulkan-forward:" + f.d.c.info.Name }

// Info describes the device.
func (f *Forward) Info() Info { return f.d.Info() }

// Stats returns the counters so far.
func (f *Forward) Stats() ForwardStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// ValidationErrors is the device's (Device.ValidationErrors).
func (f *Forward) ValidationErrors() (int, string) { return f.d.ValidationErrors() }

// Close frees every program, resident buffer and the device. Programs
// compiled by f must not be run afterwards. Close is idempotent.
func (f *Forward) Close() {
	f.mu.Lock()
	if f.d == nil || f.d.closed {
		f.mu.Unlock()
		return
	}
	c := f.d.c
	for p := range f.progs {
		p.free()
		c.freeBuffer(p.idx)
	}
	f.progs = nil
	for _, b := range f.small {
		c.freeBuffer(b)
	}
	for _, dc := range f.caches {
		c.freeBuffer(dc.buf)
	}
	f.small, f.caches = nil, nil
	c.freeBuffer(f.dummy)
	for _, p := range f.fpipes {
		c.destroyPipeline(p)
	}
	c.destroyLayout(f.fdsl, f.fpl)
	f.mu.Unlock()
	f.d.Close()
}

// SyncCaches copies every device cache back into the caller storage it
// mirrors (the step updates only the device copy).
func (f *Forward) SyncCaches() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, dc := range f.caches {
		if err := f.readBack(dc.buf, dc.host); err != nil {
			return fmt.Errorf("vulkan forward: sync caches: %w", err)
		}
	}
	return nil
}

// readBack copies len(dst) floats from the start of b into dst, through
// a staging buffer when b is not mapped.
func (f *Forward) readBack(b *buffer, dst []float32) error {
	if len(dst) == 0 {
		return nil
	}
	db := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst))
	if m := b.mapped(); m != nil {
		copy(db, m)
		return nil
	}
	c := f.d.c
	st, err := c.newBuffer(int64(len(db)), memHost)
	if err != nil {
		return err
	}
	defer c.freeBuffer(st)
	if err := c.copyNow(b, 0, st, 0, int64(len(db))); err != nil {
		return err
	}
	copy(db, st.mapped())
	return nil
}

// cacheFor returns the device buffer holding host and host's element
// offset in it: an existing one that contains it, or a new one (taking
// over, with their device contents, the smaller ones it contains). A new
// one spans host's capacity: a batch binds sequence slots as slices of one
// storage, so the first slot's binding already covers the later ones.
func (f *Forward) cacheFor(host []float32) (*buffer, int, error) {
	host = host[:cap(host)]
	p := uintptr(unsafe.Pointer(&host[0]))
	end := p + 4*uintptr(len(host))
	var inside []*devCache
	for _, dc := range f.caches {
		b := uintptr(unsafe.Pointer(&dc.host[0]))
		e := b + 4*uintptr(len(dc.host))
		switch {
		case b <= p && end <= e:
			return dc.buf, int((p - b) / 4), nil
		case p <= b && e <= end:
			inside = append(inside, dc)
		case p < e && b < end:
			return nil, 0, fmt.Errorf("vulkan forward: a cache storage partly overlaps another one")
		}
	}
	c := f.d.c
	buf, err := c.newBuffer(4*int64(len(host)), memDevice)
	if err != nil {
		return nil, 0, err
	}
	if err := c.upload(buf, 0, unsafe.Slice((*byte)(unsafe.Pointer(&host[0])), 4*len(host))); err != nil {
		c.freeBuffer(buf)
		return nil, 0, err
	}
	for _, dc := range inside {
		off := int64(uintptr(unsafe.Pointer(&dc.host[0])) - p)
		if err := c.copyNow(dc.buf, 0, buf, off, 4*int64(len(dc.host))); err != nil {
			c.freeBuffer(buf)
			return nil, 0, err
		}
	}
	if len(inside) > 0 {
		f.gen++
		f.caches = slices.DeleteFunc(f.caches, func(dc *devCache) bool {
			if slices.Contains(inside, dc) {
				c.freeBuffer(dc.buf)
				return true
			}
			return false
		})
	}
	f.caches = append(f.caches, &devCache{host: host, buf: buf})
	return buf, 0, nil
}

// smallBuf returns the resident f32 buffer for key, uploading mk()'s data
// once.
func (f *Forward) smallBuf(key string, mk func() ([]float32, error)) (*buffer, error) {
	if b, ok := f.small[key]; ok {
		return b, nil
	}
	data, err := mk()
	if err != nil {
		return nil, err
	}
	c := f.d.c
	b, err := c.newBuffer(4*int64(len(data)), memDevice)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		if err := c.upload(b, 0, unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), 4*len(data))); err != nil {
			c.freeBuffer(b)
			return nil, err
		}
	}
	f.small[key] = b
	return b, nil
}

// matWeight returns the resident matmul weight of a weight or
// concat_weights node, uploading it once in the node's dtype.
func (f *Forward) matWeight(g *ir.Graph, n *ir.Node, rows, cols int) (*weight, error) {
	names, err := weightNames(g, n)
	if err != nil {
		return nil, err
	}
	format := fmtF32
	switch n.Type.DType {
	case ir.F32:
	case ir.BF16:
		format = fmtBF16
	case ir.Q8_0:
		format = fmtQ8
	case ir.Q4_0:
		format = fmtQ4
	default:
		return nil, fmt.Errorf("weight dtype %v is not wired into the whole-forward engine (f32, bf16, q8_0 and q4_0 are)", n.Type.DType)
	}
	key := formatNames[format] + ":" + strings.Join(names, "|")
	d := f.d
	d.mu.Lock()
	w := d.weights[key]
	d.mu.Unlock()
	if w != nil {
		return w, nil
	}
	var data []float32
	for _, name := range names {
		part, _, err := f.weights.Get(name)
		if err != nil {
			return nil, err
		}
		data = append(data, part...)
	}
	if len(data) != rows*cols {
		return nil, fmt.Errorf("weights %v hold %d values, graph wants [%d, %d]", names, len(data), rows, cols)
	}
	switch format {
	case fmtF32:
		err = d.Upload(key, data, rows, cols)
	case fmtQ8, fmtQ4:
		wf := wire.Q8_0
		if format == fmtQ4 {
			wf = wire.Q4_0
		}
		var qm *wire.Matrix
		if qm, err = wire.Quantize(wf, data, rows, cols); err == nil {
			err = d.UploadQ(key, qm)
		}
	default:
		h := make([]uint16, len(data))
		for i, v := range data {
			h[i] = safetensors.F32ToBF16(v)
		}
		err = d.UploadBF16(key, h, rows, cols)
	}
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.weights[key], nil
}

func weightNames(g *ir.Graph, n *ir.Node) ([]string, error) {
	switch n.Op {
	case ir.OpWeight:
		name, _ := n.Attrs.Str("name")
		return []string{name}, nil
	case ir.OpConcatWeights:
		var names []string
		for _, in := range n.Inputs {
			wn := g.Node(in)
			if wn == nil || wn.Op != ir.OpWeight {
				return nil, fmt.Errorf("concat_weights operand %v is not a weight", in)
			}
			name, _ := wn.Attrs.Str("name")
			names = append(names, name)
		}
		return names, nil
	}
	return nil, fmt.Errorf("operand is a %s, not a weight", n.Op)
}

// forwardOps are the ops whole-forward lowering takes; the protection
// ops are refused (this is the mask-none baseline).
var forwardOps = map[string]bool{
	ir.OpInput: true, ir.OpWeight: true, ir.OpConcatWeights: true, ir.OpEmbed: true, ir.OpRMSNorm: true,
	ir.OpAddRMSNorm: true, ir.OpTake: true, ir.OpMatMul: true, ir.OpLMHead: true, ir.OpQKNorm: true,
	ir.OpRope: true, ir.OpNormRope: true, ir.OpNormRopeAppend: true, ir.OpNormRopeAppendKV: true,
	ir.OpKVAppend: true, ir.OpAttention: true, ir.OpSiLU: true, ir.OpMul: true, ir.OpAdd: true,
	ir.OpSwiGLU: true, ir.OpSliceCols: true, ir.OpLastRow: true, ir.OpToDevice: true, ir.OpToTEE: true,
	ir.OpBiasAdd: true, ir.OpProbe: true,
}

var protectionOps = map[string]bool{
	ir.OpMask: true, ir.OpUnmask: true, ir.OpShieldStack: true, ir.OpShieldStrip: true,
	ir.OpMeanRows: true, ir.OpSubRow: true, ir.OpAddRow: true,
}

// ForwardProgram is one graph compiled for fixed bindings; it implements
// runtime.Executable. Its step is recorded at the first Run (once the
// caches are bound) and replayed by every later one.
type ForwardProgram struct {
	f    *Forward
	g    *ir.Graph
	bind map[string]int
	dims [][]int

	i32     map[string][]int32 // index inputs, filled by the caller
	i32Off  map[string]int     // their offsets in idx
	idx     *buffer            // host-visible: the step's index inputs
	caches  map[string][]float32
	cacheIn map[string]ir.ValueID
	cacheAt map[string]int // where in idx each cache's element offset lies
	offs    map[string]int // the current offsets
	zeroAt  int            // an idx slot that holds 0
	rebound bool           // a cache was bound since the last Run
	named   map[string]int
	logits  []float32
	outName string

	maxT, nseq, limit, vocab int
	tokIn                    string

	// The recording and what it holds.
	cb         cmdBuffer
	pools      []descPool // descriptor pools, poolSets sets each
	poolUsed   int        // sets taken from the last one
	bufs       []*buffer
	dispatches int
	gen        int
	bound      map[string]*buffer // cache buffers the recording binds
	out        val                // the logits as recorded
}

// Compile checks g and prepares its program; the recording happens at
// the first Run, when the caches are bound.
func (f *Forward) Compile(g *ir.Graph, bind map[string]int) (*ForwardProgram, error) {
	if g == nil {
		return nil, errors.New("vulkan forward: compile: nil graph")
	}
	for _, n := range g.Nodes {
		if protectionOps[n.Op] {
			return nil, fmt.Errorf("vulkan forward: compile %s: %v = %s: protected graphs are not supported (the whole-forward engine is the mask-none baseline)", g.Name, n.ID, n.Op)
		}
		if !forwardOps[n.Op] {
			return nil, fmt.Errorf("vulkan forward: compile %s: %v = %s: op not supported", g.Name, n.ID, n.Op)
		}
	}
	for _, param := range g.Params {
		if v, ok := bind[param]; !ok || v <= 0 {
			return nil, fmt.Errorf("vulkan forward: compile %s: dim %s must be bound to a positive size", g.Name, param)
		}
	}
	p := &ForwardProgram{f: f, g: g, bind: bind, dims: make([][]int, len(g.Nodes)),
		i32: map[string][]int32{}, i32Off: map[string]int{}, caches: map[string][]float32{},
		cacheIn: map[string]ir.ValueID{}, cacheAt: map[string]int{}, offs: map[string]int{}, named: map[string]int{}}
	off := 0
	for i, n := range g.Nodes {
		d := make([]int, len(n.Type.Shape))
		for j, s := range n.Type.Shape {
			v, err := s.Bind(bind)
			if err != nil {
				return nil, fmt.Errorf("vulkan forward: compile %s: %v = %s: %w", g.Name, n.ID, n.Op, err)
			}
			d[j] = v
		}
		p.dims[i] = d
		if ir.WritesCache(n.Op) && p.maxT == 0 {
			p.maxT, p.nseq = d[len(d)-2], d[len(d)-3]
		}
		if n.Op != ir.OpInput {
			continue
		}
		name, _ := n.Attrs.Str("name")
		size := 1
		for _, v := range d {
			size *= v
		}
		p.named[name] = size
		switch {
		case n.Type.DType == ir.I32 && len(d) == 1:
			p.i32[name] = make([]int32, size)
			p.i32Off[name] = off
			off += size
		case n.Type.DType == ir.F32 && len(d) == 3:
			p.cacheIn[name] = n.ID
			p.cacheAt[name] = off
			off++
		default:
			return nil, fmt.Errorf("vulkan forward: compile %s: input %q of type %v is neither an index vector nor a cache", g.Name, name, n.Type)
		}
	}
	if p.maxT == 0 {
		p.maxT = bind["T"]
	}
	p.limit = p.maxT
	if l, ok := bind["L"]; ok && l > 0 && l < p.maxT {
		p.limit = l
	}
	if p.limit > maxAttnT {
		return nil, fmt.Errorf("vulkan forward: compile %s: attention over %d positions; the shader holds at most %d", g.Name, p.limit, maxAttnT)
	}
	for _, o := range g.Outputs {
		if _, ok := p.cacheIn[o.Name]; ok {
			continue
		}
		if p.outName != "" {
			return nil, fmt.Errorf("vulkan forward: compile %s: outputs %q and %q: one non-cache output is supported", g.Name, p.outName, o.Name)
		}
		p.outName = o.Name
		size := 1
		for _, v := range p.dims[o.Value] {
			size *= v
		}
		p.logits = make([]float32, size)
		p.named[o.Name] = size
	}
	p.zeroAt = off
	off++
	c := f.d.c
	var err error
	if p.idx, err = c.newBuffer(4*int64(off), memHost); err != nil {
		return nil, fmt.Errorf("vulkan forward: compile %s: %w", g.Name, err)
	}
	f.mu.Lock()
	f.progs[p] = true
	f.mu.Unlock()
	return p, nil
}

// Float32 returns the logits or a bound cache's caller storage.
func (p *ForwardProgram) Float32(name string) ([]float32, error) {
	if name == p.outName && p.logits != nil {
		return p.logits, nil
	}
	if c, ok := p.caches[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("graph %s has no bound f32 input or output %q", p.g.Name, name)
}

// Int32 returns a named index input, filled by the caller before Run.
func (p *ForwardProgram) Int32(name string) ([]int32, error) {
	if b, ok := p.i32[name]; ok {
		return b, nil
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

// BindFloat32 maps a cache input to the device copy of buf.
func (p *ForwardProgram) BindFloat32(name string, buf []float32) error {
	if _, ok := p.cacheIn[name]; !ok {
		return fmt.Errorf("graph %s has no f32 input %q", p.g.Name, name)
	}
	if len(buf) != p.named[name] {
		return fmt.Errorf("graph %s: input %q holds %d values, got a buffer of %d", p.g.Name, name, p.named[name], len(buf))
	}
	p.caches[name] = buf
	p.rebound = true
	return nil
}

func (p *ForwardProgram) check() error {
	for name := range p.cacheIn {
		if p.caches[name] == nil {
			return fmt.Errorf("input %q is not bound", name)
		}
	}
	if b, ok := p.i32[models.InputPos]; ok {
		for i, q := range b {
			if q < 0 || int(q) >= p.limit {
				return fmt.Errorf("position %d of row %d is outside [0, %d) (cache %d, kv bucket %d)", q, i, p.limit, p.maxT, p.limit)
			}
		}
	}
	if b, ok := p.i32[models.InputSeq]; ok && p.nseq > 0 {
		for i, s := range b {
			if s < 0 || int(s) >= p.nseq {
				return fmt.Errorf("sequence %d of row %d is outside [0, %d)", s, i, p.nseq)
			}
		}
	}
	if b, ok := p.i32[p.tokIn]; ok && p.vocab > 0 {
		for i, t := range b {
			if t < 0 || int(t) >= p.vocab {
				return fmt.Errorf("token id %d at index %d is outside [0, %d)", t, i, p.vocab)
			}
		}
	}
	return nil
}

// Run writes the index inputs into the host-visible buffer, replays the
// step (recording it first if this is the first Run or a cache moved) and
// copies the logits out.
func (p *ForwardProgram) Run() error {
	f := p.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.d == nil || f.d.closed {
		return fmt.Errorf("vulkan forward: run %s: closed", p.g.Name)
	}
	if err := p.check(); err != nil {
		return fmt.Errorf("vulkan forward: run %s: %w", p.g.Name, err)
	}
	if err := p.ensureRecorded(); err != nil {
		return fmt.Errorf("vulkan forward: run %s: %w", p.g.Name, err)
	}
	m := p.idx.mapped()
	for name, b := range p.i32 {
		if len(b) > 0 {
			copy(m[4*p.i32Off[name]:], unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), 4*len(b)))
		}
	}
	words := unsafe.Slice((*int32)(unsafe.Pointer(&m[0])), len(m)/4)
	for name, at := range p.cacheAt {
		words[at] = int32(p.offs[name])
	}
	words[p.zeroAt] = 0
	if err := f.d.c.submit(p.cb); err != nil {
		return fmt.Errorf("vulkan forward: run %s: %w", p.g.Name, err)
	}
	f.stats.Runs++
	f.stats.Submits++
	f.stats.Dispatches += int64(p.dispatches)
	if p.logits != nil {
		o := p.out
		hm := o.buf.mapped()
		src := unsafe.Slice((*float32)(unsafe.Pointer(&hm[0])), len(hm)/4)
		for r := range o.rows {
			copy(p.logits[r*o.cols:(r+1)*o.cols], src[o.off+r*o.stride:])
		}
	}
	return nil
}

// ensureRecorded records the step when there is none or a cache it binds
// now lives in another device buffer; a cache bound at another offset of
// the same buffer (another sequence's slot) only moves its offset, which
// the shaders read from idx.
func (p *ForwardProgram) ensureRecorded() error {
	f := p.f
	if p.cb != nil && !p.rebound && p.gen == f.gen {
		return nil
	}
	cur := map[string]*buffer{}
	for name, host := range p.caches {
		b, off, err := f.cacheFor(host)
		if err != nil {
			return fmt.Errorf("cache %s: %w", name, err)
		}
		cur[name] = b
		p.offs[name] = off
	}
	p.rebound, p.gen = false, f.gen
	if p.cb != nil {
		same := true
		for name, b := range cur {
			same = same && p.bound[name] == b
		}
		if same {
			return nil
		}
		p.free()
	}
	p.bound = cur
	if err := p.record(); err != nil {
		p.free()
		return err
	}
	f.stats.Recordings++
	return nil
}

// free releases the recording and the program's buffers.
func (p *ForwardProgram) free() {
	c := p.f.d.c
	if p.cb != nil {
		c.freeCmd(p.cb)
		p.cb = nil
	}
	for _, pl := range p.pools {
		c.destroyPool(pl)
	}
	p.pools, p.poolUsed = nil, 0
	for _, b := range p.bufs {
		c.freeBuffer(b)
	}
	p.bufs = nil
}

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

func (r *recorder) node(n *ir.Node) error {
	p := r.p
	in := n.Inputs
	d := p.dims[n.ID]
	attr := func(name string) int { x, _ := n.Attrs.Int(name); return int(x) }
	eps, _ := n.Attrs.Float("eps")
	v := func(i int) (val, error) {
		x := r.vals[in[i]]
		if x.buf == nil {
			return val{}, fmt.Errorf("operand %d (%v) has no f32 value on the device", i, in[i])
		}
		return x, nil
	}
	cacheOf := func(i int) (val, error) {
		cv, ok := r.cache[in[i]]
		if !ok {
			return val{}, fmt.Errorf("operand %d (%v) is not a KV cache", i, in[i])
		}
		return cv, nil
	}
	setOut := func(x val, err error) error {
		r.vals[n.ID] = x
		return err
	}
	switch n.Op {
	case ir.OpWeight, ir.OpConcatWeights:
		return nil // resident, fetched by their users
	case ir.OpInput:
		name, _ := n.Attrs.Str("name")
		if _, ok := p.cacheIn[name]; ok {
			r.cache[n.ID] = val{buf: p.bound[name], rows: d[0] * d[1], cols: d[2], stride: d[2], at: p.cacheAt[name]}
		}
		return nil
	case ir.OpEmbed:
		ids, err := r.idxOf(in[0])
		if err != nil {
			return err
		}
		if src := p.g.Node(in[0]); src != nil {
			p.tokIn, _ = src.Attrs.Str("name")
		}
		p.vocab = p.dims[in[1]][0]
		w, err := p.f.matWeight(p.g, p.g.Node(in[1]), p.dims[in[1]][0], p.dims[in[1]][1])
		if err != nil {
			return err
		}
		if w.format != fmtF32 {
			return fmt.Errorf("the embedding table is %s; the gather reads f32", formatNames[w.format])
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
		r.vals[n.ID] = out
		return nil
	case ir.OpRMSNorm, ir.OpQKNorm, ir.OpAddRMSNorm:
		x, err := v(0)
		if err != nil {
			return err
		}
		b := x
		wi := 1
		if n.Op == ir.OpAddRMSNorm {
			if b, err = v(1); err != nil {
				return err
			}
			wi = 2
		}
		w, err := r.normWeight(in[wi])
		if err != nil {
			return err
		}
		seg, per := x.cols, 1
		if n.Op == ir.OpQKNorm {
			per, seg = attr("heads"), attr("head_dim")
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
				uint32(y.off), uint32(y.stride), uint32(sum.off), uint32(sum.stride), u32(eps), add}, x.rows*per, 1); err != nil {
			return err
		}
		if n.Op == ir.OpAddRMSNorm {
			r.pairs[n.ID] = [2]val{sum, y}
			return nil
		}
		r.vals[n.ID] = y
		return nil
	case ir.OpTake:
		i := attr("index")
		if pr, ok := r.pairs[in[0]]; ok && i < 2 {
			r.vals[n.ID] = pr[i]
			return nil
		}
		if cp, ok := r.cpairs[in[0]]; ok && i < 2 {
			r.cache[n.ID] = cp[i]
			return nil
		}
		return fmt.Errorf("take %d of %v, which is not a pair", i, in[0])
	case ir.OpMatMul, ir.OpLMHead:
		var x val
		var xq *qval
		var err error
		if q, ok := r.qvals[in[0]]; ok {
			xq = &q
		} else if x, err = v(0); err != nil {
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
			b, err := v(2)
			if err != nil {
				return err
			}
			if err := r.ew(ewBias, y, b, y); err != nil {
				return err
			}
		}
		r.vals[n.ID] = y
		return nil
	case ir.OpBiasAdd:
		x, err := v(0)
		if err != nil {
			return err
		}
		b, err := v(1)
		if err != nil {
			return err
		}
		out, err := r.fresh(x.rows, x.cols)
		if err != nil {
			return err
		}
		return setOut(out, r.ew(ewBias, x, b, out))
	case ir.OpRope, ir.OpNormRope:
		theta, _ := n.Attrs.Float("theta")
		heads, hd := attr("heads"), attr("head_dim")
		x, err := v(0)
		if err != nil {
			return err
		}
		cos, sin, err := r.ropeTables(hd, theta)
		if err != nil {
			return err
		}
		flags, posIn := uint32(2), in[1]
		var w *buffer
		if n.Op == ir.OpNormRope {
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
		return setOut(out, r.headOp(x, heads, hd, flags, eps, w, cos, sin, pos, 0, out, 0))
	case ir.OpNormRopeAppend, ir.OpNormRopeAppendKV, ir.OpKVAppend:
		theta, _ := n.Attrs.Float("theta")
		heads, hd := attr("heads"), attr("head_dim")
		kc, err := cacheOf(0)
		if err != nil {
			return err
		}
		T := p.dims[in[0]][1]
		switch n.Op {
		case ir.OpKVAppend: // cache, x, seq, pos
			x, err := v(1)
			if err != nil {
				return err
			}
			seq, err1 := r.idxOf(in[2])
			pos, err2 := r.idxOf(in[3])
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			r.cache[n.ID] = kc
			return r.headOp(x, 1, x.cols, 4, 0, nil, nil, nil, pos, seq, kc, T)
		case ir.OpNormRopeAppend: // cache, k, w, seq, pos
			k, err := v(1)
			if err != nil {
				return err
			}
			w, err := r.normWeight(in[2])
			if err != nil {
				return err
			}
			cos, sin, err := r.ropeTables(hd, theta)
			if err != nil {
				return err
			}
			seq, err1 := r.idxOf(in[3])
			pos, err2 := r.idxOf(in[4])
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			r.cache[n.ID] = kc
			return r.headOp(k, heads, hd, 7, eps, w, cos, sin, pos, seq, kc, T)
		}
		// kc, vc, k, v, w, seq, pos
		vc, err := cacheOf(1)
		if err != nil {
			return err
		}
		k, err := v(2)
		if err != nil {
			return err
		}
		vv, err := v(3)
		if err != nil {
			return err
		}
		w, err := r.normWeight(in[4])
		if err != nil {
			return err
		}
		cos, sin, err := r.ropeTables(hd, theta)
		if err != nil {
			return err
		}
		seq, err1 := r.idxOf(in[5])
		pos, err2 := r.idxOf(in[6])
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if err := r.headOp(k, heads, hd, 7, eps, w, cos, sin, pos, seq, kc, T); err != nil {
			return err
		}
		if err := r.headOp(vv, heads, hd, 4, eps, nil, nil, nil, pos, seq, vc, T); err != nil {
			return err
		}
		r.cpairs[n.ID] = [2]val{kc, vc}
		return nil
	case ir.OpAttention: // q, kc, vc, seq, pos
		q, err := v(0)
		if err != nil {
			return err
		}
		kc, err := cacheOf(1)
		if err != nil {
			return err
		}
		vc, err := cacheOf(2)
		if err != nil {
			return err
		}
		seq, err1 := r.idxOf(in[3])
		pos, err2 := r.idxOf(in[4])
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		heads, kvh, hd := attr("heads"), attr("kv_heads"), attr("head_dim")
		if hd > maxHeadDim || kvh <= 0 || heads%kvh != 0 {
			return fmt.Errorf("heads %d, kv_heads %d, head_dim %d not supported", heads, kvh, hd)
		}
		scale, _ := n.Attrs.Float("scale")
		T := p.dims[in[1]][1]
		out, err := r.fresh(q.rows, heads*hd)
		if err != nil {
			return err
		}
		return setOut(out, r.op(fwdAttention, [5]*buffer{q.buf, kc.buf, vc.buf, out.buf},
			[]uint32{uint32(heads), uint32(kvh), uint32(hd), uint32(q.off), uint32(q.stride), uint32(T), uint32(kc.cols),
				uint32(p.limit), u32(scale), 0, uint32(out.stride), pos, seq, uint32(kc.at), uint32(vc.at)}, q.rows*heads, 1))
	case ir.OpSiLU, ir.OpMul, ir.OpAdd, ir.OpSwiGLU:
		a, err := v(0)
		if err != nil {
			return err
		}
		b := a
		op := ewSiLU
		switch {
		case n.Op == ir.OpMul, n.Op == ir.OpAdd, n.Op == ir.OpSwiGLU && len(in) == 2:
			if b, err = v(1); err != nil {
				return err
			}
			op = map[string]int{ir.OpMul: ewMul, ir.OpAdd: ewAdd, ir.OpSwiGLU: ewSwiGLU2}[n.Op]
		case n.Op == ir.OpSwiGLU:
			op = ewSwiGLU1
		}
		out, err := r.fresh(d[0], d[1])
		if err != nil {
			return err
		}
		return setOut(out, r.ew(op, a, b, out))
	case ir.OpSliceCols:
		x, err := v(0)
		if err != nil {
			return err
		}
		start, width := attr("start"), attr("width")
		if start < 0 || width <= 0 || start+width > x.cols {
			return fmt.Errorf("columns [%d, %d) of %d", start, start+width, x.cols)
		}
		x.off += start
		x.cols = width
		r.vals[n.ID] = x
		return nil
	case ir.OpLastRow:
		x, err := v(0)
		if err != nil {
			return err
		}
		x.off += (x.rows - 1) * x.stride
		x.rows = 1
		r.vals[n.ID] = x
		return nil
	case ir.OpToDevice, ir.OpToTEE, ir.OpProbe:
		if q, ok := n.Attrs.Str("quant"); ok && q != "" {
			if n.Op != ir.OpToDevice || q != "q8_0" {
				return fmt.Errorf("quant %q: only q8_0 crossings to the device are supported", q)
			}
			x, err := v(0)
			if err != nil {
				return err
			}
			return r.quantize(n.ID, x)
		}
		if q, ok := r.qvals[in[0]]; ok {
			r.qvals[n.ID] = q
			return nil
		}
		// Mask none, one engine: crossings and probes are the identity.
		if cv, ok := r.cache[in[0]]; ok {
			r.cache[n.ID] = cv
			return nil
		}
		x, err := v(0)
		if err != nil {
			return err
		}
		r.vals[n.ID] = x
		return nil
	}
	return fmt.Errorf("op not supported")
}
