package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"gelo/attack/corpus"
	"gelo/device/record"
	"gelo/plan"
)

// runRecord runs greedy generation with the device spied and writes what
// it saw, every payload in both directions, as a safetensors file.
func runRecord(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	mf.registerProtect(fs)
	out := fs.String("out", "", "the recording to write (safetensors)")
	promptIDs := fs.String("prompt-ids", "", "prompt token ids, comma-separated; several prompts separated by ';' (default "+defaultPrompt+")")
	prompt := fs.String("prompt", "", "prompt text (needs a tokenizer)")
	corpusPath := fs.String("corpus", "", "a prompt corpus (JSON Lines: kind, text, ids), such as attack/testdata/corpus.jsonl")
	tok := fs.String("tokenizer", "", "tokenizer.json or its directory, for --prompt and a corpus without ids")
	maxTokens := fs.Int("max-tokens", 8, "new tokens per prompt (greedy)")
	batch := fs.Int("batch", 1, "decode the prompts this many at a time (one row per sequence in each decode pass)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gelo record --out FILE.safetensors [--prompt-ids 1,2;3 | --prompt TEXT | --corpus FILE] [compile flags]")
		fs.PrintDefaults()
	}
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	if err := checkOut(*out); err != nil {
		return err
	}
	if n := btoi(*promptIDs != "") + btoi(*prompt != "") + btoi(*corpusPath != ""); n > 1 {
		return fmt.Errorf("%w: give one of --prompt-ids, --prompt and --corpus", errUsage)
	}
	if *maxTokens <= 0 {
		return fmt.Errorf("%w: --max-tokens must be positive, got %d", errUsage, *maxTokens)
	}
	if *batch <= 0 {
		return fmt.Errorf("%w: --batch must be positive, got %d", errUsage, *batch)
	}
	o, err := mf.options()
	if err != nil {
		return err
	}
	if _, cfg, err := mf.resolve(); err != nil {
		return err
	} else if err := mf.preflight(cfg, nil, 1, 0, *maxTokens); err != nil {
		return err
	}
	model, err := mf.open(stderr)
	if err != nil {
		return err
	}
	defer model.Close()
	var prompts [][]int32
	switch {
	case *corpusPath != "":
		ps, err := corpus.Load(*corpusPath)
		if err != nil {
			return err
		}
		tk, err := modelTokenizer(*tok, model)
		if err != nil {
			return err
		}
		ids, err := corpus.Tokenize(tk, ps)
		if err != nil {
			return err
		}
		prompts = corpus.Fit(ids, model.Config.VocabSize)
	case *prompt != "":
		tk, err := modelTokenizer(*tok, model)
		if err != nil {
			return err
		}
		if tk == nil {
			return fmt.Errorf("%w: --prompt needs a tokenizer: pass --tokenizer DIR", errUsage)
		}
		prompts = corpus.Fit([][]int32{corpus.Encode(tk, corpus.Prompt{Kind: "prose", Text: *prompt})}, model.Config.VocabSize)
	default:
		ids := *promptIDs
		if ids == "" {
			ids = defaultPrompt
		}
		for _, part := range strings.Split(ids, ";") {
			p, err := parseIDs(part)
			if err != nil {
				return err
			}
			prompts = append(prompts, p)
		}
	}
	m, err := mf.compile(model.Source, model.Config, stderr)
	if err != nil {
		return err
	}
	hdr, err := plan.RecordHeader(m, model, o)
	if err != nil {
		return err
	}
	key, err := mf.key()
	if err != nil {
		return err
	}
	longest := 0
	for _, p := range prompts {
		longest = max(longest, len(p))
	}
	eo := mf.engineOptions()
	rec, truth, err := plan.Record(m, model.Weights, eo, key, prompts,
		plan.RecordOptions{MaxTokens: *maxTokens, MaxContext: max(mf.maxContext, longest+*maxTokens+1), Header: hdr, Batch: *batch})
	if err != nil {
		return err
	}
	if err := record.Write(*out, rec); err != nil {
		return err
	}
	var values int
	for _, c := range rec.Crossings {
		values += len(c.Data)
	}
	fmt.Fprintf(stdout, "wrote %s: %d prompts, %d forward passes, %d payloads (%d values), mask %s, model identity %s\n",
		*out, len(prompts), len(truth), len(rec.Crossings), values, o.Mask, hdr[record.KeyIdentity])
	if in := hdr["gelo.insecure"]; in != "" {
		fmt.Fprintf(stdout, "INSECURE plan: %s\n", in)
	}
	return nil
}
