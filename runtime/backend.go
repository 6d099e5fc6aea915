// Package runtime runs compiled graphs: sessions with their KV cache,
// prefill and decode steps, greedy generation. It knows backends only
// through the small interfaces below, so it never imports one.
package runtime

import "gelo/ir"

// Executable is one graph compiled for fixed bindings of its symbolic dims.
// Named buffers are the graph's inputs and outputs; the caller fills inputs
// in place, runs, and reads outputs in place.
type Executable interface {
	// Float32 returns the buffer of a named f32 input or output.
	Float32(name string) ([]float32, error)
	// Elems is the element count of a named input or output.
	Elems(name string) (int, error)
	// Int32 returns the buffer of a named i32 input.
	Int32(name string) ([]int32, error)
	// BindFloat32 makes a named f32 input use caller-owned storage (the KV
	// cache, shared by the prefill and decode executables of a session).
	BindFloat32(name string, buf []float32) error
	// Run executes the graph once.
	Run() error
}

// Backend compiles placed graphs.
type Backend interface {
	Name() string
	Compile(g *ir.Graph, bind map[string]int) (Executable, error)
}

// Adapt wraps a backend whose Compile returns its own program type (so the
// backend package need not import runtime) as a Backend.
func Adapt[E Executable](name string, compile func(*ir.Graph, map[string]int) (E, error)) Backend {
	return adapted[E]{name, compile}
}

type adapted[E Executable] struct {
	name    string
	compile func(*ir.Graph, map[string]int) (E, error)
}

func (a adapted[E]) Name() string { return a.name }

func (a adapted[E]) Compile(g *ir.Graph, bind map[string]int) (Executable, error) {
	e, err := a.compile(g, bind)
	if err != nil {
		return nil, err
	}
	return e, nil
}
