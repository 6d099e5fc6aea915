package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"golang.org/x/term"

	"gelo/lower/cpu"
	"gelo/lower/cpu/kernels"
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
	if err := parse(fs, args, stderr); err != nil {
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
		return err
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
	prefillN := fs.Int("prefill", 128, "prompt length of the prefill measurement")
	decodeSteps := fs.Int("decode", 32, "decode steps measured (B = 1)")
	reps := fs.Int("reps", 3, "prefill repetitions (the median is reported)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *prefillN <= 0 || *decodeSteps <= 0 || *reps <= 0 {
		return fmt.Errorf("%w: --prefill, --decode and --reps must be positive", errUsage)
	}
	mf.maxContext = max(mf.maxContext, *prefillN+*decodeSteps+1)
	l, err := mf.load(stderr)
	if err != nil {
		return err
	}
	defer l.weights.Close()
	m, err := mf.compile(l.cfg, stderr)
	if err != nil {
		return err
	}
	key, err := mf.key()
	if err != nil {
		return err
	}
	be := cpu.New(l.weights, cpu.Options{Workers: mf.workers, SessionKey: key})
	defer be.Close()
	s, err := runtime.NewSession(m, runtime.Adapt(be.Name(), be.Compile), runtime.Options{MaxContext: mf.maxContext})
	if err != nil {
		return err
	}
	bw := kernels.MeasureReadBandwidth(be.Kernels(), 512<<20)

	prompt := make([]int32, *prefillN)
	for i := range prompt {
		prompt[i] = int32((i*7919 + 13) % l.cfg.VocabSize)
	}
	var prefill []time.Duration
	for r := 0; r <= *reps; r++ { // the first run compiles and warms up
		s.Reset()
		t0 := time.Now()
		if _, err := s.Prefill(prompt); err != nil {
			return err
		}
		if r > 0 {
			prefill = append(prefill, time.Since(t0))
		}
	}
	tok := int32(1)
	if _, err := s.Decode(tok); err != nil { // warm-up step
		return err
	}
	steps := make([]time.Duration, *decodeSteps)
	for i := range steps {
		t0 := time.Now()
		logits, err := s.Decode(tok)
		if err != nil {
			return err
		}
		steps[i] = time.Since(t0)
		tok = int32(runtime.Argmax(logits))
	}
	pre, tpot := median(prefill), median(steps)
	bytesPerTok := decodeWeightBytes(l.cfg)
	bound := bw * 1e9 / float64(bytesPerTok)
	decTok := 1 / tpot.Seconds()

	fmt.Fprintf(stdout, "model        %s (%s, %d layers, hidden %d, vocab %d)\n", l.source, l.cfg.ModelType,
		l.cfg.NumHiddenLayers, l.cfg.HiddenSize, l.cfg.VocabSize)
	fmt.Fprintf(stdout, "backend      cpu, f32 weights in memory, %d workers\n", be.Kernels().Workers())
	fmt.Fprintf(stdout, "read bw      %.2f GB/s (measured, all workers)\n", bw)
	fmt.Fprintf(stdout, "prefill      n=%d: %.1f tok/s (median of %d, %v)\n", *prefillN, float64(*prefillN)/pre.Seconds(), *reps, pre.Round(time.Millisecond))
	fmt.Fprintf(stdout, "decode       B=1: %.2f tok/s, TPOT %v (median of %d steps)\n", decTok, tpot.Round(time.Microsecond), *decodeSteps)
	fmt.Fprintf(stdout, "decode bound %.2f tok/s = %.2f GB/s / %s weight bytes per token\n", bound, bw, passes.HumanBytes(bytesPerTok))
	fmt.Fprintf(stdout, "efficiency   %.0f %% of the bandwidth bound\n", 100*decTok/bound)
	return nil
}

// decodeWeightBytes is what one decode step must read: every weight in
// f32 (the in-memory format), except an untied embedding table of which a
// step gathers one row.
func decodeWeightBytes(cfg *models.Config) int64 {
	var n int64
	for _, t := range cfg.TensorSpecs() {
		if t.Name == models.EmbedName && !cfg.TieWordEmbeddings {
			n += int64(t.Shape[1]) * 4
			continue
		}
		n += int64(t.Elems()) * 4
	}
	return n
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
