package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/lower/gomlx"
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

	mask         string
	cadence      string
	shield       string
	sessionKey   string
	weights      string
	device       string
	backendName  string
	gomlxBackend string
	topology     string
	noFuse       string
	center       bool
}

func (mf *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&mf.model, "model", models.DefaultVariant,
		"model: a directory with config.json + safetensors, or a built-in variant generated in memory ("+fmt.Sprint(models.VariantNames())+")")
	fs.Uint64Var(&mf.seed, "seed", 1, "seed of the synthetic weights of a built-in variant")
	fs.IntVar(&mf.maxContext, "max-context", 1024, "KV-cache capacity in tokens")
	fs.IntVar(&mf.workers, "workers", 0, "kernel worker goroutines (0: GOMAXPROCS); results do not depend on it")
	fs.StringVar(&mf.backendName, "backend", "cpu", "cpu (TEE kernels in Go, device per --device) or gomlx (mask none: the whole forward as one gomlx graph; protected: the device side on gomlx)")
	fs.StringVar(&mf.gomlxBackend, "gomlx-backend", "go", "gomlx engine for --backend gomlx: go (pure Go), xla:cpu or xla:cuda (needs -tags xla and a PJRT plugin)")
	fs.StringVar(&mf.device, "device", "local", "the untrusted side: local (the cpu kernels), gomlx:go (gomlx's pure-Go backend), gomlx:xla:cpu or gomlx:xla:cuda (XLA through PJRT; needs -tags xla and a plugin)")
}

// engine is what runs a compiled module: the runtime backend, and the cpu
// backend behind it when there is one (it profiles; the whole-forward
// gomlx engine does not).
type engine struct {
	rt    runtime.Backend
	cpu   *cpu.Backend
	close func()
}

func (e *engine) setProfiling(on bool) {
	if e.cpu != nil {
		e.cpu.SetProfiling(on)
	}
}

func (e *engine) takeProfile() cpu.Profile {
	if e.cpu != nil {
		return e.cpu.TakeProfile()
	}
	return cpu.Profile{}
}

// engine builds what --backend, --gomlx-backend and --device ask for m:
// with --backend gomlx an unprotected module runs as one gomlx graph per
// phase, a protected one keeps its TEE side on the cpu kernels and sends
// the device side to gomlx.
func (mf *modelFlags) engine(w *models.Weights, key []byte, m *ir.Module) (*engine, error) {
	switch mf.backendName {
	case "", "cpu":
	case "gomlx":
		if m.Meta["mask"] == passes.MaskNone {
			fw, err := gomlx.NewForward(mf.gomlxBackend, w)
			if err != nil {
				return nil, fmt.Errorf("--backend gomlx: %w", err)
			}
			return &engine{rt: runtime.Adapt(fw.Name(), fw.Compile), close: func() { fw.Close() }}, nil
		}
		dev := mf.device
		mf.device = "gomlx:" + mf.gomlxBackend
		defer func() { mf.device = dev }()
	default:
		return nil, fmt.Errorf("%w: --backend %q: want cpu or gomlx", errUsage, mf.backendName)
	}
	be, done, err := mf.backend(w, key)
	if err != nil {
		return nil, err
	}
	return &engine{rt: runtime.Adapt(be.Name(), be.Compile), cpu: be, close: done}, nil
}

// backend builds the cpu backend with the device --device names. The
// returned close releases both.
func (mf *modelFlags) backend(w *models.Weights, key []byte) (*cpu.Backend, func(), error) {
	opt := cpu.Options{Workers: mf.workers, SessionKey: key}
	closeDev := func() {}
	switch {
	case mf.device == "" || mf.device == "local":
	case strings.HasPrefix(mf.device, "gomlx:"):
		d, err := gomlx.New(strings.TrimPrefix(mf.device, "gomlx:"))
		if err != nil {
			return nil, nil, fmt.Errorf("--device %s: %w", mf.device, err)
		}
		opt.Device, closeDev = d, func() { d.Close() }
	default:
		return nil, nil, fmt.Errorf("%w: --device %q: want local, gomlx:go, gomlx:xla:cpu or gomlx:xla:cuda", errUsage, mf.device)
	}
	be := cpu.New(w, opt)
	return be, func() { be.Close(); closeDev() }, nil
}

