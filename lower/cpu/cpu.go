// Package cpu is gelo's pure-Go backend: it lowers a placed graph to a flat
// list of kernel calls over preallocated buffers. Both sides of the trust
// boundary run here; the device side is whatever device.Device
// wraps, and this backend is also the reference the others are held to.
package cpu

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	"gelo/device"
	"gelo/device/wire"
	"gelo/ir"
	"gelo/lower/cpu/kernels"
	"gelo/lower/cpu/mask"
	"gelo/lower/cpu/probe"
	"gelo/lower/cpu/quant"
	"gelo/models"
	"gelo/models/gguf"
	"gelo/passes"
)

// Options configure a backend.
type Options struct {
	// Workers is the kernel goroutine count (<= 0: GOMAXPROCS). Results
	// do not depend on it.
	Workers int
	// Device runs device-placed ops; nil means a LocalDevice sharing this
	// backend's kernels.
	Device device.Device
	// SessionKey keys the per-pass mask stream, HKDF(key, pass counter).
	// Protected programs refuse to run without one.
	SessionKey []byte
	// Traffic, when not nil, counts what crosses to and from the device.
	Traffic *Traffic
	// Wrap, when not nil, wraps the device (Device, or the LocalDevice
	// on this backend's own pool) before use: a spy or a lying device
	// around the local one, without a second set of worker goroutines.
	Wrap func(device.Device) device.Device
	// ReusePads is an insecure fault for the attack harness's control of
	// the lwe level: every lwe row takes pad counter 0 of its crossing
	// kind, so every ciphertext of that kind carries the same pad (and
	// decode draws no pool). The harness must break it; nothing else sets
	// it.
	ReusePads bool
}

// Traffic counts the payloads a backend's programs send the device and
// the bytes each way: what the user is told crossed the boundary.
type Traffic struct {
	Payloads, Rows, ToDevice, ToTEE atomic.Int64
}

func (t *Traffic) add(rows, in, out int) {
	if t != nil {
		t.Payloads.Add(1)
		t.Rows.Add(int64(rows))
		t.ToDevice.Add(int64(in))
		t.ToTEE.Add(int64(out))
	}
}

// Backend compiles graphs against one set of resident weights. The
// programs of one backend share its pass counter: prefill is one pass,
// each decode step one more, and each pass draws fresh mask material.
type Backend struct {
	weights *models.Weights
	ctx     *kernels.Ctx
	dev     device.Device
	traffic *Traffic
	key     []byte

	mu       sync.Mutex
	ropes    map[ropeKey]*kernels.Rope
	uploaded map[string]bool
	stacks   map[string][]float32 // stacked weights by joined name
	qmats    map[string]*wire.Matrix
	bf16s    map[string][]uint16 // bf16 device weights by (joined) name
	qctx     *quant.Ctx
	pass     uint64 // highest pass number run so far
	passSeen bool
	rng      *mask.RNG
	ws       [][]*mask.Workspace // [colour][group]

	profiling bool
	prof      Profile

	lat       *lattice     // the lwe level's state (nil until an lwe program compiles)
	reusePads bool         // Options.ReusePads: the harness's insecure control
	padNanos  atomic.Int64 // time drawing lwe pads since the last TakeProfile (while profiling)

	pools      map[string]*probe.Pool // probe pools by weight and size
	probeStats probeStats
	failed     atomic.Bool // a probe failed: the session is over

	// matvecProgs are the compiled programs with one-row TEE matmuls
	// (ReadMatVecWeights), held weakly: a program the runtime drops is
	// not kept alive for a benchmark.
	matvecProgs []weak.Pointer[Program]
}

// Bucket is a cost class of instructions, the split of the seed's §07
// table.
type Bucket int

const (
	BucketMask      Bucket = iota // mask apply and unapply (A X, A^T Y)
	BucketShield                  // shield fill and strip, centring
	BucketDevice                  // device matmuls (what the accelerator does)
	BucketLocal                   // matmuls kept in the TEE (at B = 1 under exact: all of them)
	BucketAttention               // TEE attention and KV append
	BucketProbe                   // integrity probes of device results
	BucketLattice                 // lwe encode and decode (online: the pads apart)
	BucketPads                    // lwe pads: m = A s + e and u = H s for each row
	BucketOther                   // norms, RoPE, residuals, embedding ...
	NumBuckets
)

var bucketNames = [NumBuckets]string{"mask apply+unapply", "shield fill+strip", "device matmul", "TEE matmul", "TEE attention", "integrity probes", "lwe encode+decode", "lwe pads", "other"}

func (b Bucket) String() string { return bucketNames[b] }

// costBuckets maps the op record's cost class to a profile bucket.
var costBuckets = map[ir.Cost]Bucket{
	ir.CostMask: BucketMask, ir.CostShield: BucketShield, ir.CostAttention: BucketAttention, ir.CostProbe: BucketProbe,
	ir.CostLattice: BucketLattice,
	ir.CostOther:   BucketOther,
}

func bucketOf(op string, place ir.Placement) Bucket {
	info := ir.Op(op)
	switch {
	case place == ir.Device:
		return BucketDevice
	case info == nil:
		return BucketOther
	case info.Class == ir.ClassLinear:
		return BucketLocal
	}
	return costBuckets[info.Cost]
}

// Profile is time spent per bucket since the last reset.
type Profile [NumBuckets]time.Duration

// Total sums the buckets.
func (p Profile) Total() time.Duration {
	var t time.Duration
	for _, d := range p {
		t += d
	}
	return t
}

// SetProfiling turns per-bucket timing on or off (off costs nothing).
func (b *Backend) SetProfiling(on bool) { b.profiling = on }

// TakeProfile returns the profile so far and resets it.
func (b *Backend) TakeProfile() Profile {
	p := b.prof
	b.prof = Profile{}
	// The pads are drawn inside the encodes' instructions: their time
	// moves from the encodes' bucket to their own.
	pads := time.Duration(b.padNanos.Swap(0))
	p[BucketLattice] -= pads
	p[BucketPads] += pads + b.lat.takePoolTime() // the decode pools' bulk work, off the critical path
	return p
}

type ropeKey struct {
	hd, maxPos int
	theta      float64
}

