// Package bench is gelo's benchmark harness: the suites `gelo bench`
// runs (masks, fusion, weights, replay, batch, security, verify, serve,
// device), each a function over an Env of plain data, so that other tools
// and tests can take the same measurements the CLI prints. A suite writes
// its table to Env.Out and returns an error that names what failed; the
// figures are wall-clock medians on this machine, printed as ratios within
// one run where they compare two things.
//
// Engines are built with plan.NewEngine from Env.Engine: an engine the
// options cannot build is an error that wraps plan.ErrEngine, which a
// command line reports as a usage error.
package bench

import (
	"io"
	"runtime/debug"
	"time"

	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// Env is what every suite shares: the model, how its engines are built,
// the session key and the machine's measured figures.
type Env struct {
	// Model is the loaded model; its Config shapes every plan, its
	// Weights feed every engine.
	Model *models.Model
	// Engine are the options every suite's engines are built with (the
	// device suite changes Device and Backend per run, the security suite
	// counts crossings with its own Traffic).
	Engine plan.EngineOptions
	// Key is the session key of the mask stream.
	Key []byte
	// Weights is the weight format of the plans a suite compiles where
	// the suite names none (the weights suite names each); "" is f32.
	Weights string
	// KVDType is the KV cache element type of the suites' plans (the
	// zero value is f32).
	KVDType ir.DType
	// Steps is the number of decode steps each TPOT is the median of.
	Steps int
	// MaxContext is every session's KV capacity in tokens.
	MaxContext int
	// Machine is what Probe measured (the weights suite's bound reads
	// its bandwidth, the masks suite its peaks).
	Machine Machine
	// Out receives the tables.
	Out io.Writer

	rss int64 // resident bytes at the end of the last B = 1 decodeTPOT (0: unknown)
}

// module compiles a suite's plan: po (its weight format, where the suite
// sets none, Env.Weights) and Env.KVDType's cache, so that every suite
// measures the weights and cache the command line names.
func (e *Env) module(po passes.ProtectOptions, noFuse []string) (*ir.Module, error) {
	o := plan.Options{ProtectOptions: po, NoFuse: noFuse}
	if o.Weights == "" {
		o.Weights = e.Weights
	}
	o.Trace.KVDType = e.KVDType
	return plan.Compile(models.Source{}, e.Model.Config, o, nil)
}

// engine builds the engine Env.Engine asks for m.
func (e *Env) engine(m *ir.Module) (*plan.Engine, error) {
	return plan.NewEngine(e.Engine, e.Model.Weights, e.Key, m)
}

// decodeTPOT measures the median decode step of a B-sequence batch after
// a short prompt per sequence (B = 1 uses a Session; eager lowers every
// step anew).
func (e *Env) decodeTPOT(m *ir.Module, b int, eager bool) (time.Duration, error) {
	eng, err := e.engine(m)
	if err != nil {
		return 0, err
	}
	defer eng.Close()
	backend := eng.Runtime
	opt := runtime.Options{MaxContext: e.MaxContext, Eager: eager}
	prompt := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	times := make([]time.Duration, e.Steps)
	if b == 1 {
		s, err := runtime.NewSession(m, backend, opt)
		if err != nil {
			return 0, err
		}
		if _, err := s.Prefill(prompt); err != nil {
			return 0, err
		}
		if _, err := s.Decode(3); err != nil { // capture
			return 0, err
		}
		for i := range times {
			t0 := time.Now()
			if _, err := s.Decode(3); err != nil {
				return 0, err
			}
			times[i] = time.Since(t0)
		}
		debug.FreeOSMemory() // earlier engines' garbage leaves the resident set
		e.rss = ResidentBytes()
		return median(times), nil
	}
	bt, err := runtime.NewBatch(m, backend, b, opt)
	if err != nil {
		return 0, err
	}
	toks := make([]int32, b)
	for i := 0; i < b; i++ {
		if _, err := bt.Prefill(i, prompt); err != nil {
			return 0, err
		}
		toks[i] = 3
	}
	if _, err := bt.Decode(toks); err != nil {
		return 0, err
	}
	for i := range times {
		t0 := time.Now()
		if _, err := bt.Decode(toks); err != nil {
			return 0, err
		}
		times[i] = time.Since(t0)
	}
	return median(times), nil
}

// prefillTime is the median of three prefills of n tokens after a warm-up
// prefill.
func (e *Env) prefillTime(m *ir.Module, n int) (time.Duration, error) {
	eng, err := e.engine(m)
	if err != nil {
		return 0, err
	}
	defer eng.Close()
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = int32(1 + i%(e.Model.Config.VocabSize-1))
	}
	s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: e.MaxContext})
	if err != nil {
		return 0, err
	}
	if _, err := s.Prefill(prompt); err != nil { // warm-up: weights paged in, buffers sized
		return 0, err
	}
	times := make([]time.Duration, 3)
	for i := range times {
		s.Reset()
		t0 := time.Now()
		if _, err := s.Prefill(prompt); err != nil {
			return 0, err
		}
		times[i] = time.Since(t0)
	}
	return median(times), nil
}

// protectWith is the protection an entry of --masks names: a level's
// knobs, or the default knobs with that mask family.
func protectWith(mask string) passes.ProtectOptions {
	if l, ok := passes.LookupLevel(mask); ok {
		return l.Options(passes.DefaultProtect())
	}
	po := passes.DefaultProtect()
	po.Mask = mask
	return po
}
