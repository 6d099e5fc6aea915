package main

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// modelFlags are the flags every verb that needs a model shares: a
// directory in the HF layout, or a pinned variant generated in memory,
// the compile options, and the engine. They only parse: package plan does
// the work.
type modelFlags struct {
	// defaultModel is --model's default: "" means models.DefaultModel
	// (the built-in trained model); a verb about widths and speed sets a
	// synthetic variant before register.
	defaultModel string
	model        string
	seed         uint64
	maxContext   int
	workers      int
	dumpAfter    string
	dumpAll      bool
	maxMemory    string

	security     string
	offload      string
	planRows     int
	planBatch    int
	verify       int
	verifyPool   int
	traffic      *plan.Traffic // what crossed, for the last line of generate (shared by copies)
	ownWeights   bool          // one engine owns the loaded weights: f32 copies of converted ones are dropped
	noIdentity   bool          // the verb computes no model identity: open need not hash the values for one
	maskKnob     string        // a mask family set by a verb (bench's --masks): an expert knob as if --mask were given
	protectFS    *flag.FlagSet // to tell the knobs given from their defaults
	mask         string
	cadence      string
	shield       string
	sessionKey   string
	weights      string
	kvDType      string
	device       string
	backendName  string
	gomlxBackend string
	topology     string
	noFuse       string
	center       bool
}

func (mf *modelFlags) register(fs *flag.FlagSet) {
	mf.traffic = new(plan.Traffic)
	def := mf.defaultModel
	if def == "" {
		def = models.DefaultModel
	}
	fs.StringVar(&mf.model, "model", def,
		"model: a directory with config.json + safetensors, a GGUF file, the trained model built into gelo ("+strings.Join(models.BuiltinNames(), ", ")+
			": 4 layers, trained on the King James Bible, with its tokenizer), or a built-in variant with synthetic weights generated in memory ("+fmt.Sprint(models.VariantNames())+"; no tokenizer)")
	fs.Uint64Var(&mf.seed, "seed", 1, "seed of the synthetic weights of a built-in variant")
	fs.IntVar(&mf.maxContext, "max-context", 1024, "KV-cache capacity in tokens")
	fs.IntVar(&mf.workers, "workers", 0, "kernel worker goroutines (0: GOMAXPROCS); results do not depend on it")
	fs.StringVar(&mf.maxMemory, "max-memory", "", "refuse a run whose estimated memory exceeds this (e.g. 8G; default: the available memory)")
	fs.StringVar(&mf.backendName, "backend", "cpu", "cpu (TEE kernels in Go, device per --device), gomlx (mask none: the whole forward as one gomlx graph; protected: the device side on gomlx) or vulkan (--security none only: the whole step as one recorded Vulkan command buffer; --device vulkan:N picks the device)")
	fs.StringVar(&mf.gomlxBackend, "gomlx-backend", "go", "gomlx engine for --backend gomlx: go (pure Go), xla:cpu or xla:cuda (needs -tags xla and a PJRT plugin)")
	fs.StringVar(&mf.device, "device", "local", "the untrusted side: local (the cpu kernels), gomlx:go (gomlx's pure-Go backend), gomlx:xla:cpu or gomlx:xla:cuda (XLA through PJRT; needs -tags xla and a plugin), vulkan or vulkan:N (Vulkan compute; needs cgo and a driver, lavapipe on a CPU-only machine)")
}

// engineOptions are the engine flags.
func (mf *modelFlags) engineOptions() plan.EngineOptions {
	return plan.EngineOptions{Backend: mf.backendName, GomlxBackend: mf.gomlxBackend, Device: mf.device, Workers: mf.workers, Traffic: mf.traffic,
		ReleaseSource: mf.ownWeights && (mf.backendName == "" || mf.backendName == "cpu")}
}

// engine builds the engine the flags ask for m.
func (mf *modelFlags) engine(w *models.Weights, key []byte, m *ir.Module) (*plan.Engine, error) {
	e, err := plan.NewEngine(mf.engineOptions(), w, key, m)
	if errors.Is(err, plan.ErrEngine) {
		err = fmt.Errorf("%w: %v", errUsage, err)
	}
	return e, err
}