// New returns a backend over w.
func New(w *models.Weights, opt Options) *Backend {
	b := &Backend{weights: w, ctx: kernels.NewCtx(opt.Workers), dev: opt.Device, traffic: opt.Traffic,
		key: append([]byte(nil), opt.SessionKey...), ropes: map[ropeKey]*kernels.Rope{}, uploaded: map[string]bool{},
		stacks: map[string][]float32{}, qmats: map[string]*wire.Matrix{}, bf16s: map[string][]uint16{},
		pools: map[string]*probe.Pool{}}
	// One pool for both kinds of kernels: its goroutines stay warm
	// across the alternating ops of a step, and never compete with a
	// second set.
	b.qctx = quant.NewCtxOn(b.ctx.Pool())
	if b.dev == nil {
		b.dev = newLocalDevice(b.ctx, b.qctx)
	}
	if opt.Wrap != nil {
		b.dev = opt.Wrap(b.dev)
	}
	b.reusePads = opt.ReusePads
	return b
}

// Name identifies the backend in plans and reports.
func (b *Backend) Name() string { return "cpu" }

// Close stops the worker pools and wipes the session key.
func (b *Backend) Close() {
	b.ctx.Close()
	b.qctx.Close()
	b.wipeSecrets()
	b.lat.forget()
}

// wipeSecrets zeroises the session key and everything drawn from it: the
// mask workspaces and stream, and the probe pools.
func (b *Backend) wipeSecrets() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, pl := range b.pools {
		pl.Zeroise()
	}
	for _, set := range b.ws {
		for _, ws := range set {
			ws.Zeroise()
		}
	}
	if b.rng != nil {
		b.rng.Zeroise()
		b.rng.Forget()
	}
	clear(b.key)
	b.key = b.key[:0]
}

// passUsed records a pass number and reports whether it was seen before:
// one session key must never key two passes with the same number, or the
// device would see two payloads under one mask. Numbers only grow, so the
// highest seen is enough.
func (b *Backend) passUsed(pass uint64) bool {
	if b.passSeen && pass <= b.pass {
		return true
	}
	b.pass, b.passSeen = pass, true
	return false
}

// Kernels exposes the kernel context (benchmarks measure the machine with it).
func (b *Backend) Kernels() *kernels.Ctx { return b.ctx }

func (b *Backend) rope(hd int, theta float64, maxPos int) *kernels.Rope {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := ropeKey{hd, maxPos, theta}
	r := b.ropes[k]
	if r == nil {
		r = kernels.NewRope(hd, theta, maxPos)
		b.ropes[k] = r
	}
	return r
}

// Program is a compiled graph: one instruction per node over buffers
// assigned at compile time, reused once their value is dead.
type Program struct {
	g       *ir.Graph
	f32     [][]float32
	i32     [][]int32
	u32     [][]uint32 // lwe ciphertext rows and their device products
	dims    [][]int
	instrs  []func() error
	ops     []string
	buckets []Bucket
	named   map[string]ir.ValueID
	bound   map[ir.ValueID]bool
	// store is each value's storage (ir.Storage): a cache update's is its
	// cache.
	store []ir.ValueID

	b        *Backend
	external []ir.ValueID        // inputs the caller must bind (KV caches)
	q        []*wire.Matrix      // quantized weights by value
	b16      [][]uint16          // bf16 weights by value
	h16      [][]uint16          // 16-bit KV caches by input: the bound words, as 16-bit elements
	qa       []*wire.Activations // q8_0 rows by value
	bind     map[string]int
	plan     *passes.MemPlan
	arena    []float32
	slots    map[int64]*slot
	lslots   map[int64]*latticeSlot // lwe crossings by slot
	padBufs  map[string]*padBuf     // lwe pad buffers by shape
	// live lists the slots sampled in the current pass.
	live []*slot
	// probes: the graph checks device results, drawing from picker.
	probes bool
	picker probe.Picker
	// matvecs are the one-row TEE matmuls, in program order.
	matvecs []*ir.Node
}

// slot is the mask material of one mask slot of a pass: sampled at the
// slot's first mask op, used by its unmasks, zeroised when the pass ends.
type slot struct {
	family string
	size   int // rows one mask acts on
	groups int // independent masks: 1, or B when each sequence has its own
	first  int // instruction index of its first and last use
	last   int
	ws     []*mask.Workspace // one per group
	ms     []mask.Mask       // sampled this pass, one per group
	live   bool
	// alpha is the whitening scale of the slot's stack this pass (the
	// exact level): H / alpha crossed, the strip multiplies it back.
	alpha float32
}

