package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"time"

	"golang.org/x/term"

	"gelo/formats"
	"gelo/lower/cpu"
	"gelo/lower/cpu/cpuid"
	"gelo/lower/cpu/kernels"
	"gelo/lower/cpu/mask"
	"gelo/lower/cpu/quant"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
)

func runSynth(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	variant := fs.String("variant", models.DefaultVariant, "pinned variant whose shapes to use "+fmt.Sprint(models.VariantNames()))
	seed := fs.Uint64("seed", 1, "seed of the weights (same seed, same bytes)")
	out := fs.String("out", "", "output directory (required)")
	dtype := fs.String("dtype", "bf16", "weight dtype in the file: bf16, f16 or f32")
	layers := fs.Int("layers", 0, "override num_hidden_layers (0: the variant's)")
	vocab := fs.Int("vocab", 0, "override vocab_size (0: the variant's)")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	cfg, err := models.Variant(*variant)
	if err != nil {
		return fmt.Errorf("%w: --variant: %v", errUsage, err)
	}
	if *layers < 0 || *vocab < 0 {
		return fmt.Errorf("%w: --layers and --vocab must not be negative", errUsage)
	}
	if *layers > 0 {
		cfg.NumHiddenLayers = *layers
	}
	if *vocab > 0 {
		cfg.VocabSize = *vocab
		cfg.BOSTokenID = min(cfg.BOSTokenID, *vocab-1)
		for i, id := range cfg.EOSTokenIDs {
			cfg.EOSTokenIDs[i] = min(id, *vocab-1)
		}
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: --layers/--vocab: %v", errUsage, err)
	}
	bar := newProgress(stderr, "synth "+*variant)
	start := time.Now()
	if err := models.WriteSynthetic(*out, cfg, *seed, *dtype, bar.update); err != nil {
		return err
	}
	bar.done()
	fmt.Fprintf(stdout, "wrote %s: %s, %d params, %s weights, seed %d, %v\n", *out, *variant, cfg.ParamCount(), *dtype, *seed,
		time.Since(start).Round(time.Millisecond))
	return nil
}

// progress draws a one-line bar on stderr when it is a terminal; otherwise
// it stays silent so logs and pipes get no control characters.
type progress struct {
	w     io.Writer
	label string
	on    bool
	last  time.Time
}

func newProgress(w io.Writer, label string) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, label: label, on: ok && term.IsTerminal(int(f.Fd()))}
}

func (p *progress) update(done, total int64) {
	if !p.on || total <= 0 || (time.Since(p.last) < 100*time.Millisecond && done < total) {
		return
	}
	p.last = time.Now()
	const width = 30
	fill := int(done * width / total)
	fmt.Fprintf(p.w, "\r%s [%-*s] %3d%%", p.label, width, string(repeat('#', fill)), done*100/total)
}

func (p *progress) done() {
	if p.on {
		fmt.Fprintln(p.w)
	}
}

