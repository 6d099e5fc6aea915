// Package cpu is gelo's pure-Go backend: it lowers a placed graph to a flat
// list of kernel calls over preallocated buffers. Both sides of the trust
// boundary run here; the device side is whatever the runtime's Device
// wraps, and this backend is also the reference the others are held to.
package cpu

import (
	"fmt"
	"sync"

	"gelo/ir"
	"gelo/lower/cpu/kernels"
	"gelo/models"
)

// Backend compiles graphs against one set of resident weights.
type Backend struct {
	weights *models.Weights
	ctx     *kernels.Ctx

	mu    sync.Mutex
	ropes map[ropeKey]*kernels.Rope
}

type ropeKey struct {
	hd, maxPos int
	theta      float64
}

// New returns a backend over w using workers goroutines (<= 0: GOMAXPROCS).
// Results do not depend on the worker count.
func New(w *models.Weights, workers int) *Backend {
	return &Backend{weights: w, ctx: kernels.NewCtx(workers), ropes: map[ropeKey]*kernels.Rope{}}
}

// Name identifies the backend in plans and reports.
func (b *Backend) Name() string { return "cpu" }

// Close stops the worker pool.
func (b *Backend) Close() { b.ctx.Close() }

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
	g      *ir.Graph
	f32    [][]float32
	i32    [][]int32
	dims   [][]int
	instrs []func() error
	ops    []string
	named  map[string]ir.ValueID
	bound  map[ir.ValueID]bool
}

// Compile lowers g with its symbolic dims bound.
func (b *Backend) Compile(g *ir.Graph, bind map[string]int) (*Program, error) {
	p := &Program{
		g: g, f32: make([][]float32, len(g.Nodes)), i32: make([][]int32, len(g.Nodes)),
		dims: make([][]int, len(g.Nodes)), named: map[string]ir.ValueID{}, bound: map[ir.ValueID]bool{},
	}
	for _, param := range g.Params {
		if v, ok := bind[param]; !ok || v <= 0 {
			return nil, fmt.Errorf("compile %s: dim %s must be bound to a positive size", g.Name, param)
		}
	}
	for i, n := range g.Nodes {
		dims := make([]int, len(n.Type.Shape))
		for j, d := range n.Type.Shape {
			v, err := d.Bind(bind)
			if err != nil {
				return nil, fmt.Errorf("compile %s: %v = %s: %w", g.Name, n.ID, n.Op, err)
			}
			dims[j] = v
		}
		p.dims[i] = dims
		if n.Op == "input" {
			name, _ := n.Attrs.Str("name")
			p.named[name] = n.ID
		}
	}
	protected := map[ir.ValueID]bool{}
	for _, o := range g.Outputs {
		if _, dup := p.named[o.Name]; !dup {
			p.named[o.Name] = o.Value
		}
		protected[o.Value] = true
	}
	lastUse := make([]int, len(g.Nodes))
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			lastUse[in] = i
		}
	}
	free := map[int][][]float32{}
	take := func(size int) []float32 {
		if l := free[size]; len(l) > 0 {
			buf := l[len(l)-1]
			free[size] = l[:len(l)-1]
			return buf
		}
		return make([]float32, size)
	}
	owned := make([]bool, len(g.Nodes))
	for i, n := range g.Nodes {
		size := 1
		for _, d := range p.dims[i] {
			size *= d
		}
		switch {
		case n.Op == "weight":
			name, _ := n.Attrs.Str("name")
			data, shape, err := b.weights.Get(name)
			if err != nil {
				return nil, fmt.Errorf("compile %s: %v = weight %q: %w", g.Name, n.ID, name, err)
			}
			if !sameShape(shape, p.dims[i]) {
				return nil, fmt.Errorf("compile %s: weight %q has shape %v, graph wants %v", g.Name, name, shape, p.dims[i])
			}
			p.f32[i] = data
		case n.Op == "input" && n.Type.DType == ir.I32:
			p.i32[i] = make([]int32, size)
		case n.Op == "input":
			p.f32[i] = make([]float32, size)
		case n.Op == "kv_append":
			// The cache is updated in place: the output is the input's storage.
		default:
			p.f32[i] = take(size)
			owned[i] = !protected[n.ID]
		}
		if n.Op != "weight" && n.Op != "input" {
			instr, err := b.lower(p, n)
			if err != nil {
				return nil, fmt.Errorf("compile %s: %v = %s: %w", g.Name, n.ID, n.Op, err)
			}
			p.instrs = append(p.instrs, instr)
			p.ops = append(p.ops, n.Op)
		}
		for _, in := range n.Inputs {
			if lastUse[in] == i && owned[in] {
				free[len(p.f32[in])] = append(free[len(p.f32[in])], p.f32[in])
				owned[in] = false
			}
		}
	}
	return p, nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// storage follows kv_append chains back to the cache input they update.
func (p *Program) storage(v ir.ValueID) ir.ValueID {
	for p.g.Nodes[v].Op == "kv_append" {
		v = p.g.Nodes[v].Inputs[0]
	}
	return v
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

// BindFloat32 points a named f32 input at caller storage of the same size.
func (p *Program) BindFloat32(name string, buf []float32) error {
	v, ok := p.named[name]
	if !ok || p.g.Nodes[v].Op != "input" || p.f32[v] == nil {
		return fmt.Errorf("graph %s has no f32 input %q", p.g.Name, name)
	}
	if len(buf) != len(p.f32[v]) {
		return fmt.Errorf("graph %s: input %q holds %d values, got a buffer of %d", p.g.Name, name, len(p.f32[v]), len(buf))
	}
	p.f32[v] = buf
	p.bound[v] = true
	return nil
}

// Run executes every instruction in order.
func (p *Program) Run() error {
	for i, f := range p.instrs {
		if err := f(); err != nil {
			return fmt.Errorf("run %s: %s: %w", p.g.Name, p.ops[i], err)
		}
	}
	return nil
}

// NumInstrs is the instruction count (for inspect and tests).
func (p *Program) NumInstrs() int { return len(p.instrs) }