// Compile lowers g with its symbolic dims bound.
func (b *Backend) Compile(g *ir.Graph, bind map[string]int) (*Program, error) {
	var warms []func() // by instruction: a TEE matvec's warming of its weights
	p := &Program{
		g: g, f32: make([][]float32, len(g.Nodes)), i32: make([][]int32, len(g.Nodes)), u32: make([][]uint32, len(g.Nodes)),
		lslots: map[int64]*latticeSlot{}, padBufs: map[string]*padBuf{},
		dims: make([][]int, len(g.Nodes)), named: map[string]ir.ValueID{}, bound: map[ir.ValueID]bool{},
		b: b, slots: map[int64]*slot{},
		q: make([]*wire.Matrix, len(g.Nodes)), qa: make([]*wire.Activations, len(g.Nodes)),
		b16: make([][]uint16, len(g.Nodes)), h16: make([][]uint16, len(g.Nodes)), store: make([]ir.ValueID, len(g.Nodes)),
	}
	if b.failed.Load() {
		// An aborted session's key is wiped: nothing protected compiles.
		return nil, fmt.Errorf("compile %s: %w", g.Name, ErrIntegrity)
	}
	bind, err := BindShieldDims(g, bind)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", g.Name, err)
	}
	p.bind = bind
	for _, param := range g.Params {
		if v, ok := bind[param]; !ok || v <= 0 {
			return nil, fmt.Errorf("compile %s: dim %s must be bound to a positive size", g.Name, param)
		}
	}
	for i, n := range g.Nodes {
		dims, err := bindShape(n.Type.Shape, bind)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %v = %s: %w", g.Name, n.ID, n.Op, err)
		}
		p.dims[i] = dims
		p.store[i] = ir.Storage(g, n.ID)
		if n.Op == ir.OpInput {
			name, _ := n.Attrs.Str("name")
			p.named[name] = n.ID
		}
	}
	for _, o := range g.Outputs {
		if _, dup := p.named[o.Name]; !dup {
			p.named[o.Name] = o.Value
		}
	}
	plan, err := passes.PlanMemory(g, bind)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", g.Name, err)
	}
	p.plan = plan
	p.arena = make([]float32, plan.ArenaElems)
	partOnly := stackPartsOnly(g)
	for i, n := range g.Nodes {
		size := 1
		for _, d := range p.dims[i] {
			size *= d
		}
		result := ir.ResultOf(n.Op)
		switch slot, inArena := plan.Slots[n.ID]; {
		case partOnly[i] && (wireStored(n.Type.DType) || n.Type.DType == ir.BF16):
			// Read only through the stack it is part of: the stack holds
			// its converted rows, no copy of its own.
		case wireStored(n.Type.DType) && result == ir.Resident:
			qm, err := b.quantized(p, n)
			if err != nil {
				return nil, fmt.Errorf("compile %s: %v = %s: %w", g.Name, n.ID, n.Op, err)
			}
			p.q[i] = qm
		case n.Type.DType == ir.BF16 && result == ir.Resident:
			data, err := b.bf16Weights(p, n)
			if err != nil {
				return nil, fmt.Errorf("compile %s: %v = %s: %w", g.Name, n.ID, n.Op, err)
			}
			p.b16[i] = data
		case n.Type.DType.IsQuantized():
			// q8_0 rows: the f32 rows are masked in scratch, then written
			// as blocks; only the blocks cross.
			p.f32[i] = make([]float32, size)
			p.qa[i] = wire.NewActivations(p.dims[i][0], p.dims[i][1])
		case n.Op == ir.OpWeight:
			name, _ := n.Attrs.Str("name")
			data, shape, err := b.weights.Get(name)
			if err != nil {
				return nil, fmt.Errorf("compile %s: %v = weight %q: %w", g.Name, n.ID, name, err)
			}
			if !slices.Equal(shape, p.dims[i]) {
				return nil, fmt.Errorf("compile %s: weight %q has shape %v, graph wants %v", g.Name, name, shape, p.dims[i])
			}
			p.f32[i] = data
		case n.Op == ir.OpConcatWeights:
			data, err := b.stacked(p, n)
			if err != nil {
				return nil, fmt.Errorf("compile %s: %v = concat_weights: %w", g.Name, n.ID, err)
			}
			p.f32[i] = data
		case result == ir.InPlace || p.store[i] != n.ID:
			// A cache (or a pair of caches) updated in place, or a view of
			// one of a pair: storage() resolves it to the bound cache.
		case result == ir.View:
			parent := p.f32[n.Inputs[ir.Op(n.Op).Aliases[0]]]
			idx, _ := n.Attrs.Int("index")
			p.f32[i] = parent[int(idx)*size : (int(idx)+1)*size : (int(idx)+1)*size]
		case !inArena:
			// A KV cache: session storage, bound before the first run.
			if _, err := kvFormat(n.Type.DType); err != nil {
				return nil, fmt.Errorf("compile %s: cache %v: %w", g.Name, n.ID, err)
			}
			if n.Type.DType != ir.F32 && size%2 != 0 {
				return nil, fmt.Errorf("compile %s: %v cache %v of %d values does not fill whole 32-bit words", g.Name, n.Type.DType, n.ID, size)
			}
			p.external = append(p.external, n.ID)
		case n.Type.DType == ir.I32:
			region := p.arena[slot.Offset : slot.Offset+slot.Size]
			p.i32[i] = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(region))), len(region))
		case n.Type.DType == ir.U32:
			region := p.arena[slot.Offset : slot.Offset+slot.Size]
			p.u32[i] = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(region))), len(region))
		default:
			p.f32[i] = p.arena[slot.Offset : slot.Offset+slot.Size : slot.Offset+slot.Size]
		}
		if _, storageOnly := storageOps[n.Op]; !storageOnly {
			// (quantized weights are prepared above; nothing runs for them)
			instr, err := b.lower(p, n)
			if err != nil {
				return nil, fmt.Errorf("compile %s: %v = %s: %w", g.Name, n.ID, n.Op, err)
			}
			p.instrs = append(p.instrs, instr)
			p.ops = append(p.ops, n.Op)
			p.buckets = append(p.buckets, bucketOf(n.Op, n.Place))
			warms = append(warms, b.matvecWarm(p, n))
			if isTEEMatVec(p, n) {
				p.matvecs = append(p.matvecs, n)
			}
		}
	}
	if err := b.assignWorkspaces(p); err != nil {
		return nil, fmt.Errorf("compile %s: %w", g.Name, err)
	}
	warmMatvecs(p, warms)
	if len(p.matvecs) > 0 {
		b.mu.Lock()
		b.matvecProgs = append(b.matvecProgs, weak.Make(p))
		b.mu.Unlock()
	}
	return p, nil
}

// matvecWarm returns, for a TEE matmul of one activation row (a decode
// step's), what warms its weights on the idle workers (quant.Ctx.Warm,
// kernels.Ctx.WarmMatVec); nil for any other instruction. The weight
// buffer is looked up when it runs, as the product's is.
func (b *Backend) matvecWarm(p *Program, n *ir.Node) func() {
	if !isTEEMatVec(p, n) {
		return nil
	}
	wv := n.Inputs[1]
	k, nOut := p.dims[n.Inputs[0]][1], p.dims[wv][0]
	if qm := p.q[wv]; qm != nil {
		if qm.Format == wire.Int8 {
			return nil // kernels.MatMulTInt8 splits its rows its own way
		}
		qc := b.qctx
		return func() { qc.Warm(qm) }
	}
	ctx := b.ctx
	if w := p.b16[wv]; w != nil {
		dot, _ := n.Attrs.Bool(ir.AttrBF16Dot)
		return func() { ctx.WarmMatVecBF16(w, k, nOut, dot) }
	}
	if p.f32[wv] == nil {
		return nil
	}
	return func() { ctx.WarmMatVec(p.f32[p.storage(wv)], k, nOut) }
}