// registerProtect adds the compile flags of compile and of every verb
// that compiles on the fly.
func (mf *modelFlags) registerProtect(fs *flag.FlagSet) {
	d := plan.Knobs() // the expert knobs' defaults: the seed protocol's
	mf.protectFS = fs
	fs.StringVar(&mf.security, "security", passes.DefaultLevel, passes.LevelHelp())
	fs.StringVar(&mf.offload, "offload", "auto", "under a full-span or lwe level: auto (each linear op offloaded only where the cost model says it pays against the --device: an accelerator 50x the TEE's rate, or, for local, the TEE's own cores, where nothing pays; inspect prints why) or all")
	fs.IntVar(&mf.planRows, "plan-rows", passes.DefaultPlanRows, "prefill length n the offload decision is costed at")
	fs.IntVar(&mf.planBatch, "plan-batch", passes.DefaultPlanBatch, "decode batch B the offload decision is costed at")
	fs.IntVar(&mf.verify, "verify", passes.DefaultVerify, fmt.Sprintf("integrity probes per device matmul (Freivalds checks in the TEE; 0: off, at most %d)", passes.MaxVerify))
	fs.IntVar(&mf.verifyPool, "verify-pool", passes.DefaultProbePool, "secret probe vectors per weight the probes are drawn from (W r precomputed at load)")
	fs.StringVar(&mf.mask, "mask", d.Mask, passes.MaskFamilyHelp()+" (expert knob: makes the level custom)")
	fs.StringVar(&mf.cadence, "cadence", d.Cadence, "mask cadence: per-forward or per-offload")
	fs.StringVar(&mf.shield, "shield", fmt.Sprintf("%d,%g", d.ShieldK, d.ShieldEnergy), "shield rows K,ENERGY (K >= 8; energy x mean data row norm)")
	fs.StringVar(&mf.sessionKey, "session-key", "", "hex session key for the mask stream (default: random per run)")
	fs.StringVar(&mf.weights, "weights", "f32", "weight format of every matmul, offloaded or TEE-local (under lwe: of the TEE-local ones; the device multiplies int8): "+formatsHelp())
	fs.StringVar(&mf.kvDType, "kv-dtype", "f32", "KV cache element type of the TEE's engine: f32, f16 or bf16 (K and V rounded to nearest even on append, read widened to f32; --backend gomlx and vulkan take f32 only)")
	fs.StringVar(&mf.topology, "topology", d.Topology, "batched decode: per-sequence masks, or shared (one mask over the batch)")
	fs.BoolVar(&mf.center, "center", d.Center, "send multi-row crossings centred (mean row apart)")
	fs.StringVar(&mf.noFuse, "no-fuse", "", "fusions to switch off, comma-separated ("+strings.Join(passes.FusionNames(), ", ")+", or all)")
}

// options parses the compile flags.
func (mf *modelFlags) options() (plan.Options, error) {
	o := plan.Knobs()
	if err := mf.setKVDType(&o); err != nil {
		return o, err
	}
	var knobs []string // expert protection knobs given on the command line
	securitySet := false
	if mf.protectFS != nil {
		mf.protectFS.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "mask", "cadence", "shield", "center":
				knobs = append(knobs, "--"+f.Name)
			case "security":
				securitySet = true
			}
		})
	}
	if mf.maskKnob != "" {
		mf.mask = mf.maskKnob
		knobs = append(knobs, "--masks "+mf.maskKnob)
	}
	if len(knobs) == 0 || mf.security != passes.LevelCustom {
		if len(knobs) > 0 && securitySet {
			return o, fmt.Errorf("%w: %s set protection knobs that --security %s fixes (use --security custom, or drop them)", errUsage, strings.Join(knobs, ", "), mf.security)
		}
		if len(knobs) == 0 {
			l, ok := passes.LookupLevel(mf.security)
			if !ok {
				return o, fmt.Errorf("%w: --security %q: want %s", errUsage, mf.security, ir.OrList(passes.LevelNames()))
			}
			o.ProtectOptions = l.Options(o.ProtectOptions)
			switch mf.offload {
			case "", "auto":
			case "all":
				o.OffloadAll = true
			default:
				return o, fmt.Errorf("%w: --offload %q: want auto or all", errUsage, mf.offload)
			}
			if mf.planRows < 1 || mf.planRows > 1<<20 || mf.planBatch < 1 || mf.planBatch > 1<<16 {
				return o, fmt.Errorf("%w: --plan-rows %d / --plan-batch %d: want 1..%d and 1..%d", errUsage, mf.planRows, mf.planBatch, 1<<20, 1<<16)
			}
			o.PlanRows, o.PlanBatch = mf.planRows, mf.planBatch
			if !mf.accelerated() {
				// The local device runs on the TEE's own cores: no
				// secured offload pays (--offload all still forces it).
				o.DeviceSpeedup = 1
			}
			if mf.weights != "" {
				o.Weights = mf.weights // under lwe: the TEE-local ops' format (the device's is int8)
			}
			if mf.topology != "" && !l.FullSpan {
				o.Topology = mf.topology
			}
			if l.FullSpan && mf.topology != "" && mf.topology != passes.PerSequence && mf.topology != passes.Shared {
				return o, fmt.Errorf("%w: --topology %q: want per-sequence or shared", errUsage, mf.topology)
			}
			if l.FullSpan && mf.topologySet() && mf.topology != passes.Shared {
				return o, fmt.Errorf("%w: --security %s batches decode under the shared topology (one full-span crossing for the batch); --topology %s contradicts it", errUsage, l.Name, mf.topology)
			}
			o.NoFuse = splitList(mf.noFuse)
			o.Verify, o.VerifyPool = mf.verify, mf.verifyPool
			if err := o.Check(); err != nil {
				return o, fmt.Errorf("%w: %v", errUsage, err)
			}
			return o, nil
		}
	}
	// The expert knobs: the level is whatever they match (custom if none).
	o.Security = ""
	if mf.mask != "" {
		o.Mask, o.Cadence, o.Center = mf.mask, mf.cadence, mf.center
	}
	if mf.shield != "" {
		k, e, err := plan.ParseShield(mf.shield)
		if err != nil {
			return o, fmt.Errorf("%w: %v", errUsage, err)
		}
		o.ShieldK, o.ShieldEnergy = k, e
	}
	if mf.weights != "" {
		o.Weights = mf.weights
	}
	if mf.topology != "" {
		o.Topology = mf.topology
	}
	o.NoFuse = splitList(mf.noFuse)
	o.Verify, o.VerifyPool = mf.verify, mf.verifyPool
	if err := o.Check(); err != nil {
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	return o, nil
}

