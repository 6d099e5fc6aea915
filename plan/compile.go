package plan

import (
	"strconv"

	"gelo/ir"
	"gelo/models"
	"gelo/passes"
)

// Dump asks for the IR after some passes: After names passes ("trace" is
// the traced input), All dumps after every one. To receives each dump.
type Dump struct {
	After []string
	All   bool
	To    func(pass string, m *ir.Module) error
}

// Compile traces cfg and runs the pass pipeline the options select. src
// is recorded in the module's meta (the model spec, and the seed of a
// built-in variant), so two compiles of the same inputs print the same
// bytes. dump may be nil.
func Compile(src models.Source, cfg *models.Config, opt Options, dump *Dump) (*ir.Module, error) {
	if err := opt.Check(); err != nil {
		return nil, err
	}
	m, err := models.Trace(cfg, opt.Trace)
	if err != nil {
		return nil, err
	}
	if src.Spec != "" {
		m.Meta["model"] = src.Spec
	}
	if src.Spec != "" && !src.IsDir() && src.Builtin == "" {
		m.Meta["seed"] = strconv.FormatUint(src.Seed, 10)
	}
	pm := Pipeline(opt)
	if dump != nil {
		pm.DumpAll = dump.All
		pm.DumpAfter = map[string]bool{}
		for _, name := range dump.After {
			pm.DumpAfter[name] = true
		}
		pm.Dump = dump.To
	}
	if err := pm.Run(m); err != nil {
		return nil, err
	}
	return m, nil
}

// Pipeline is the pass manager the options select, for callers that run
// it on a module of their own (the pass tests).
func Pipeline(opt Options) *passes.Manager {
	return passes.Pipeline(opt.ProtectOptions, opt.FusionsOff()...)
}
