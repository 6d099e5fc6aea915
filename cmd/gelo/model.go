package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

// modelFlags are the flags every verb that needs a model shares: a
// directory in the HF layout, or a pinned variant generated in memory.
type modelFlags struct {
	model      string
	seed       uint64
	maxContext int
	workers    int
	dumpAfter  string
	dumpAll    bool
}

func (mf *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&mf.model, "model", models.DefaultVariant,
		"model: a directory with config.json + safetensors, or a built-in variant generated in memory ("+fmt.Sprint(models.VariantNames())+")")
	fs.Uint64Var(&mf.seed, "seed", 1, "seed of the synthetic weights of a built-in variant")
	fs.IntVar(&mf.maxContext, "max-context", 1024, "KV-cache capacity in tokens")
	fs.IntVar(&mf.workers, "workers", 0, "kernel worker goroutines (0: GOMAXPROCS); results do not depend on it")
}

func (mf *modelFlags) registerDump(fs *flag.FlagSet) {
	fs.StringVar(&mf.dumpAfter, "dump-after", "", "print the IR to stderr after these passes (comma-separated; 'trace' is the traced input)")
	fs.BoolVar(&mf.dumpAll, "dump-all", false, "print the IR to stderr after every pass")
}

// loaded is a model ready to compile and run.
type loaded struct {
	cfg     *models.Config
	weights *models.Weights
	source  string
}

func (mf *modelFlags) load(stderr io.Writer) (*loaded, error) {
	if st, err := os.Stat(mf.model); err == nil && st.IsDir() {
		w, err := models.Load(mf.model)
		if err != nil {
			return nil, err
		}
		return &loaded{cfg: w.Config, weights: w, source: mf.model}, nil
	}
	cfg, err := models.Variant(mf.model)
	if err != nil {
		return nil, fmt.Errorf("--model %s: not a directory, and %w", mf.model, err)
	}
	w, err := models.SynthesizeAs(cfg, mf.seed, "bf16")
	if err != nil {
		return nil, err
	}
	return &loaded{cfg: cfg, weights: w, source: mf.model}, nil
}

// compile traces the config and runs the pass pipeline, dumping as asked.
func (mf *modelFlags) compile(cfg *models.Config, stderr io.Writer) (*ir.Module, error) {
	m, err := models.Trace(cfg, models.TraceOptions{})
	if err != nil {
		return nil, err
	}
	m.Meta["model"] = mf.model
	if _, err := os.Stat(mf.model); err != nil {
		m.Meta["seed"] = strconv.FormatUint(mf.seed, 10)
	}
	pm := passes.Default()
	pm.DumpAll = mf.dumpAll
	pm.DumpAfter = map[string]bool{}
	for _, name := range splitList(mf.dumpAfter) {
		pm.DumpAfter[name] = true
	}
	pm.Dump = func(pass string, m *ir.Module) error {
		_, err := fmt.Fprintf(stderr, "// ---- IR after %s ----\n%s", pass, ir.Print(m))
		return err
	}
	if err := pm.Run(m); err != nil {
		return nil, err
	}
	return m, nil
}

// session builds a cpu-backed session for a compiled module.
func (mf *modelFlags) session(m *ir.Module, l *loaded) (*runtime.Session, func(), error) {
	be := cpu.New(l.weights, mf.workers)
	s, err := runtime.NewSession(m, runtime.Adapt(be.Name(), be.Compile), runtime.Options{MaxContext: mf.maxContext})
	if err != nil {
		be.Close()
		return nil, nil, err
	}
	return s, be.Close, nil
}

func splitList(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