// warmMatvecs has each instruction that is not a TEE matvec (one
// activation row: a decode step) first hand the next one's weights to the
// idle workers to warm: the caller runs most such instructions alone. The
// next after the last is the program's first, which the next step runs.
// Attention is left out (it runs on every worker).
func warmMatvecs(p *Program, warms []func()) {
	for i, t := range warmTargets(warms, p.ops) {
		if t >= 0 {
			f, w := p.instrs[i], warms[t]
			p.instrs[i] = func() error { w(); return f() }
		}
	}
}

// warmTargets returns, for each instruction, the index of the matvec
// (warms[i] != nil) it warms: the next one after it, cyclically, for every
// instruction that is neither a matvec nor an attention; -1 for the rest.
func warmTargets(warms []func(), ops []string) []int {
	next := make([]int, len(warms))
	after := -1
	for pass := 0; pass < 2; pass++ { // twice round: the last ones warm the first
		for i := len(warms) - 1; i >= 0; i-- {
			if pass == 0 {
				next[i] = -1
			}
			if warms[i] == nil && ops[i] != ir.OpAttention {
				next[i] = after
			}
			if warms[i] != nil {
				after = i
			}
		}
	}
	return next
}

// uploadOnce runs send, the device upload of the weight called name, the
// first time name is asked for; later calls are no-ops.
func (b *Backend) uploadOnce(name string, send func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.uploaded[name] {
		return nil
	}
	if err := send(); err != nil {
		return err
	}
	b.uploaded[name] = true
	return nil
}

// matrixShape returns the rows and columns of a device weight.
func matrixShape(shape []int) (int, int, error) {
	if len(shape) != 2 {
		return 0, 0, fmt.Errorf("device weights are matrices, got shape %v", shape)
	}
	return shape[0], shape[1], nil
}

// BindShieldDims returns bind plus each shielded row dim (S_n ...) from its data
// rows and the family's shield rule: k >= k_min, padded by HD3 to a power
// of two.
func BindShieldDims(g *ir.Graph, bind map[string]int) (map[string]int, error) {
	out := make(map[string]int, len(bind)+2)
	for k, v := range bind {
		out[k] = v
	}
	for _, n := range g.Nodes {
		if n.Op != ir.OpShieldStack {
			continue
		}
		dim, err := ir.DimAttr(n.Attrs, "rows")
		if err != nil || !dim.IsSym() {
			return nil, fmt.Errorf("%v = shield_stack: %v", n.ID, err)
		}
		rows, err := g.Node(n.Inputs[0]).Type.Shape[0].Bind(out)
		if err != nil {
			return nil, fmt.Errorf("%v = shield_stack: %w", n.ID, err)
		}
		family, _ := n.Attrs.Str("family")
		kmin, explicit := n.Attrs.Int("k_min")
		groups := 1
		if pr, _ := n.Attrs.Bool("per_row"); pr {
			groups, rows = rows, 1 // each row stacked with its own shield
		}
		if c, _ := n.Attrs.Bool("center"); c {
			rows++ // the mean row travels as one more data row
		}
		k, err := mask.ShieldRows(family, rows, int(kmin))
		if explicit && kmin == 0 {
			// No shield rows (passes.ProtectOptions.Unshielded: only the
			// attack harness's C1 sets it); the family may still pad.
			f, _ := ir.LookupMaskFamily(family)
			k, err = f.ShieldRows(rows, 0), nil
		}
		if err != nil {
			return nil, fmt.Errorf("%v = shield_stack: %w", n.ID, err)
		}
		s := groups * (rows + k)
		if prev, ok := out[dim.Sym]; ok && prev != s {
			return nil, fmt.Errorf("%v = shield_stack: %s is bound to %d, the shield rule gives %d", n.ID, dim.Sym, prev, s)
		}
		out[dim.Sym] = s
	}
	return out, nil
}

// assignWorkspaces gives every mask slot a workspace. A workspace holds one
// live mask per family, so slots of one family whose uses overlap need
// different workspaces; the protect pass emits each slot's uses
// contiguously, so one workspace usually serves them all.
func (b *Backend) assignWorkspaces(p *Program) error {
	if len(p.slots) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(p.slots))
	for id := range p.slots {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.SortStableFunc(ids, func(a, c int64) int { return p.slots[a].first - p.slots[c].first })
	busyUntil := map[string][]int{} // family -> per workspace index, last use of its current slot
	for _, id := range ids {
		sl := p.slots[id]
		wsIdx := -1
		for i, until := range busyUntil[sl.family] {
			if until < sl.first {
				wsIdx = i
				break
			}
		}
		if wsIdx < 0 {
			wsIdx = len(busyUntil[sl.family])
			busyUntil[sl.family] = append(busyUntil[sl.family], 0)
		}
		busyUntil[sl.family][wsIdx] = sl.last
		b.mu.Lock()
		for len(b.ws) <= wsIdx {
			b.ws = append(b.ws, nil)
		}
		for len(b.ws[wsIdx]) < sl.groups {
			b.ws[wsIdx] = append(b.ws[wsIdx], mask.NewWorkspace(b.ctx.Workers()))
		}
		sl.ws = b.ws[wsIdx][:sl.groups]
		sl.ms = make([]mask.Mask, sl.groups)
		b.mu.Unlock()
	}
	if len(b.key) == 0 {
		return fmt.Errorf("graph %s is protected (mask %s) but the backend has no session key", p.g.Name, p.slots[ids[0]].family)
	}
	return nil
}

// beginPass keys the pass's mask stream, HKDF(session key, pass number),
// from the pass counter slot the runtime writes before each run.
func (p *Program) beginPass() error {
	b := p.b
	v, ok := p.named[ir.PassInput]
	if !ok {
		return fmt.Errorf("protected graph has no %q counter input", ir.PassInput)
	}
	c := p.i32[v]
	pass := uint64(uint32(c[0])) | uint64(uint32(c[1]))<<32
	if p.probes {
		if err := p.picker.Begin(b.key, pass); err != nil {
			return fmt.Errorf("probes: %w", err)
		}
	}
	if len(p.slots) == 0 {
		// Probes only (mask none): no mask material, so a pass number
		// may come again (a new session on the same backend).
		return nil
	}
	b.mu.Lock()
	if b.passUsed(pass) {
		b.mu.Unlock()
		return fmt.Errorf("pass number %d was already used with this session key: mask material would repeat", pass)
	}
	b.mu.Unlock()
	if b.rng == nil {
		rng, err := mask.NewPassRNG(b.key, pass)
		if err != nil {
			return err
		}
		b.rng = rng
		return nil
	}
	return b.rng.Reset(b.key, pass)
}

