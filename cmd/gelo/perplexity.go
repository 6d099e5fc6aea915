package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"gelo/eval"
	"gelo/plan"
)

// maxTextFile bounds --text: the tokens are held (4 bytes each), the
// logits never are.
const maxTextFile = 256 << 20

func runPerplexity(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("perplexity", flag.ContinueOnError)
	var mf modelFlags
	mf.ownWeights = true
	mf.noIdentity = true
	mf.register(fs)
	mf.registerProtect(fs)
	text := fs.String("text", "", "the text to score: a file, or '-' for standard input (required)")
	ids := fs.Bool("ids", false, "--text holds token ids (separated by commas or white space), not text: for a model without a tokenizer")
	tok := fs.String("tokenizer", "", "tokenizer.json (or its directory) that encodes --text (default: the model's own: its directory's, its GGUF file's or the built-in model's)")
	ctx := fs.Int("ctx", 512, "window in tokens: each window runs from an empty cache and scores its second half (llama.cpp's rule); the KV cache holds one window")
	batch := fs.Int("batch", 64, "rows per prefill within a window: the logits held at once are batch x vocab floats")
	save := fs.String("save-logits", "", "write every scored token's log-softmax here (gelo's streaming format; see package eval) for a later --kl-base")
	saveDType := fs.String("logits-dtype", "f32", "element type of --save-logits: f32 or f16")
	klBase := fs.String("kl-base", "", "a --save-logits file of a base run over the same text and --ctx: report KL divergence from it, top-1 agreement and the worst token")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	maxCtxSet := false
	fs.Visit(func(f *flag.Flag) { maxCtxSet = maxCtxSet || f.Name == "max-context" })
	if maxCtxSet {
		return fmt.Errorf("%w: --max-context: the cache holds one window here; set its size with --ctx", errUsage)
	}
	if *text == "" {
		return fmt.Errorf("%w: --text FILE (or -) is required", errUsage)
	}
	if *ctx < 3 || *batch < 1 {
		return fmt.Errorf("%w: --ctx %d / --batch %d: want --ctx >= 3 and --batch >= 1", errUsage, *ctx, *batch)
	}
	dt, err := eval.ParseDType(*saveDType)
	if err != nil {
		return fmt.Errorf("%w: --logits-dtype: %v", errUsage, err)
	}
	if *save != "" && *save == *klBase {
		return fmt.Errorf("%w: --save-logits and --kl-base name the same file", errUsage)
	}
	if _, err := mf.options(); err != nil {
		return err
	}
	_, cfg, err := mf.resolve()
	if err != nil {
		return err
	}
	if *ctx > cfg.MaxPositionEmbeddings {
		return fmt.Errorf("%w: --ctx %d is larger than the model's context of %d tokens (max_position_embeddings)", errUsage, *ctx, cfg.MaxPositionEmbeddings)
	}
	mf.maxContext = *ctx
	var base *eval.LogitsReader
	if *klBase != "" { // refused before the model loads if it cannot match
		f, err := os.Open(*klBase)
		if err != nil {
			return fmt.Errorf("--kl-base: %w", err)
		}
		defer f.Close()
		if base, err = openBase(f, *ctx, cfg.VocabSize); err != nil {
			return fmt.Errorf("--kl-base %s: %w", *klBase, err)
		}
	}
	data, err := readText(*text)
	if err != nil {
		return err
	}
	l, err := mf.open(stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	var tokens []int32
	if *ids {
		if tokens, err = parseIDText(data, l.Config.VocabSize); err != nil {
			return err
		}
	} else {
		t, err := plan.ModelTokenizer(*tok, l)
		if err != nil {
			return err
		}
		if t.Tok == nil {
			return fmt.Errorf("%w: --text needs a tokenizer: pass --tokenizer DIR, or --ids for a text of token ids (model %s has none)", errUsage, l.Spec)
		}
		tokens = toI32(t.Tok.Encode(string(data)))
	}
	if n, _ := eval.Windows(len(tokens), *ctx); n == 0 {
		return fmt.Errorf("%w: --text %s is %d tokens: fewer than one window of --ctx %d", errUsage, *text, len(tokens), *ctx)
	}
	o, err := mf.options()
	if err != nil {
		return err
	}
	o.Trace.AllLogits = true // every row's logits: the scored half of each window
	m, err := plan.Compile(l.Source, l.Config, o, nil)
	if err != nil {
		return err
	}
	warnInsecure(stderr, m)
	s, done, err := mf.session(m, l.Weights)
	if err != nil {
		return err
	}
	defer done()
	return scoreText(s, tokens, scoreOptions{ctx: *ctx, batch: *batch, save: *save, dtype: dt, base: base, label: l.Spec}, stdout, stderr)
}

type scoreOptions struct {
	ctx, batch int
	save       string
	base       *eval.LogitsReader // --kl-base, its header checked
	dtype      eval.DType
	label      string
}

// scoreText runs eval.Run with the files opened and the report printed:
// the running estimate "[1]x,[2]y,..." and the final line on stdout as
// llama-perplexity prints them, the KL statistics after them.
func scoreText(m eval.Model, tokens []int32, so scoreOptions, stdout, stderr io.Writer) (err error) {
	nw, per := eval.Windows(len(tokens), so.ctx)
	o := eval.Options{Ctx: so.ctx, Batch: so.batch}
	o.Base = so.base
	var saved *os.File
	if so.save != "" {
		tmp := so.save + ".tmp"
		if saved, err = os.Create(tmp); err != nil {
			return fmt.Errorf("--save-logits: %w", err)
		}
		defer func() {
			if saved != nil { // not renamed: an error, drop the partial file
				saved.Close()
				os.Remove(tmp)
			}
		}()
		h := eval.Header{DType: so.dtype, Vocab: m.Vocab(), Ctx: so.ctx, Count: int64(nw) * int64(per)}
		if o.Save, err = eval.NewLogitsWriter(saved, h); err != nil {
			return fmt.Errorf("--save-logits %s: %w", so.save, err)
		}
	}
	fmt.Fprintf(stderr, "perplexity: %s, %d tokens, %d windows of %d (scoring %d each), batch %d\n", so.label, len(tokens), nw, so.ctx, per, so.batch)
	bar := newProgress(stderr, "perplexity")
	var line strings.Builder
	o.Window = func(done, total int, running eval.Estimate) {
		bar.label = fmt.Sprintf("perplexity %.4f", running.Value) // the running estimate on the bar
		bar.update(int64(done), int64(total))
		fmt.Fprintf(&line, "[%d]%.4f,", done, running.Value)
	}
	start := time.Now()
	r, err := eval.Run(m, tokens, o)
	bar.done()
	if err != nil {
		return err
	}
	if o.Save != nil {
		if err := o.Save.Close(); err != nil {
			return fmt.Errorf("--save-logits %s: %w", so.save, err)
		}
		if err := saved.Close(); err != nil {
			return fmt.Errorf("--save-logits %s: %w", so.save, err)
		}
		f := saved
		saved = nil
		if err := os.Rename(f.Name(), so.save); err != nil {
			os.Remove(f.Name())
			return fmt.Errorf("--save-logits: %w", err)
		}
	}
	elapsed := time.Since(start)
	fmt.Fprintln(stdout, line.String())
	fmt.Fprintf(stdout, "Final estimate: PPL = %.4f +/- %.5f\n", r.PPL.Value, r.PPL.Err)
	if r.KL != nil {
		printKL(stdout, r.KL)
	}
	fmt.Fprintf(stderr, "%d windows, %d tokens evaluated (%d scored) in %v: %.2f ms per token evaluated; resident %s (peak %s)\n", r.Windows, r.Windows*so.ctx, r.Scored,
		elapsed.Round(time.Millisecond), float64(elapsed.Microseconds())/1000/float64(r.Windows*so.ctx), humanRSS(residentBytes()), humanRSS(peakResidentBytes()))
	return nil
}

// openBase reads a --kl-base file's header and checks it against the
// run's window and vocabulary.
func openBase(f *os.File, ctx, vocab int) (*eval.LogitsReader, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	lr, err := eval.NewLogitsReader(f, st.Size())
	if err != nil {
		return nil, err
	}
	if h := lr.Header(); h.Vocab != vocab || h.Ctx != ctx {
		return nil, fmt.Errorf("%w: saved with vocab %d and --ctx %d; this run has vocab %d and --ctx %d", errUsage, h.Vocab, h.Ctx, vocab, ctx)
	}
	return lr, nil
}

// printKL prints the comparison with the base run in llama.cpp's
// --kl-divergence terms; KL figures with six significant digits (llama.cpp
// prints six decimals, which reads 0 for the rounding-level differences a
// protection level makes).
func printKL(w io.Writer, k *eval.KLStats) {
	fmt.Fprintf(w, "KL divergence from the base over %d tokens:\n", k.Count)
	fmt.Fprintf(w, "Mean PPL(Q)               : %10.6f +/- %10.6f\n", k.PPL.Value, k.PPL.Err)
	fmt.Fprintf(w, "Mean PPL(base)            : %10.6f +/- %10.6f\n", k.BasePPL.Value, k.BasePPL.Err)
	fmt.Fprintf(w, "Mean ln(PPL(Q)/PPL(base)) : %10.6g +/- %10.6g\n", k.LogRatio.Value, k.LogRatio.Err)
	fmt.Fprintf(w, "Mean    KLD: %12.6g +/- %12.6g\n", k.KLD.Value, k.KLD.Err)
	fmt.Fprintf(w, "Maximum KLD: %12.6g\n", k.Max)
	for _, p := range k.Percentiles {
		fmt.Fprintf(w, "%5.1f%%   KLD: <= %12.6g\n", 100*p.Q, p.KL)
	}
	fmt.Fprintf(w, "Minimum KLD: %12.6g\n", k.Min)
	fmt.Fprintf(w, "RMS Δp     : %10.4g %%\n", 100*k.RMSDeltaP)
	fmt.Fprintf(w, "Same top p : %6.3f +/- %5.3f %%\n", 100*k.Top1.Value, 100*k.Top1.Err)
	wt := k.Worst
	fmt.Fprintf(w, "Worst token: text position %d (token %d): KLD %.6g, p %.6g vs base %.6g, top-1 %d vs base %d\n",
		wt.Pos, wt.Token, wt.KL, wt.P, wt.BaseP, wt.Top, wt.BaseTop)
}

// readText reads --text ('-': standard input); an empty or oversized
// file is a usage error naming it.
func readText(path string) ([]byte, error) {
	var r io.Reader = os.Stdin
	name := "standard input"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--text: %w", err)
		}
		defer f.Close()
		r, name = f, path
	}
	data, err := io.ReadAll(io.LimitReader(r, maxTextFile+1))
	if err != nil {
		return nil, fmt.Errorf("--text %s: %w", name, err)
	}
	if len(data) > maxTextFile {
		return nil, fmt.Errorf("%w: --text %s is larger than %d bytes", errUsage, name, maxTextFile)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, fmt.Errorf("%w: --text %s is empty", errUsage, name)
	}
	return data, nil
}

// parseIDText reads token ids separated by commas or white space, each
// inside the vocabulary.
func parseIDText(data []byte, vocab int) ([]int32, error) {
	fields := strings.FieldsFunc(string(data), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
	out := make([]int32, 0, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil || v < 0 || v >= int64(vocab) {
			return nil, fmt.Errorf("%w: --ids: field %d %q is not a token id in [0, %d)", errUsage, i+1, f, vocab)
		}
		out = append(out, int32(v))
	}
	return out, nil
}