// flagSet reports whether the protection flag name was given.
func (mf *modelFlags) flagSet(name string) bool {
	set := false
	if mf.protectFS != nil {
		mf.protectFS.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	}
	return set
}

// topologySet reports whether --topology was given.
func (mf *modelFlags) topologySet() bool {
	set := false
	if mf.protectFS != nil {
		mf.protectFS.Visit(func(f *flag.Flag) { set = set || f.Name == "topology" })
	}
	return set
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
	return plan.RandomKey()
}

func (mf *modelFlags) registerDump(fs *flag.FlagSet) {
	fs.StringVar(&mf.dumpAfter, "dump-after", "", "print the IR to stderr after these passes (comma-separated; 'trace' is the traced input)")
	fs.BoolVar(&mf.dumpAll, "dump-all", false, "print the IR to stderr after every pass")
}

// open loads --model, with a progress bar for a directory. Every verb
// reads the weights as models.OpenPrivate does: what an identity hashes
// and what computes are the bytes read once, whatever happens to the file
// afterwards.
func (mf *modelFlags) open(stderr io.Writer) (*models.Model, error) {
	bar := newProgress(stderr, "load "+mf.model)
	open := models.OpenPrivate
	if mf.noIdentity {
		open = models.OpenPrivateUnhashed
	}
	m, err := open(mf.model, mf.seed, "", bar.update)
	if m != nil && (m.IsDir() || m.Builtin != "") {
		bar.done()
	}
	if m != nil && m.Notice != "" {
		fmt.Fprintln(stderr, m.Notice)
	}
	if mf.weights == formats.BF16Dot && !plan.HasBF16Dot() && (mf.backendName == "" || mf.backendName == "cpu") {
		fmt.Fprintln(stderr, "warning: this CPU has no AVX512_BF16: --weights bf16dot runs the portable bf16 dot product (the same bits), tens of times slower than --weights bf16; it is a speed mode only where the instruction is")
	}
	return m, err
}

// compile compiles src's config with the compile flags, dumping to stderr
// as asked.
func (mf *modelFlags) compile(src models.Source, cfg *models.Config, stderr io.Writer) (*ir.Module, error) {
	o, err := mf.options()
	if err != nil {
		return nil, err
	}
	return plan.Compile(src, cfg, o, &plan.Dump{After: splitList(mf.dumpAfter), All: mf.dumpAll,
		To: func(pass string, m *ir.Module) error {
			_, err := fmt.Fprintf(stderr, "// ---- IR after %s ----\n%s", pass, ir.Print(m))
			return err
		}})
}

// setKVDType sets o's KV cache dtype from --kv-dtype (left as it is when
// the flag is not given); a bad name is a usage error.
func (mf *modelFlags) setKVDType(o *plan.Options) error {
	if mf.kvDType == "" {
		return nil
	}
	dt, err := plan.ParseKVDType(mf.kvDType)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	o.Trace.KVDType = dt
	return nil
}

// session builds a session for a compiled module on the engine flags.
func (mf *modelFlags) session(m *ir.Module, w *models.Weights) (*runtime.Session, func(), error) {
	key, err := mf.key()
	if err != nil {
		return nil, nil, err
	}
	s, done, err := plan.NewSession(mf.engineOptions(), w, key, m, runtime.Options{MaxContext: mf.maxContext})
	if errors.Is(err, plan.ErrEngine) {
		err = fmt.Errorf("%w: %v", errUsage, err)
	}
	return s, done, err
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// formatsHelp lists the plan formats with what each is, from their
// records.
func formatsHelp() string {
	var parts []string
	for _, f := range formats.All() {
		if f.Plan {
			parts = append(parts, f.Name+" ("+f.Doc+")")
		}
	}
	return strings.Join(parts, ", ")
}