// endPass drops the pass's mask material: masks, scratch and the stream.
func (p *Program) endPass() {
	for _, sl := range p.live {
		for g, ws := range sl.ws {
			ws.Zeroise()
			sl.ms[g] = nil
		}
		sl.live = false
	}
	p.live = p.live[:0]
	for _, sl := range p.slots {
		sl.alpha = 0
	}
	p.b.rng.Zeroise()
	p.picker.Wipe()
}

// maskOf returns the slot's mask, sampling it at the slot's first use in
// the pass.
func (p *Program) maskOf(sl *slot, group int) (mask.Mask, error) {
	if !sl.live {
		// Sample every group's mask at the slot's first use, in group
		// order, so the stream is consumed the same way every pass.
		for g, ws := range sl.ws {
			m, err := ws.Sample(sl.family, sl.size, p.b.rng)
			if err != nil {
				return nil, err
			}
			sl.ms[g] = m
		}
		sl.live = true
		p.live = append(p.live, sl)
	}
	return sl.ms[group], nil
}

// storage is the value whose buffer v's is: a cache update's is its
// cache (ir.Storage, resolved at compile).
func (p *Program) storage(v ir.ValueID) ir.ValueID { return p.store[v] }

// WeightName names a weight operand (ir.WeightName).
func WeightName(g *ir.Graph, v ir.ValueID) (string, bool) { return ir.WeightName(g, v) }

// wireStored reports a weight dtype the backend holds as a wire.Matrix:
// the block formats and the int8 rows with a scale (any dtype the wire
// table has a layout for).
func wireStored(dt ir.DType) bool {
	_, err := wire.FormatOf(dt)
	return err == nil
}

// quantized returns (building once per backend) the block-quantized
// form of a weight or of stacked weights.
func (b *Backend) quantized(p *Program, n *ir.Node) (*wire.Matrix, error) {
	name, ok := WeightName(p.g, n.ID)
	if !ok {
		return nil, fmt.Errorf("not a named weight")
	}
	key := n.Type.DType.String() + ":" + name
	b.mu.Lock()
	qm, ok := b.qmats[key]
	b.mu.Unlock()
	if ok {
		return qm, nil
	}
	format, err := wire.FormatOf(n.Type.DType)
	if err != nil {
		return nil, fmt.Errorf("weight %q: %w", name, err)
	}
	rows, cols := p.dims[n.ID][0], p.dims[n.ID][1]
	stored := false // qm.Data is the file's blocks, shared: not reordered
	if n.Op == ir.OpWeight {
		var err error
		if qm, stored, err = b.quantizeWeight(p, n, name); err != nil {
			return nil, err
		}
	} else {
		// Stacking rows of blocks is stacking the block bytes. A part
		// that is not resident already is quantized for the stack only
		// (not kept: the stack holds its blocks).
		// A part converts straight into its place in the stack.
		rb := (&wire.Matrix{Format: format, Cols: cols}).RowBytes()
		data := make([]byte, rows*rb)
		off := 0
		for _, in := range n.Inputs {
			src := p.g.Node(in)
			pn, _ := WeightName(p.g, in)
			b.mu.Lock()
			part, cached := b.qmats[src.Type.DType.String()+":"+pn]
			b.mu.Unlock()
			if src.Op == ir.OpWeight && !cached {
				size := p.dims[in][0] * rb
				if off+size > len(data) {
					return nil, fmt.Errorf("stack part %q overruns the stack's %d rows", pn, rows)
				}
				if err := b.quantizeWeightInto(p, src, pn, data[off:off+size]); err != nil {
					return nil, err
				}
				off += size
				continue
			}
			if !cached {
				var err error
				if part, err = b.quantized(p, src); err != nil {
					return nil, err
				}
			}
			prows, err := part.RowMajorData()
			if err != nil {
				return nil, err
			}
			if off+len(prows) > len(data) {
				return nil, fmt.Errorf("stack part %q overruns the stack's %d rows", pn, rows)
			}
			off += copy(data[off:], prows)
		}
		if off != len(data) {
			return nil, fmt.Errorf("stack parts hold %d bytes, %d rows of blocks need %d", off, rows, len(data))
		}
		var err error
		if qm, err = wire.NewMatrix(format, rows, cols, data); err != nil {
			return nil, err
		}
	}
	if l := b.layout(qm.Format); l != wire.RowMajor && !stored {
		if err := qm.InterleaveTo(l); err != nil {
			return nil, err
		}
	}
	b.mu.Lock()
	b.qmats[key] = qm
	b.mu.Unlock()
	return qm, nil
}

// layout is the layout the backend keeps format f matrices in: the CPU
// kernels' faster interleaved one (quant.LayoutFor) when every product on
// them runs here (the TEE, or the local device that shares the matrices),
// row-major otherwise, since a device reads row-major blocks.
func (b *Backend) layout(f wire.Format) wire.Layout {
	if _, local := b.dev.(*LocalDevice); !local {
		return wire.RowMajor
	}
	return quant.LayoutFor(f)
}

// quantizeWeight quantizes the named weight of node n (not cached); a
// q4_k weight its file stored as Q4_K is those blocks: not copied where
// the backend keeps Q4_K row-major (stored reports it: the blocks are the
// Weights', so they stay as they are), else copied (the mapped file's
// pages dropped) and reordered to the kernels' layout like any other.
func (b *Backend) quantizeWeight(p *Program, n *ir.Node, name string) (qm *wire.Matrix, stored bool, err error) {
	if n.Type.DType == ir.Q4_K && b.layout(wire.Q4_K) == wire.RowMajor {
		if sb, ok := b.weights.Blocks(name); ok && sb.Type == gguf.Q4_K {
			qm, err := wire.NewMatrix(wire.Q4_K, p.dims[n.ID][0], p.dims[n.ID][1], sb.Data)
			if err != nil {
				return nil, false, fmt.Errorf("weight %q as stored: %w", name, err)
			}
			// NewMatrix accepts extra bytes; stored blocks of another shape
			// would be multiplied misread, so their size must be exact.
			if want := qm.Rows * qm.RowBytes(); len(sb.Data) != want {
				return nil, false, fmt.Errorf("weight %q as stored: %d bytes of Q4_K blocks, the graph's %v wants %d", name, len(sb.Data), p.dims[n.ID], want)
			}
			return qm, true, nil
		}
	}
	format, err := wire.FormatOf(n.Type.DType)
	if err != nil {
		return nil, false, fmt.Errorf("weight %q: %w", name, err)
	}
	qm = &wire.Matrix{Format: format, Rows: p.dims[n.ID][0], Cols: p.dims[n.ID][1]}
	qm.Data = make([]byte, qm.Rows*qm.RowBytes())
	if err := b.quantizeWeightInto(p, n, name, qm.Data); err != nil {
		return nil, false, err
	}
	if err := qm.Validate(); err != nil {
		return nil, false, fmt.Errorf("quantize %q: %w", name, err)
	}
	return qm, false, nil
}

