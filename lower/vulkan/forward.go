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
	"slices"
	"strings"
	"sync"
	"unsafe"

	"gelo/device/wire"
	"gelo/ir"
	"gelo/models"
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

// resident returns the weight uploaded under key, or nil.
func (d *Device) resident(key string) *weight {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.weights[key]
}

// embedTable returns the gather's table as f32 rows on the device.
func (f *Forward) embedTable(g *ir.Graph, n *ir.Node, rows, cols int) (*weight, error) {
	if n.Type.DType == ir.F32 {
		return f.matWeight(g, n, rows, cols)
	}
	// A table the plan holds in bf16 or blocks (a tied LM head's) is
	// gathered as those values expanded to f32, which the TEE's gather
	// computes from the same rounding: uploaded once more, as f32 rows,
	// since the gather shader reads f32.
	names, err := weightNames(g, n)
	if err != nil {
		return nil, err
	}
	key := "embed-" + n.Type.DType.String() + ":" + strings.Join(names, "|")
	d := f.d
	if w := d.resident(key); w != nil {
		return w, nil
	}
	if len(names) != 1 {
		return nil, fmt.Errorf("embedding table %v: a gather reads one weight", names)
	}
	data, _, err := f.weights.Get(names[0])
	if err != nil {
		return nil, err
	}
	if len(data) != rows*cols {
		return nil, fmt.Errorf("embedding table %q holds %d values, graph wants [%d, %d]", names[0], len(data), rows, cols)
	}
	vals := make([]float32, len(data))
	switch n.Type.DType {
	case ir.BF16:
		for i, v := range data {
			vals[i] = safetensors.BF16ToF32(safetensors.F32ToBF16(v))
		}
	case ir.Q8_0, ir.Q4_0:
		wf, err := wire.FormatOf(n.Type.DType)
		if err != nil {
			return nil, fmt.Errorf("embedding table %q: %w", names[0], err)
		}
		qm, err := wire.Quantize(wf, data, rows, cols)
		if err != nil {
			return nil, fmt.Errorf("embedding table %q: %w", names[0], err)
		}
		if err := qm.Dequantize(vals); err != nil {
			return nil, fmt.Errorf("embedding table %q: %w", names[0], err)
		}
	default:
		return nil, fmt.Errorf("embedding table dtype %v is not wired into the whole-forward engine", n.Type.DType)
	}
	if err := d.Upload(key, vals, rows, cols); err != nil {
		return nil, err
	}
	return d.resident(key), nil
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
	if w := d.resident(key); w != nil {
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
	return d.resident(key), nil
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
		if reason, ok := declined[n.Op]; ok {
			return nil, fmt.Errorf("vulkan forward: compile %s: %v = %s: %s", g.Name, n.ID, n.Op, reason)
		}
		if lowerings[n.Op] == nil {
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
