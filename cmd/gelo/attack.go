package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"gelo/attack"
	"gelo/attack/corpus"
	"gelo/attack/dict"
	"gelo/device"
	"gelo/formats"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/tokenizer"
)

// condition is one protection setting the harness records and attacks.
type condition struct {
	name, label string
	opt         func() plan.Options
	// reusePads is the lwe control's fault (plan.EngineOptions.ReusePads):
	// an engine that reuses pads, which the harness must break.
	reusePads bool
}

// conditions are the harness's settings: the control, the unshielded
// mixing, the shipped levels. A new level is one more entry.
var conditions = []condition{
	{"C0", "mask none (control: every attack must succeed)", func() plan.Options {
		o := plan.Knobs()
		o.Mask = passes.MaskNone
		return o
	}, false},
	{"C1", "haar with no shield rows (row mixing alone; harness only, the CLI refuses k < 8)", func() plan.Options {
		o := plan.Knobs()
		o.Mask = passes.MaskHaar
		o.ShieldK, o.Unshielded = 0, true
		return o
	}, false},
	{"C2", "haar, per-forward, shield 8 rows at energy 4 (the seed's default)", func() plan.Options {
		o := plan.Knobs()
		o.Mask = passes.MaskHaar
		return o
	}, false},
	{"C3", "hd3, per-forward, shield 8 rows at energy 4 (gelo-8x4, the seed protocol's knobs)", func() plan.Options { return plan.Knobs() }, false},
	{"C3-offload", "hd3, per-offload cadence, shield 8 rows at energy 4", func() plan.Options {
		o := plan.Knobs()
		o.Cadence = passes.PerOffload
		return o
	}, false},
	{"span", "--security span, every linear op offloaded (prefill and decode cross)", levelCondition(passes.LevelSpan), false},
	{"whiten", "--security whiten, every linear op offloaded (prefill and decode cross)", levelCondition(passes.LevelWhiten), false},
	{"exact", "--security exact, every linear op offloaded (prefill and decode cross)", levelCondition(passes.LevelExact), false},
	{"lwe", "--security lwe (int8 weights), every linear op offloaded (prefill and decode cross as lwe ciphertexts)", levelCondition(passes.LevelLWE), false},
	{"lwe-reused", "lwe's control: --security lwe, every linear op offloaded, on an engine with an insecure fault, every ciphertext of a crossing kind carrying one pad (harness only: it must be broken)", levelCondition(passes.LevelLWE), true},
}

// levelCondition is a named security level with every linear op
// offloaded, so the harness sees the crossings the cost model would keep
// in the TEE too.
func levelCondition(name string) func() plan.Options {
	return func() plan.Options {
		o := plan.Level(name)
		o.OffloadAll = true
		return o
	}
}

func conditionNames() []string {
	var ns []string
	for _, c := range conditions {
		ns = append(ns, c.name)
	}
	return ns
}

// weightsNote says what the model's weights mean for the deep-layer
// attacks, for the report's header: a model with a tokenizer of its own
// is a trained one (the built-in, or a checkpoint), the variants are
// synthetic.
func weightsNote(trained bool) string {
	if trained {
		return "trained weights: the residual stream carries the input as a real model's does, so the deep-layer attacks (isa, " +
			"sequential) are judged where they are meant to work; the corpus read in the model's own tokenizer."
	}
	return "synthetic random weights decorrelate the residual stream faster than trained ones, so the deep-layer attacks (isa, " +
		"sequential) are weaker here than on real weights; the row-space attacks do not depend on it."
}

// batchNote says how the prompts were decoded, for the report's header.
func batchNote(b int) string {
	if b <= 1 {
		return ""
	}
	return fmt.Sprintf("decoded %d at a time (each decode pass one row per sequence); ", b)
}