// quantizeWeightInto writes the named weight of node n as row-major
// blocks into dst (exactly its size), from the source a chunk of rows at a
// time. A q4_k weight that its file stored as Q4_K is its stored blocks,
// as they are.
func (b *Backend) quantizeWeightInto(p *Program, n *ir.Node, name string, dst []byte) error {
	rows, cols := p.dims[n.ID][0], p.dims[n.ID][1]
	format, err := wire.FormatOf(n.Type.DType)
	if err != nil {
		return fmt.Errorf("weight %q: %w", name, err)
	}
	rb := (&wire.Matrix{Format: format, Cols: cols}).RowBytes()
	if len(dst) != rows*rb {
		return fmt.Errorf("quantize %q: %d bytes for %d rows of %d", name, len(dst), rows, rb)
	}
	if n.Type.DType == ir.Q4_K {
		if sb, ok := b.weights.Blocks(name); ok && sb.Type == gguf.Q4_K {
			// Stored blocks of another shape would be multiplied
			// misread, so their size must be exact.
			if len(sb.Data) != len(dst) {
				return fmt.Errorf("weight %q as stored: %d bytes of Q4_K blocks, the graph's %v wants %d", name, len(sb.Data), p.dims[n.ID], len(dst))
			}
			return b.weights.CopyBlocks(name, dst)
		}
	}
	err = b.readRows(name, p.dims[n.ID], func(lo, hi int, vals []float32) error {
		return wire.QuantizeRows(format, dst[lo*rb:hi*rb], vals)
	})
	if err != nil {
		return fmt.Errorf("quantize %q: %w", name, err)
	}
	return nil
}

// convertChunk is about how many values of a weight are read from the
// source at a time while it is converted: the weight's f32 form is never
// whole in memory (the source may be lazy, see models.Weights).
const convertChunk = 1 << 20

// readRows passes the named weight of shape dims to fn a chunk of whole
// rows at a time, in order (vals is reused between calls).
func (b *Backend) readRows(name string, dims []int, fn func(lo, hi int, vals []float32) error) error {
	_, shape, err := b.weights.Shape(name)
	if err != nil {
		return err
	}
	if !slices.Equal(shape, dims) {
		return fmt.Errorf("weight %q has shape %v, graph wants %v", name, shape, dims)
	}
	rows, cols := 1, 1
	if len(dims) > 0 {
		cols = dims[len(dims)-1]
		for _, d := range dims[:len(dims)-1] {
			rows *= d
		}
	}
	step := max(1, convertChunk/max(cols, 1))
	bp := convertBufs.Get().(*[]float32)
	defer convertBufs.Put(bp)
	if need := min(rows, step) * cols; cap(*bp) < need {
		*bp = make([]float32, need)
	}
	buf := *bp
	for lo := 0; lo < rows; lo += step {
		hi := min(rows, lo+step)
		vals := buf[:(hi-lo)*cols]
		if err := b.weights.ReadRows(name, lo, hi, vals); err != nil {
			return err
		}
		if err := fn(lo, hi, vals); err != nil {
			return err
		}
	}
	return nil
}

// convertBufs recycles readRows's chunk buffers: a load converts hundreds
// of weights, and a fresh buffer each would be garbage the heap grows by
// until the next collection (the load's peak, not its steady state).
var convertBufs = sync.Pool{New: func() any { return new([]float32) }}

// bf16Weights returns (building once per backend) a weight or stacked
// weights rounded to bf16, to nearest even: exact for a bf16 checkpoint.
func (b *Backend) bf16Weights(p *Program, n *ir.Node) ([]uint16, error) {
	name, ok := WeightName(p.g, n.ID)
	if !ok {
		return nil, fmt.Errorf("not a named weight")
	}
	b.mu.Lock()
	data, ok := b.bf16s[name]
	b.mu.Unlock()
	if ok {
		return data, nil
	}
	if n.Op == ir.OpWeight {
		var err error
		if data, err = b.roundBF16(p, n, name); err != nil {
			return nil, err
		}
	} else {
		// A part that is not resident already is rounded straight into
		// its place in the stack (not kept: the stack holds its values).
		data = make([]uint16, elemsOf(p.dims[n.ID]))
		off := 0
		for _, in := range n.Inputs {
			src := p.g.Node(in)
			pn, _ := WeightName(p.g, in)
			size := elemsOf(p.dims[in])
			if off+size > len(data) {
				return nil, fmt.Errorf("stack part %q overruns the stack's %v", pn, p.dims[n.ID])
			}
			b.mu.Lock()
			part, ok := b.bf16s[pn]
			b.mu.Unlock()
			var err error
			switch {
			case ok:
				copy(data[off:off+size], part)
			case src.Op == ir.OpWeight:
				err = b.roundBF16Into(p, src, pn, data[off:off+size])
			default:
				if part, err = b.bf16Weights(p, src); err == nil {
					copy(data[off:off+size], part)
				}
			}
			if err != nil {
				return nil, err
			}
			off += size
		}
		if off != len(data) {
			return nil, fmt.Errorf("stack parts hold %d values, the stack %v needs %d", off, p.dims[n.ID], len(data))
		}
	}
	b.mu.Lock()
	b.bf16s[name] = data
	b.mu.Unlock()
	return data, nil
}