func repeat(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerProtect(fs)
	masks := fs.String("masks", "", "comma-separated mask families (none, haar, hd3) or security levels (exact, whiten, ...) to compare in one run (default: --mask)")
	prefillList := fs.String("prefill", "128", "comma-separated prompt lengths for TTFT")
	decodeSteps := fs.Int("decode", 16, "decode steps measured for TPOT (B = 1)")
	reps := fs.Int("reps", 1, "prefill repetitions per length (the median is reported)")
	suite := fs.String("suite", "masks", "comma-separated suites: masks (TTFT/TPOT per family, per-bucket split), fusion, weights, replay, batch, security (the levels' frontier), verify (integrity probes' cost), serve (a loopback load run of gelo serve at 1, 8 and 32 clients, --prefill tokens in, --decode out), device (local against --device, or with --backend vulkan the cpu backend against the whole-forward Vulkan engine, its default suite: TTFT, TPOT, submits, dispatches and bytes per token, the cost of one crossing), or all")
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
	suites := splitList(*suite)
	if len(suites) == 1 && suites[0] == "all" {
		suites = []string{"masks", "fusion", "weights", "replay", "batch"}
	}
	for _, s := range suites {
		if !slices.Contains([]string{"masks", "fusion", "weights", "replay", "batch", "security", "verify", "serve", "device"}, s) {
			return fmt.Errorf("%w: --suite %q: want masks, fusion, weights, replay, batch, security, verify, serve, device or all", errUsage, s)
		}
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
		families = []string{mf.mask}
	}
	if err := mf.checkEntries(families); err != nil {
		return err
	}
	mf.maxContext = max(mf.maxContext, slices.Max(lengths)+*decodeSteps+2)
	if _, cfg, err := mf.resolve(); err != nil {
		return err
	} else if costOnly := len(suites) == 1 && suites[0] == "security" && !*measure; !costOnly {
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
	probe := kernels.NewCtx(mf.workers)
	samples := kernels.ProbeBandwidth(probe, []int{256 << 20, 512 << 20}, 15)
	bw := kernels.BandwidthBound(samples)
	peak := kernels.MeasurePeakGFLOPS(probe)
	dotPeak := kernels.MeasurePeakBF16DotGFLOPS(probe)
	workers := probe.Workers()
	probe.Close()
	debug.FreeOSMemory() // the probe's buffers leave the resident set

	cfg := l.Config
	fmt.Fprintf(stdout, "model      %s (%s, %d layers, hidden %d, intermediate %d, vocab %d)\n", l.Spec, cfg.ModelType,
		cfg.NumHiddenLayers, cfg.HiddenSize, cfg.IntermediateSize, cfg.VocabSize)
	fmt.Fprintf(stdout, "machine    %d workers; read bandwidth %.1f GB/s (the best pass of the probe below), FMA peak %.1f GFLOP/s (measured)\n", workers, bw, peak)
	if dotPeak > 0 {
		fmt.Fprintf(stdout, "  bf16 dot product peak %.1f GFLOP/s (measured; VDPBF16PS, --weights bf16dot's GEMMs), %.2fx the FMA peak\n", dotPeak, dotPeak/peak)
	}
	for _, x := range samples {
		fmt.Fprintf(stdout, "  bandwidth probe %-10s %d worker(s): best %5.1f GB/s, median %5.1f GB/s (%d passes)\n",
			passes.HumanBytes(int64(x.Bytes)), x.Workers, x.Best, x.Median, x.Passes)
	}
	pf := "the hints tuned on the AMD EPYC kinds"
	if cpuid.L2Prefetch {
		pf = "into L2 (T1), as measured on the Intel Xeon kind"
	}
	pf += ", chosen " + cpuid.PrefetchChoice
	gemm := "the VNNI or AVX2 kernels (no AMX tiles here)"
	if quant.HasAMX() {
		gemm = "AMX tiles (the OS granted them), the same bits as VNNI"
	}
	fmt.Fprintf(stdout, "cpu        vendor %q; the streaming kernels prefetch with %s (same bits either way); q8_0/q4_0/q4_k GEMMs (16+ rows) on %s\n", cpuid.Vendor, pf, gemm)
	switch mf.backendName {
	case "gomlx":
		fmt.Fprintf(stdout, "engine     --backend gomlx (gomlx engine %s), --device %s; an unprotected plan runs as one gomlx graph and has no per-bucket split\n", mf.gomlxBackend, mf.device)
	case "vulkan":
		fmt.Fprintf(stdout, "engine     --backend vulkan, --device %s; an unprotected plan runs as one Vulkan command buffer per step and has no per-bucket split\n", mf.device)
	default:
		fmt.Fprintf(stdout, "engine     --backend %s, --device %s, --kv-dtype %s\n", mf.backendName, mf.device, cmp.Or(mf.kvDType, "f32"))
	}
	format := cmp.Or(mf.weights, formats.F32)
	bytesPerTok, err := weightBytes(cfg, format)
	if err != nil {
		return err
	}
	bound := bw * 1e9 / float64(bytesPerTok)
	fmt.Fprintf(stdout, "decode bound (B=1, plain) %.2f tok/s = %.1f GB/s / %s per token (%s device weights)\n\n",
		bound, bw, passes.HumanBytes(bytesPerTok), format)

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
	env := &benchEnv{mf: &mf, l: l, key: key, workers: mf.workers, bw: bw, steps: *decodeSteps, maxCtx: mf.maxContext, out: stdout}
	for _, suite := range suites {
		var err error
		switch suite {
		case "masks":
			err = benchMasks(mf, l, key, cfg, families, lengths, *reps, *decodeSteps, peak, bound, stdout, stderr)
		case "fusion":
			err = env.benchFusion(families)
		case "weights":
			err = env.benchWeights(families)
		case "replay":
			err = env.benchReplay(families)
		case "batch":
			err = env.benchBatch(families, *batch)
		case "security":
			err = env.benchSecurity(slices.Max(lengths), *batch, *measure)
		case "verify":
			err = env.benchVerify(slices.Max(lengths), *reps)
		case "serve":
			err = env.benchServe(serveClients, slices.Max(lengths), *decodeSteps)
		case "device":
			err = env.benchDevice(slices.Max(lengths), stderr)
		}
		if err != nil {
			return fmt.Errorf("bench %s: %w", suite, err)
		}
	}
	fmt.Fprintf(stdout, "\npeak RSS %s (VmHWM of the whole run: every engine built, each holding its plan's weights, the f32 tensors an f32 plan made resident in the shared source, the bandwidth probe's buffers; plan weights %s a token)\n", humanRSS(peakResidentBytes()), passes.HumanBytes(bytesPerTok))
	return nil
}

// benchMasks: TTFT and TPOT per mask family, with the per-bucket split.
func benchMasks(mf modelFlags, l *models.Model, key []byte, cfg *models.Config, families []string, lengths []int,
	reps, decodeSteps int, peak, bound float64, stdout, stderr io.Writer) error {
	maxN := slices.Max(lengths)
	type result struct {
		family string
		ttft   []time.Duration
		tpot   time.Duration
		prefBk cpu.Profile // per-bucket time of the longest prefill
		decBk  cpu.Profile // per-bucket time per decode step
		devGF  float64     // device GFLOP/s in decode
		devGFp float64     // device GFLOP/s in the longest prefill
		// the TEE matmuls' weights read bare after each decode step
		// (cpu.Backend.ReadMatVecWeights): bytes and median time
		readBytes int
		read      time.Duration
	}
	var results []result
	security := mf.security
	for _, fam := range families {
		// A level name runs that level; a mask family runs the expert
		// knobs with that mask (before, every entry silently compiled the
		// --security level, so the columns compared one plan with itself).
		if _, ok := passes.LookupLevel(fam); ok {
			mf.security, mf.maskKnob = fam, ""
		} else {
			mf.security, mf.maskKnob = security, fam
		}
		o, err := mf.options()
		if err != nil {
			return err
		}
		po := o.ProtectOptions
		m, err := mf.compile(l.Source, cfg, stderr)
		if err != nil {
			return err
		}
		eng, err := mf.engine(l.Weights, key, m)
		if err != nil {
			return err
		}
		done := eng.Close
		s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: mf.maxContext})
		if err != nil {
			done()
			return err
		}
		r := result{family: fam}
		for _, n := range lengths {
			prompt := make([]int32, n)
			for i := range prompt {
				prompt[i] = int32((i*7919 + 13) % cfg.VocabSize)
			}
			var times []time.Duration
			for rep := 0; rep <= reps; rep++ { // the first run compiles and warms up
				s.Reset()
				eng.SetProfiling(rep > 0 && n == maxN)
				t0 := time.Now()
				if _, err := s.Prefill(prompt); err != nil {
					done()
					return err
				}
				if rep > 0 {
					times = append(times, time.Since(t0))
				}
			}
			eng.SetProfiling(false)
			if n == maxN {
				r.prefBk = scaleProfile(eng.TakeProfile(), reps)
				r.devGFp = gflops(deviceFlops(cfg, po, n, 1), r.prefBk[cpu.BucketDevice])
			}
			r.ttft = append(r.ttft, median(times))
		}
		tok := int32(1)
		if _, err := s.Decode(tok); err != nil { // warm-up step
			done()
			return err
		}
		steps := make([]time.Duration, decodeSteps)
		var reads []time.Duration
		eng.SetProfiling(true)
		for i := range steps {
			t0 := time.Now()
			logits, err := s.Decode(tok)
			if err != nil {
				done()
				return err
			}
			steps[i] = time.Since(t0)
			tok = int32(runtime.Argmax(logits))
			// The same weight bytes read bare right after: a bound taken
			// in the step's own bandwidth phase. Its last buffer is the
			// LM head's, as the step's, so the next step finds the cache
			// as a step leaves it.
			if eng.CPU != nil {
				if n, d := eng.CPU.ReadMatVecWeights(models.PhaseDecode); n > 0 {
					r.readBytes, reads = n, append(reads, d)
				}
			}
		}
		eng.SetProfiling(false)
		r.decBk = scaleProfile(eng.TakeProfile(), decodeSteps)
		r.tpot = median(steps)
		if len(reads) > 0 {
			r.read = median(reads)
		}
		r.devGF = gflops(deviceFlops(cfg, po, 1, 1), r.decBk[cpu.BucketDevice])
		done()
		results = append(results, r)
	}

	fmt.Fprintf(stdout, "%-6s", "mask")
	for _, n := range lengths {
		fmt.Fprintf(stdout, " %14s", fmt.Sprintf("TTFT n=%d", n))
	}
	fmt.Fprintf(stdout, " %12s %9s %8s\n", "TPOT (B=1)", "tok/s", "vs none")
	var noneTPOT time.Duration
	for _, r := range results {
		if r.family == passes.MaskNone {
			noneTPOT = r.tpot
		}
	}
	for _, r := range results {
		fmt.Fprintf(stdout, "%-6s", r.family)
		for _, d := range r.ttft {
			fmt.Fprintf(stdout, " %14s", short(d))
		}
		rel := "-"
		if noneTPOT > 0 {
			rel = fmt.Sprintf("%+.0f%%", 100*(r.tpot.Seconds()/noneTPOT.Seconds()-1))
		}
		fmt.Fprintf(stdout, " %12s %9.2f %8s\n", short(r.tpot), 1/r.tpot.Seconds(), rel)
	}
	if slices.ContainsFunc(results, func(r result) bool { return r.readBytes > 0 }) {
		fmt.Fprintf(stdout, "\ndecode against a bare read of its weights (the TEE matmuls' weight bytes read with no arithmetic and no wait between matrices, after each step; medians):\n")
		fmt.Fprintf(stdout, "%-6s %10s %10s %8s %14s %17s\n", "mask", "bytes", "read", "GB/s", "step (of read)", "matmuls (of read)")
		for _, r := range results {
			if r.readBytes == 0 {
				continue
			}
			mm := "-"
			if d := r.decBk[cpu.BucketLocal]; d > 0 {
				mm = fmt.Sprintf("%.0f %%", 100*r.read.Seconds()/d.Seconds())
			}
			fmt.Fprintf(stdout, "%-6s %10s %10s %8.1f %14s %17s\n", r.family, passes.HumanBytes(int64(r.readBytes)), short(r.read),
				float64(r.readBytes)/r.read.Seconds()/1e9, fmt.Sprintf("%.0f %%", 100*r.read.Seconds()/r.tpot.Seconds()), mm)
		}
	}
	for _, phase := range []string{"decode step (B=1)", fmt.Sprintf("prefill n=%d", maxN)} {
		fmt.Fprintf(stdout, "\nper-bucket split, %s:\n%-20s", phase, "bucket")
		for _, r := range results {
			fmt.Fprintf(stdout, " %18s", r.family)
		}
		fmt.Fprintln(stdout)
		for b := cpu.Bucket(0); b < cpu.NumBuckets; b++ {
			fmt.Fprintf(stdout, "%-20s", b)
			for _, r := range results {
				p := r.decBk
				if phase != "decode step (B=1)" {
					p = r.prefBk
				}
				if p.Total() == 0 {
					fmt.Fprintf(stdout, " %10s %6s", "-", "")
					continue
				}
				fmt.Fprintf(stdout, " %10s %5.1f%%", short(p[b]), 100*p[b].Seconds()/p.Total().Seconds())
			}
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "%-20s", "device GFLOP/s")
		for _, r := range results {
			gf := r.devGF
			if phase != "decode step (B=1)" {
				gf = r.devGFp
			}
			fmt.Fprintf(stdout, " %11.1f %5.0f%%", gf, 100*gf/peak)
		}
		fmt.Fprintf(stdout, "  (of the %.0f GFLOP/s f32 FMA peak)\n", peak)
		if phase == "decode step (B=1)" {
			// The weights a step streams over the time its TEE-local
			// matmuls took: how near the bound the kernels run in place.
			bytesPerTok, _ := weightBytes(cfg, cmp.Or(mf.weights, formats.F32)) // checked by runBench
			bw := bound * float64(bytesPerTok) / 1e9
			fmt.Fprintf(stdout, "%-20s", "TEE matmul GB/s")
			for _, r := range results {
				if d := r.decBk[cpu.BucketLocal]; d > 0 {
					gbs := float64(bytesPerTok) / d.Seconds() / 1e9
					fmt.Fprintf(stdout, " %11.1f %5.0f%%", gbs, 100*gbs/bw)
				} else {
					fmt.Fprintf(stdout, " %11s %6s", "-", "")
				}
			}
			fmt.Fprintf(stdout, "  (the plan's weight bytes per step over the TEE matmuls' time; of the %.1f GB/s bound)\n", bw)
		}
	}
	for _, r := range results {
		if r.family == passes.MaskNone {
			fmt.Fprintf(stdout, "\nplain decode reaches %.0f %% of the bandwidth bound (%.2f of %.2f tok/s)\n",
				100/r.tpot.Seconds()/bound, 1/r.tpot.Seconds(), bound)
		}
	}
	return nil
}

