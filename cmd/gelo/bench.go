package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"

	"gelo/bench"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
)

// benchSuites are what --suite takes (besides all).
var benchSuites = []string{"masks", "fusion", "weights", "replay", "batch", "security", "verify", "serve", "device", "lwe"}

// runBench parses bench's flags, loads the model, probes the machine and
// runs each suite of package bench in turn.
func runBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var mf modelFlags
	// Bench is about widths and speed: its default stays the synthetic
	// qwen3-tiny (its figures, and the suites that build a model at the
	// --model's widths, are comparable across runs and with the README's);
	// the trained model is one --model qwen3-kjv away.
	mf.defaultModel = models.DefaultVariant
	mf.register(fs)
	mf.registerProtect(fs)
	masks := fs.String("masks", "", "comma-separated mask families (none, haar, hd3) or security levels (exact, whiten, ...) to compare in one run (default: the --security level, the default level when none is named; --mask's family under the expert knobs)")
	prefillList := fs.String("prefill", "128", "comma-separated prompt lengths for TTFT")
	decodeSteps := fs.Int("decode", 16, "decode steps measured for TPOT (B = 1)")
	reps := fs.Int("reps", 1, "prefill repetitions per length (the median is reported)")
	suite := fs.String("suite", "masks", "comma-separated suites: masks (TTFT/TPOT per family, per-bucket split), fusion, weights, replay, batch, security (the levels' frontier), verify (integrity probes' cost), serve (a loopback load run of gelo serve at 1, 8 and 32 clients, --prefill tokens in, --decode out), device (local against --device, or with --backend vulkan the cpu backend against the whole-forward Vulkan engine, its default suite: TTFT, TPOT, submits, dispatches and bytes per token, the cost of one crossing), lwe (the lwe level's TEE work as a share of the TEE-local pass, on a --lwe-layers model of the --model's widths), or all")
	lweLayers := fs.Int("lwe-layers", 2, "lwe suite: layers of the model it builds at the --model's widths")
	measure := fs.Bool("measure", true, "security suite: also measure TTFT, TPOT and batched tok/s per level (slow on wide models)")
	batch := fs.Int("batch", 8, "B of the batch suite")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the suites (not the probes) to this file, for go tool pprof")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	suiteSet := false
	fs.Visit(func(f *flag.Flag) { suiteSet = suiteSet || f.Name == "suite" })
	if !suiteSet && mf.backendName == "vulkan" {
		*suite = "device" // the whole-forward engine against the cpu backend
	}
	if *lweLayers < 1 || *lweLayers > 1024 {
		return fmt.Errorf("%w: --lwe-layers %d: want 1 to 1024", errUsage, *lweLayers)
	}
	suites := splitList(*suite)
	if len(suites) == 1 && suites[0] == "all" {
		suites = []string{"masks", "fusion", "weights", "replay", "batch"}
	}
	for _, s := range suites {
		if !slices.Contains(benchSuites, s) {
			return fmt.Errorf("%w: --suite %q: want masks, fusion, weights, replay, batch, security, verify, serve, device, lwe or all", errUsage, s)
		}
	}
	if slices.Contains(suites, "device") && mf.backendName != "vulkan" && (mf.device == "" || mf.device == "local") {
		return fmt.Errorf("%w: --suite device compares the local device with --device: name one (vulkan)", errUsage)
	}
	if *batch <= 0 {
		return fmt.Errorf("%w: --batch must be positive", errUsage)
	}
	var lengths []int
	for _, f := range splitList(*prefillList) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return fmt.Errorf("%w: --prefill: %q is not a positive length", errUsage, f)
		}
		lengths = append(lengths, n)
	}
	if len(lengths) == 0 || *decodeSteps <= 0 || *reps <= 0 {
		return fmt.Errorf("%w: --prefill, --decode and --reps must be positive", errUsage)
	}
	families := splitList(*masks)
	if len(families) == 0 {
		families = []string{defaultEntry(mf)}
	}
	// The masks suite compiles each entry with the flags; the others take
	// the names alone (protectWith), so only its entries are checked here.
	var entries []bench.Entry
	var err error
	if slices.Contains(suites, "masks") {
		if entries, err = benchEntries(mf, families); err != nil {
			return err
		}
	}
	var deviceOpts plan.Options
	if slices.Contains(suites, "device") {
		if deviceOpts, err = mf.options(); err != nil {
			return err
		}
	}
	var kv plan.Options // the suites' KV cache dtype, parsed before the load
	if err := mf.setKVDType(&kv); err != nil {
		return err
	}
	mf.maxContext = max(mf.maxContext, slices.Max(lengths)+*decodeSteps+2)
	if _, cfg, err := mf.resolve(); err != nil {
		return err
	} else if costOnly := len(suites) == 1 && (suites[0] == "security" && !*measure || suites[0] == "lwe"); !costOnly {
		// (The lwe suite builds its own small model at the widths.)
		// The cost model alone builds no engine: nothing to fit in memory.
		// Only the suites that decode a batch hold B sequences at once.
		seqs := 1
		for _, s := range suites {
			if s == "batch" || s == "security" || s == "serve" {
				seqs = *batch
			}
		}
		if err := mf.preflight(cfg, nil, seqs, slices.Max(lengths), *decodeSteps); err != nil {
			return err
		}
	}
	l, err := mf.open(stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	key, err := mf.key()
	if err != nil {
		return err
	}
	env := &bench.Env{Model: l, Engine: mf.engineOptions(), Key: key, Weights: mf.weights, KVDType: kv.Trace.KVDType,
		Steps: *decodeSteps, MaxContext: mf.maxContext, Machine: bench.Probe(mf.workers), Out: stdout}
	if err := bench.Header(env); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("bench: --cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench: --cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	n := slices.Max(lengths)
	for _, suite := range suites {
		var err error
		switch suite {
		case "masks":
			err = bench.Masks(env, entries, lengths, *reps)
		case "fusion":
			err = bench.Fusion(env, families)
		case "weights":
			err = bench.Weights(env, families)
		case "replay":
			err = bench.Replay(env, families)
		case "batch":
			err = bench.Batch(env, families, *batch)
		case "security":
			err = bench.Security(env, n, *batch, *measure)
		case "verify":
			err = bench.Verify(env, n, *reps)
		case "serve":
			err = bench.Serve(env, bench.ServeClients, n, *decodeSteps)
		case "device":
			err = bench.Device(env, deviceOpts, n)
		case "lwe":
			_, err = bench.Lattice(env, *lweLayers, n, *batch, mf.verify)
		}
		if errors.Is(err, plan.ErrEngine) {
			// The flags ask for an engine this build or machine cannot make.
			err = fmt.Errorf("%w: %v", errUsage, err)
		}
		if err != nil {
			return fmt.Errorf("bench %s: %w", suite, err)
		}
	}
	return bench.Footer(env)
}

// benchEntries are the masks suite's columns: each --masks entry compiled
// as the flags say, a level name at that level, a mask family under the
// expert knobs with that mask (before, every entry silently compiled the
// --security level, so the columns compared one plan with itself). Every
// entry is checked here, before the model loads and the machine is
// probed: a bad one is a usage error at once. mf is a copy: the flags are
// left as they were.
func benchEntries(mf modelFlags, families []string) ([]bench.Entry, error) {
	var entries []bench.Entry
	for _, fam := range families {
		c := mf
		if _, ok := passes.LookupLevel(fam); ok {
			c.security, c.maskKnob = fam, ""
		} else {
			c.maskKnob = fam
		}
		o, err := c.options()
		if err != nil {
			return nil, err
		}
		entries = append(entries, bench.Entry{Name: fam, Options: o})
	}
	return entries, nil
}

// defaultEntry is the masks suite's one column when --masks is not given:
// the plan the other flags name, the --security level (the default level
// when none is named), or --mask's family where the expert knobs are in
// use (--mask given, or --security custom).
func defaultEntry(mf modelFlags) string {
	maskGiven := false
	if mf.protectFS != nil {
		mf.protectFS.Visit(func(f *flag.Flag) { maskGiven = maskGiven || f.Name == "mask" })
	}
	if maskGiven || mf.security == passes.LevelCustom {
		return mf.mask
	}
	return mf.security
}