// runAttack records every condition on the corpus and attacks each
// recording with public knowledge only, then prints the table, the
// control gates and the verdicts.
func runAttack(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("attack", flag.ContinueOnError)
	var mf modelFlags
	// The harness's default stays the synthetic qwen3-tiny: its corpus
	// holds Qwen3 ids fitted to the model's vocabulary and the docs' table
	// is judged at its widths; the trained model is --model qwen3-kjv.
	mf.defaultModel = models.DefaultVariant
	mf.register(fs)
	fs.StringVar(&mf.sessionKey, "session-key", "", "hex session key for the mask stream (default: random per run)")
	corpusPath := fs.String("corpus", filepath.Join("attack", "testdata", "corpus.jsonl"), "the prompt corpus (JSON Lines with Qwen3 ids)")
	tok := fs.String("tokenizer", "", "re-tokenize the corpus with this tokenizer (default: use its recorded ids)")
	conds := fs.String("conditions", "C0,C1,C2,C3,C3-offload", "conditions to run: "+strings.Join(conditionNames(), ", ")+
		" (span and exact stack s >= n + d rows on every crossing: at the 0.6B widths 2048-8192 rows a payload, so they are not in the default list; the CI judges them at the tiny model's widths)")
	prompts := fs.Int("prompts", 0, "prompts of the corpus to use (0: all)")
	maxTokens := fs.Int("max-tokens", 8, "new tokens per prompt (greedy); each decode step is a pass to attack")
	levelOffload := fs.String("level-offload", "all", "what a full-span level offloads in its recording: all (every linear op, as the CI runs it) or attacked (only the two crossings the attacks read, layer 0's QKV and the deep one; every other op stays in the TEE: at the 0.6B widths each full-span crossing is 2048-4096 rows)")
	batch := fs.Int("batch", 1, "decode the prompts this many at a time: each decode pass carries one row per sequence (the batched decode a full-span level offloads under the shared topology), attacked as a bag of tokens")
	seqPrompts := fs.Int("seq-prompts", 2, "prompts the sequential vocabulary attack walks (0: skip it)")
	seqCands := fs.Int("seq-candidates", 0, "candidates per position for the sequential attack (0: the whole vocabulary)")
	icaPasses := fs.Int("ica-passes", 8, "prefill passes FastICA, JADE and anchor-ICA run on")
	knownPrompts := fs.Int("known-prompts", 16, "random-token prompts the attacker records as known plaintext (training rows for the ridge inverters)")
	knownLen := fs.Int("known-len", 64, "tokens per known-plaintext prompt")
	out := fs.String("out", "", "directory for report.md and report.json")
	fs.StringVar(&mf.weights, "weights", "f32", "weight format of every condition's plan: "+strings.Join(formats.PlanNames(), ", ")+" (the payloads the attacks read are those of that format)")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	var chosen []condition
	for _, n := range splitList(*conds) {
		i := slices.IndexFunc(conditions, func(c condition) bool { return c.name == n })
		if i < 0 {
			return fmt.Errorf("%w: --conditions: %q is not one of %s", errUsage, n, strings.Join(conditionNames(), ", "))
		}
		chosen = append(chosen, conditions[i])
	}
	if *batch <= 0 {
		return fmt.Errorf("%w: --batch must be positive, got %d", errUsage, *batch)
	}
	if *levelOffload != "all" && *levelOffload != "attacked" {
		return fmt.Errorf("%w: --level-offload %q: want all or attacked", errUsage, *levelOffload)
	}
	if *maxTokens <= 0 || *prompts < 0 || *seqPrompts < 0 || *seqCands < 0 || *icaPasses < 0 || *knownPrompts < 0 || *knownLen <= 0 {
		return fmt.Errorf("%w: --max-tokens must be positive and the counts not negative", errUsage)
	}
	ps, err := corpus.Load(*corpusPath)
	if err != nil {
		return err
	}
	if *prompts > 0 && *prompts < len(ps) {
		ps = ps[:*prompts]
	}
	var tk *tokenizer.Tokenizer
	if *tok != "" {
		if tk, err = loadTokenizer(*tok, ""); err != nil {
			return err
		}
	}
	if _, cfg, err := mf.resolve(); err != nil {
		return err
	} else if err := mf.preflight(cfg, nil, 0, 0, 0); err != nil {
		return err
	}
	// The live heap is GBs of weight and dictionary copies (pointer-free,
	// cheap to scan); the default GC goal of twice the live heap would
	// double the run's peak (the full run was OOM-killed at 9.9 GB on a
	// shared machine).
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	model, err := mf.open(stderr)
	if err != nil {
		return err
	}
	defer model.Close()
	cfg := model.Config
	// The corpus's ids are Qwen3's: --tokenizer re-checks them, a model
	// with a tokenizer of its own (the built-in trained one) reads its
	// text in its own ids, a synthetic variant takes them as recorded.
	var ids [][]int32
	own, err := modelTokenizer("", model)
	switch {
	case err != nil:
		return err
	case tk == nil && own != nil:
		ids, err = corpus.Retokenize(own, ps)
	default:
		ids, err = corpus.Tokenize(tk, ps)
	}
	if err != nil {
		return err
	}
	fitted := corpus.Fit(ids, cfg.VocabSize)
	longest := 0
	for _, p := range fitted {
		longest = max(longest, len(p))
	}
	maxCtx := max(mf.maxContext, longest+*maxTokens+2, *knownLen+2)
	known := attack.KnownPlaintext(*knownPrompts, *knownLen, cfg.VocabSize)
	D, err := attack.DictionaryOf(model.Weights)
	if err != nil {
		return err
	}
	// The dictionary is prepared once (float32 rows for the kernel, row
	// norms) and shared by every condition.
	T, err := dict.New(D, mf.workers)
	if err != nil {
		return err
	}
	defer T.Close()
	deep := fmt.Sprintf("model.layers.%d.self_attn.q_proj", cfg.NumHiddenLayers-1)
	aopt := attack.Options{ICAPasses: *icaPasses, SeqPrompts: *seqPrompts, SeqCandidates: *seqCands,
		Anchors: corpus.Anchors(ps, fitted), Seed: 1}
	start := time.Now()
	last := start
	aopt.Progress = func(cond, a string) {
		now := time.Now()
		fmt.Fprintf(stderr, "%6.1fs (+%.1fs) %-12s %s\n", now.Sub(start).Seconds(), now.Sub(last).Seconds(), cond, a)
		last = now
	}
	key, err := mf.key()
	if err != nil {
		return err
	}
	// The attacker's copy of the public model does not depend on the
	// condition: one for the whole run.
	var oracle *plan.Oracle
	if *seqPrompts > 0 {
		if oracle, err = plan.NewOracle(model, mf.engineOptions(), mf.weights, deep, 64, maxCtx); err != nil {
			return err
		}
		defer oracle.Close()
	}
	// The attacks read two payloads a pass (attack.Run: the first
	// device-bound one and the deep one): the spy copies only those.
	keep := func(dir device.Direction, index int, weight string) bool {
		return dir == device.ToDevice && (index == 0 || strings.HasPrefix(device.WeightName(weight), deep))
	}
	var reports []*attack.Report
	for _, c := range chosen {
		o := c.opt()
		o.Weights = mf.weights // under lwe the TEE-local ops' (the device multiplies int8)
		if lv, ok := passes.LookupLevel(o.Security); ok && lv.FullSpan && *levelOffload == "attacked" {
			o.OffloadAll, o.OffloadOnly = false, []string{"model.layers.0.self_attn.q_proj", deep}
			c.label = strings.Replace(c.label, "every linear op offloaded", "only the attacked crossings offloaded (layer 0's QKV and "+deep+"'s; the rest in the TEE)", 1)
		}
		aopt.Progress(c.name, "record")
		m, err := plan.Compile(model.Source, cfg, o, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		hdr, err := plan.RecordHeader(m, model, o)
		if err != nil {
			return err
		}
		eo := mf.engineOptions()
		if c.reusePads {
			eo.ReusePads = true
			hdr["gelo.insecure"] = "every ciphertext of a crossing kind carries one pad (the harness's fault)"
		}
		bar := newProgress(stderr, c.name+" record")
		rec, truth, err := plan.Record(m, model.Weights, eo, key, fitted,
			plan.RecordOptions{MaxTokens: *maxTokens, MaxContext: maxCtx, Header: hdr, Keep: keep, Batch: *batch,
				Progress: func(done, total int) {
					bar.update(int64(done), int64(total))
					if !bar.on && done%16 == 0 && done < total { // a log, not a terminal: a line now and then
						aopt.Progress(c.name, fmt.Sprintf("record: %d of %d prompts", done, total))
					}
				}})
		bar.done()
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		run := attack.Run{Condition: c.name, Label: c.label, Rec: rec, Truth: truth, DeepWeight: deep}
		if len(known) > 0 {
			aopt.Progress(c.name, "record known plaintext")
			if run.Known, run.KnownTruth, err = plan.Record(m, model.Weights, eo, key, known,
				plan.RecordOptions{MaxTokens: 1, MaxContext: maxCtx, Keep: keep}); err != nil {
				return fmt.Errorf("%s: known plaintext: %w", c.name, err)
			}
		}
		if oracle != nil {
			run.Oracle = oracle.Rows
		}
		// Each recording built and dropped an engine with its own copy of
		// the weights (GBs at the 0.6B size): return them before the
		// attacks, so the run's peak is one engine, not a heap of them.
		debug.FreeOSMemory()
		rep, err := attack.Evaluate(T, run, aopt)
		if err != nil {
			return err
		}
		reports = append(reports, rep)
		debug.FreeOSMemory()
	}
	aopt.Progress("all", "done")
	gates, verdicts := attack.Judge(reports)
	md := fmt.Sprintf("# gelo attack report\n\nModel %s (%d layers, hidden %d, vocabulary %d), %d prompts x %d new tokens; "+
		"%s"+
		"%s\n\n%s",
		model.Spec, cfg.NumHiddenLayers, cfg.HiddenSize, cfg.VocabSize, len(fitted), *maxTokens, batchNote(*batch), weightsNote(own != nil), attack.Markdown(reports, gates, verdicts))
	js, err := attack.JSON(reports, gates, verdicts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(*out, "report.md"), []byte(md)); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(*out, "report.json"), js); err != nil {
		return err
	}
	io.WriteString(stdout, md)
	for _, g := range gates {
		if !g.Pass {
			return errors.New("a control gate failed: an attack does not work even without protection, so its readings mean nothing")
		}
	}
	return nil
}