// short prints a duration with three significant digits (1.23ms, 12.3ms,
// 123ms).
func short(d time.Duration) string {
	for _, unit := range []time.Duration{time.Second, time.Millisecond, time.Microsecond} {
		if d >= unit {
			r := unit / 100
			for lim := 10 * unit; d >= lim && r < unit; lim *= 10 {
				r *= 10
			}
			return d.Round(r).String()
		}
	}
	return d.String()
}

// gflops is flops / time, or 0 when no time was profiled (the
// whole-forward gomlx engine has no per-bucket split).
func gflops(flops float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return flops / d.Seconds() / 1e9
}

func scaleProfile(p cpu.Profile, n int) cpu.Profile {
	for i := range p {
		p[i] /= time.Duration(n)
	}
	return p
}

// deviceFlops is the work the device does in one pass over rows data
// rows (headRows reach the LM head): every crossing carries the shielded
// row count the protection gives.
func deviceFlops(cfg *models.Config, po passes.ProtectOptions, rows, headRows int) float64 {
	sent := func(n int) float64 {
		if po.Mask == passes.MaskNone {
			return float64(n)
		}
		// Prefill centres in the TEE (no extra row); decode at B = 1 is
		// one row: either way the data rows are n.
		data := n
		k, err := mask.ShieldRows(po.Mask, data, po.ShieldK)
		if err != nil {
			return float64(n)
		}
		return float64(data + k)
	}
	var layer, head float64
	for _, t := range cfg.TensorSpecs() {
		switch {
		case t.Kind == "linear" && t.Name != models.LMHeadName:
			layer += float64(t.Elems())
		case t.Name == models.LMHeadName || (t.Name == models.EmbedName && cfg.TieWordEmbeddings):
			head += float64(t.Elems())
		}
	}
	return 2*sent(rows)*layer + 2*sent(headRows)*head
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