// registerProtect adds the protection flags of compile and of every verb
// that compiles on the fly.
func (mf *modelFlags) registerProtect(fs *flag.FlagSet) {
	d := passes.DefaultProtect()
	fs.StringVar(&mf.mask, "mask", d.Mask, "protection: none (insecure baseline), haar or hd3")
	fs.StringVar(&mf.cadence, "cadence", d.Cadence, "mask cadence: per-forward or per-offload")
	fs.StringVar(&mf.shield, "shield", fmt.Sprintf("%d,%g", d.ShieldK, d.ShieldEnergy), "shield rows K,ENERGY (K >= 8; energy x mean data row norm)")
	fs.StringVar(&mf.sessionKey, "session-key", "", "hex session key for the mask stream (default: random per run)")
	fs.StringVar(&mf.weights, "weights", "f32", "device weight format: f32, bf16, q8_0 or q4_0 (GGUF blocks)")
	fs.StringVar(&mf.topology, "topology", d.Topology, "batched decode: per-sequence masks, or shared (one mask over the batch)")
	fs.BoolVar(&mf.center, "center", d.Center, "send multi-row crossings centred (mean row apart)")
	fs.StringVar(&mf.noFuse, "no-fuse", "", "fusions to switch off, comma-separated ("+strings.Join(passes.FusionNames(), ", ")+", or all)")
}

// protectOptions parses the protection flags.
func (mf *modelFlags) protectOptions() (passes.ProtectOptions, error) {
	o := passes.DefaultProtect()
	if mf.mask != "" {
		o.Mask, o.Cadence = mf.mask, mf.cadence
	}
	if mf.shield != "" {
		k, e, ok := strings.Cut(mf.shield, ",")
		kv, err1 := strconv.Atoi(strings.TrimSpace(k))
		ev, err2 := strconv.ParseFloat(strings.TrimSpace(e), 64)
		if !ok || err1 != nil || err2 != nil {
			return o, fmt.Errorf("%w: --shield %q: want K,ENERGY such as 8,4.0", errUsage, mf.shield)
		}
		o.ShieldK, o.ShieldEnergy = kv, ev
	}
	if mf.weights != "" {
		o.Weights = mf.weights
	}
	if mf.topology != "" {
		o.Topology = mf.topology
	}
	if mf.mask != "" {
		o.Center = mf.center
	}
	if err := o.Check(); err != nil {
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	return o, nil
}

// fusionsOff lists the fusions --no-fuse switches off.
func (mf *modelFlags) fusionsOff() []string {
	if mf.noFuse == "all" {
		return passes.Unfused()
	}
	return splitList(mf.noFuse)
}

// key returns the session key: the flag's, or 32 fresh random bytes.
func (mf *modelFlags) key() ([]byte, error) {
	if mf.sessionKey != "" {
		k, err := hex.DecodeString(mf.sessionKey)
		if err != nil || len(k) < 16 {
			return nil, fmt.Errorf("%w: --session-key must be at least 16 bytes of hex", errUsage)
		}
		return k, nil
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return k, nil
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
		bar := newProgress(stderr, "load "+mf.model)
		w, err := models.LoadWithProgress(mf.model, bar.update)
		bar.done()
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
	po, err := mf.protectOptions()
	if err != nil {
		return nil, err
	}
	pm := passes.Pipeline(po, mf.fusionsOff()...)
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
	key, err := mf.key()
	if err != nil {
		return nil, nil, err
	}
	eng, err := mf.engine(l.weights, key, m)
	if err != nil {
		return nil, nil, err
	}
	s, err := runtime.NewSession(m, eng.rt, runtime.Options{MaxContext: mf.maxContext})
	if err != nil {
		eng.close()
		return nil, nil, err
	}
	return s, eng.close, nil
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