// roundBF16 rounds the named weight of node n to bf16 (not cached).
func (b *Backend) roundBF16(p *Program, n *ir.Node, name string) ([]uint16, error) {
	data := make([]uint16, elemsOf(p.dims[n.ID]))
	if err := b.roundBF16Into(p, n, name, data); err != nil {
		return nil, err
	}
	return data, nil
}

// roundBF16Into rounds the named weight of node n to bf16, to nearest
// even, into dst (exactly its size), from the source a chunk at a time.
func (b *Backend) roundBF16Into(p *Program, n *ir.Node, name string, dst []uint16) error {
	dims := p.dims[n.ID]
	if len(dst) != elemsOf(dims) || len(dims) == 0 {
		return fmt.Errorf("round %q to bf16: %d values for shape %v", name, len(dst), dims)
	}
	c := dims[len(dims)-1]
	err := b.readRows(name, dims, func(lo, hi int, vals []float32) error {
		kernels.RoundBF16(dst[lo*c:lo*c+len(vals)], vals)
		return nil
	})
	if err != nil {
		return fmt.Errorf("round %q to bf16: %w", name, err)
	}
	return nil
}

// elemsOf is the element count of a shape.
func elemsOf(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// stacked returns (building once per backend) the rows of n's weights
// stacked in operand order.
func (b *Backend) stacked(p *Program, n *ir.Node) ([]float32, error) {
	name, ok := WeightName(p.g, n.ID)
	if !ok {
		return nil, fmt.Errorf("operands are not named weights")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if data, ok := b.stacks[name]; ok {
		return data, nil
	}
	// Named weights are stacked by the model itself: its tensors become
	// views of the stack, so the rows are held once, not twice.
	names := make([]string, 0, len(n.Inputs))
	for _, in := range n.Inputs {
		src := p.g.Node(in)
		wn, _ := src.Attrs.Str("name")
		if src.Op != ir.OpWeight || wn == "" {
			names = nil
			break
		}
		names = append(names, wn)
	}
	var data []float32
	if names != nil {
		var err error
		if data, err = b.weights.Stack(names); err != nil {
			return nil, err
		}
		off := 0
		for _, in := range n.Inputs {
			k := len(p.f32[in])
			if off+k > len(data) {
				return nil, fmt.Errorf("stack of %d values is shorter than its parts", len(data))
			}
			p.f32[in] = data[off : off+k : off+k] // drop the program's hold on the old rows
			off += k
		}
	} else {
		for _, in := range n.Inputs {
			data = append(data, p.f32[in]...)
		}
	}
	b.stacks[name] = data
	return data, nil
}

// Float32 returns a named f32 input or output buffer.
func (p *Program) Float32(name string) ([]float32, error) {
	v, ok := p.named[name]
	if !ok {
		return nil, fmt.Errorf("graph %s has no input or output %q", p.g.Name, name)
	}
	buf := p.f32[p.storage(v)]
	if buf == nil {
		return nil, fmt.Errorf("graph %s: %q is not f32", p.g.Name, name)
	}
	return buf, nil
}

// Int32 returns a named i32 input buffer.
func (p *Program) Int32(name string) ([]int32, error) {
	v, ok := p.named[name]
	if !ok || p.i32[v] == nil {
		return nil, fmt.Errorf("graph %s has no i32 input %q", p.g.Name, name)
	}
	return p.i32[v], nil
}

// Elems is the element count of a named input or output at this
// program's bindings.
func (p *Program) Elems(name string) (int, error) {
	v, ok := p.named[name]
	if !ok {
		return 0, fmt.Errorf("graph %s has no input or output %q", p.g.Name, name)
	}
	n := 1
	for _, d := range p.dims[v] {
		n *= d
	}
	return n, nil
}

// MemPlan is the arena layout the program runs in.
func (p *Program) MemPlan() *passes.MemPlan { return p.plan }

// BindFloat32 points a named f32 input at caller storage of its size. KV
// caches must be bound before the first run. A 16-bit (f16 or bf16) KV
// cache is bound the same way, to 32-bit words that hold two elements each
// (Elems/2 of them): the runtime only allocates, binds and zeroises cache
// storage, never reads it.
func (p *Program) BindFloat32(name string, buf []float32) error {
	v, ok := p.named[name]
	if !ok || p.g.Nodes[v].Op != ir.OpInput {
		return fmt.Errorf("graph %s has no f32 input %q", p.g.Name, name)
	}
	dt := p.g.Nodes[v].Type.DType
	want, _ := p.Elems(name)
	switch {
	case dt == ir.F32:
	case (dt == ir.F16 || dt == ir.BF16) && p.g.Nodes[v].Type.Rank() == 3:
		want /= 2
	default:
		return fmt.Errorf("graph %s has no f32 input %q", p.g.Name, name)
	}
	if len(buf) != want {
		return fmt.Errorf("graph %s: input %q holds %d words, got a buffer of %d", p.g.Name, name, want, len(buf))
	}
	p.f32[v] = buf
	if dt != ir.F32 {
		p.h16[v] = unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(buf))), 2*len(buf))
	}
	p.bound[v] = true
	return nil
}

// kvFormat maps a KV cache's dtype to the kernels' cache format.
func kvFormat(dt ir.DType) (kernels.KVFormat, error) {
	switch dt {
	case ir.F32:
		return kernels.KVF32, nil
	case ir.F16:
		return kernels.KVF16, nil
	case ir.BF16:
		return kernels.KVBF16, nil
	}
	return 0, fmt.Errorf("a KV cache holds f32, f16 or bf16 values, not %v", dt)
}

// kv returns the cache storage of value v (a cache input or an in-place
// update of one) in its format.
func (p *Program) kv(v ir.ValueID) kernels.KV {
	s := p.storage(v)
	f, _ := kvFormat(p.g.Nodes[s].Type.DType) // checked at compile
	if f == kernels.KVF32 {
		return kernels.KVOf(p.f32[s])
	}
	return kernels.KV16(p.h16[s], f)
}

// Run executes every instruction in order: one forward pass. A protected
// program draws its mask material at the start and wipes it at the end.
func (p *Program) Run() error {
	for _, v := range p.external {
		if p.f32[v] == nil {
			name, _ := p.g.Nodes[v].Attrs.Str("name")
			return fmt.Errorf("run %s: input %q is not bound", p.g.Name, name)
		}
	}
	if p.b.failed.Load() {
		return fmt.Errorf("run %s: %w", p.g.Name, ErrIntegrity)
	}
	if len(p.slots) > 0 || p.probes {
		if err := p.beginPass(); err != nil {
			return fmt.Errorf("run %s: %w", p.g.Name, err)
		}
		defer p.endPass()
	}
	if p.b.profiling {
		return p.runProfiled()
	}
	for i, f := range p.instrs {
		if err := f(); err != nil {
			return fmt.Errorf("run %s: %s: %w", p.g.Name, p.ops[i], err)
		}
	}
	return nil
}

func (p *Program) runProfiled() error {
	for i, f := range p.instrs {
		t0 := time.Now()
		err := f()
		p.b.prof[p.buckets[i]] += time.Since(t0)
		if err != nil {
			return fmt.Errorf("run %s: %s: %w", p.g.Name, p.ops[i], err)
		}
	}
	return nil
}

// NumInstrs is the instruction count (for inspect and tests).
func (p *Program) NumInstrs() int { return len(p.instrs) }

// Preload converts every weight m's graphs hold in bf16 or a block format
// and stacks the f32 ones that are fused (what Compile would do on first
// use, cached the same way), and with release drops from the source
// weights each converted tensor that no graph reads as f32 (a tied
// embedding table, gathered in f32, stays) as soon as every conversion
// that reads it is done: an engine that owns its weights then holds each
// matrix once, in the plan's format, and what the source keeps for one
// (a GGUF tensor's copied blocks, a sealed file's digests) is freed while
// the next converts.
// Later compiles find the conversions cached.
func (b *Backend) Preload(m *ir.Module, release bool) error {
	type graphState struct {
		p        *Program
		partOnly []bool
	}
	keep := map[string]bool{}
	converted := map[string]bool{}
	reads := map[string]map[string]bool{} // a converted tensor's pending conversions, by key
	states := make([]graphState, len(m.Graphs))
	for gi, g := range m.Graphs {
		p := &Program{g: g, dims: make([][]int, len(g.Nodes)), f32: make([][]float32, len(g.Nodes)), b: b}
		partOnly := stackPartsOnly(g)
		for i, n := range g.Nodes {
			if n.Op != ir.OpWeight && n.Op != ir.OpConcatWeights {
				continue
			}
			dims, err := bindShape(n.Type.Shape, nil)
			if err != nil {
				return fmt.Errorf("preload %s: %v: %w", g.Name, n.ID, err)
			}
			p.dims[i] = dims
			conv := wireStored(n.Type.DType) || n.Type.DType == ir.BF16
			if n.Op == ir.OpWeight {
				name, _ := n.Attrs.Str("name")
				if conv {
					converted[name] = true
				} else {
					keep[name] = true
				}
			}
			if conv && !partOnly[i] {
				key := conversionKey(g, n)
				for _, leaf := range weightLeaves(g, n) {
					if reads[leaf] == nil {
						reads[leaf] = map[string]bool{}
					}
					reads[leaf][key] = true
				}
			}
		}
		states[gi] = graphState{p, partOnly}
	}
	released := map[string]bool{}
	for gi, g := range m.Graphs {
		p, partOnly := states[gi].p, states[gi].partOnly
		for i, n := range g.Nodes {
			if n.Op != ir.OpWeight && n.Op != ir.OpConcatWeights {
				continue
			}
			quantized, half := wireStored(n.Type.DType), n.Type.DType == ir.BF16
			var err error
			switch {
			case partOnly[i]:
				// The stack holds its rows (built below, from the source).

			case quantized:
				_, err = b.quantized(p, n)
			case half:
				_, err = b.bf16Weights(p, n)
			case n.Op == ir.OpWeight:
				name, _ := n.Attrs.Str("name")
				p.f32[i], _, err = b.weights.Get(name)
			default:
				// f32 stacks are built now too, so the parts' old rows
				// are garbage before the caller returns memory to the OS.
				_, err = b.stacked(p, n)
			}
			if err != nil {
				return fmt.Errorf("preload %s: %v = %s: %w", g.Name, n.ID, n.Op, err)
			}
			if !release || partOnly[i] || !(quantized || half) {
				continue
			}
			key := conversionKey(g, n)
			for _, leaf := range weightLeaves(g, n) {
				delete(reads[leaf], key)
				if len(reads[leaf]) > 0 || !converted[leaf] || keep[leaf] || released[leaf] {
					continue
				}
				if err := b.weights.Release(leaf); err != nil {
					return fmt.Errorf("preload: %w", err)
				}
				released[leaf] = true
			}
		}
	}
	return nil
}

// conversionKey names the cached conversion node n of g is (its format
// and its weight's or stack's name).
func conversionKey(g *ir.Graph, n *ir.Node) string {
	name, _ := WeightName(g, n.ID)
	return n.Type.DType.String() + ":" + name
}

// weightLeaves lists the source tensors a weight or stack node reads.
func weightLeaves(g *ir.Graph, n *ir.Node) []string {
	if n.Op == ir.OpWeight {
		name, _ := n.Attrs.Str("name")
		return []string{name}
	}
	var out []string
	for _, in := range n.Inputs {
		out = append(out, weightLeaves(g, g.Node(in))...)
	}
	return out
}

// stackPartsOnly marks the weights of g that only concat_weights read: a
// converted stack holds their rows, so they need no resident copy.
func stackPartsOnly(g *ir.Graph) []bool {
	only := make([]bool, len(g.Nodes))
	other := make([]bool, len(g.Nodes))
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if n.Op == ir.OpConcatWeights {
				only[in] = true
			} else {
				other[in] = true
			}
		}
	}
	for _, o := range g.Outputs {
		other[o.Value] = true
	}
	for i, n := range g.Nodes {
		only[i] = only[i] && !other[i] && n.Op == ir.OpWeight
	}
	return only
}

// bindShape is a shape's sizes under the bindings of its symbolic dims.
func bindShape(sh ir.Shape, bind map[string]int) ([]int, error) {
	dims := make([]int, len(sh))
	for j, d := range sh {
		v, err := d.Bind(bind)
		if err != nil {
			return nil, err
		}
		dims[j] = v
	}
	return dims, nil
}
