package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/plan/planfile"
	"gelo/runtime"
	"gelo/tokenizer"
)

// samplerFlags are generate's TEE sampling options.
type samplerFlags struct {
	opt  runtime.SamplerOptions
	seed uint64
}

func (sf *samplerFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&sf.opt.Temperature, "temperature", 0, "sampling temperature (0: greedy)")
	fs.IntVar(&sf.opt.TopK, "top-k", 0, "keep the k most likely tokens (0: off)")
	fs.Float64Var(&sf.opt.TopP, "top-p", 0, "nucleus: keep the smallest set with this much probability, in (0, 1] (0: off)")
	fs.Float64Var(&sf.opt.MinP, "min-p", 0, "keep tokens with p >= min-p x p_max, in [0, 1) (0: off)")
	fs.Float64Var(&sf.opt.RepetitionPenalty, "repetition-penalty", 1, "HF repetition penalty over prompt and output (> 0; 1: off)")
	fs.Float64Var(&sf.opt.FrequencyPenalty, "frequency-penalty", 0, "subtract this x count of each token so far")
	fs.Float64Var(&sf.opt.PresencePenalty, "presence-penalty", 0, "subtract this from every token seen so far")
	fs.Uint64Var(&sf.seed, "sample-seed", 0, "seed of the sampling stream (ChaCha20 keyed from it): the same seed repeats a run")
}

func (sf *samplerFlags) sampler() (*runtime.Sampler, error) {
	if err := sf.opt.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return runtime.NewSampler(sf.opt, runtime.SeedKey(sf.seed))
}

// textIO is the tokenizer side of generate: text in, text out.
type textIO struct {
	tok *tokenizer.Tokenizer
}

// loadTokenizer loads --tokenizer (a file, used as named, or a directory
// holding tokenizer.json), else the model directory's; nil when neither.
func loadTokenizer(flagValue, modelDir string) (*tokenizer.Tokenizer, error) {
	t, err := plan.LoadTokenizer(flagValue, modelDir)
	return t.Tok, err
}

// modelTokenizer loads --tokenizer, else the loaded model's own (its
// directory's, a GGUF file's, the built-in model's); nil when neither.
func modelTokenizer(flagValue string, m *models.Model) (*tokenizer.Tokenizer, error) {
	t, err := plan.ModelTokenizer(flagValue, m)
	return t.Tok, err
}

func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	var mf modelFlags
	mf.ownWeights = true // one engine: f32 copies of converted weights are dropped at load
	mf.noIdentity = true // nothing is sealed or attested (--plan's check loads on its own)
	var sf samplerFlags
	mf.register(fs)
	mf.registerProtect(fs)
	mf.registerDump(fs)
	sf.register(fs)
	planPath := fs.String("plan", "", "a compiled artifact to run: IR text, or a sealed .gelo plan whose model identity is checked first (default: compile --model on the fly)")
	tok := fs.String("tokenizer", "", "tokenizer.json (or its directory) for --prompt/--chat, and to check against a sealed plan (default: the model's own: its directory's, its GGUF file's or the built-in model's)")
	promptIDs := fs.String("prompt-ids", "", "prompt token ids, comma-separated; several prompts separated by ';' decode as one batch (with no prompt flag: the text "+strconv.Quote(defaultText)+" when the model has a tokenizer, else ids "+defaultPrompt+")")
	prompt := fs.String("prompt", "", "prompt text (needs a tokenizer)")
	chat := fs.String("chat", "", "a user message, formatted with the model's chat template (needs a tokenizer)")
	system := fs.String("system", "", "system message for --chat")
	think := fs.Bool("think", false, "with --chat: let the model open a thinking block (Qwen3 enable_thinking)")
	chatRaw := fs.Bool("chat-raw", false, "with --chat: parse control tokens written inside the messages (<|im_start|> ...) as Hugging Face's apply_chat_template does; by default message text is encoded as text, so it cannot open a turn")
	promptFile := fs.String("prompt-file", "", "read the --prompt text from this file ('-': standard input), for prompts beyond the argument limit")
	showIDs := fs.Bool("show-ids", false, "with text output, also print the token ids")
	maxTokens := fs.Int("max-tokens", 32, "maximum number of new tokens per sequence")
	eos := fs.String("eos", "", "comma-separated EOS ids (default: the config's eos_token_id and the tokenizer's)")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	if *maxTokens <= 0 {
		return fmt.Errorf("%w: --max-tokens must be positive, got %d", errUsage, *maxTokens)
	}
	if err := checkPromptFlags(fs); err != nil {
		return err
	}
	var eosFlag []int32 // checked against the vocabulary once the model is known
	if *eos != "" {
		var err error
		if eosFlag, err = parseIDsFlag("eos", *eos); err != nil {
			return err
		}
	}
	if *promptFile != "" {
		if *prompt != "" {
			return fmt.Errorf("%w: give one of --prompt and --prompt-file", errUsage)
		}
		text, err := readPromptFile(*promptFile)
		if err != nil {
			return err
		}
		*prompt = text
	}
	if *planPath != "" {
		if err := checkPlanOverrides(fs); err != nil {
			return err
		}
	}
	if n := btoi(*promptIDs != "") + btoi(*prompt != "") + btoi(*chat != ""); n > 1 {
		return fmt.Errorf("%w: give one of --prompt-ids, --prompt and --chat", errUsage)
	}
	sampler, err := sf.sampler()
	if err != nil {
		return err
	}
	defer sampler.Zeroise()

	var m *ir.Module
	var sealed *planfile.Plan
	if *planPath != "" {
		if m, sealed, err = plan.ReadArtifact(*planPath); err != nil {
			return err
		}
		if err := plan.Verify(m); err != nil {
			return fmt.Errorf("refusing to run %s: %w", *planPath, err)
		}
	}
	cfg, err := runConfig(&mf, sealed, *planPath)
	if err != nil {
		return err
	}
	seqs, longest := 1, 0
	if *prompt == "" && *chat == "" {
		seqs, longest = promptShape(*promptIDs)
	}
	if err := mf.preflight(cfg, m, seqs, longest, *maxTokens); err != nil {
		return err
	}
	var l *models.Model
	var sealedTok *tokenizer.Tokenizer
	if sealed != nil {
		l, sealedTok, err = openSealed(fs, &mf, *planPath, sealed, *tok, stderr)
	} else {
		l, err = mf.open(stderr)
	}
	if err != nil {
		return err
	}
	defer l.Close()

	noPrompt := *promptIDs == "" && *prompt == "" && *chat == ""
	var tk *tokenizer.Tokenizer
	switch {
	case *prompt == "" && *chat == "" && *tok == "" && !noPrompt:
		// Ids in, ids out.
	case sealed != nil:
		// The tokenizer the identity check hashed, never another file.
		tk = sealedTok
	default:
		t, err := plan.ModelTokenizer(*tok, l)
		if err != nil {
			return err
		}
		tk = t.Tok
	}
	if *prompt != "" || *chat != "" {
		if tk == nil {
			return fmt.Errorf("%w: --prompt and --chat need a tokenizer: pass --tokenizer DIR (model %s has none: use --prompt-ids)", errUsage, l.Spec)
		}
	}
	if noPrompt && tk != nil {
		// A model with a tokenizer (the built-in trained one) writes text
		// from the first command: a default prompt in its own words.
		*prompt = defaultText
		fmt.Fprintf(stderr, "no prompt given: using %q (pass --prompt TEXT, --chat MESSAGE or --prompt-ids)\n", defaultText)
	}
	for _, text := range []string{*prompt, *system + *chat} {
		// Bounded by the context before any tokenizing: a prompt far over
		// it is refused from its length alone.
		if tk == nil || text == "" {
			continue
		}
		if n := tk.MinTokens(text); n > mf.maxContext {
			return fmt.Errorf("%w: a prompt of %d bytes is at least %d tokens: it does not fit --max-context %d", errUsage, len(text), n, mf.maxContext)
		}
	}
	if *chat != "" && tk.IgnoredChatTemplate() {
		fmt.Fprintln(stderr, "warning: "+tokenizer.IgnoredChatTemplateNote)
	}
	var prompts [][]int32
	switch {
	case *prompt != "":
		prompts = [][]int32{toI32(tk.Encode(*prompt))}
	case *chat != "":
		var msgs []tokenizer.Message
		if *system != "" {
			msgs = append(msgs, tokenizer.Message{Role: "system", Content: *system})
		}
		msgs = append(msgs, tokenizer.Message{Role: "user", Content: *chat})
		if *chatRaw {
			prompts = [][]int32{toI32(tk.EncodeChat(msgs, true, *think))}
		} else {
			prompts = [][]int32{toI32(tk.EncodeChatSafe(msgs, true, *think))}
		}
	default:
		ids := *promptIDs
		if ids == "" {
			ids = defaultPrompt
			fmt.Fprintf(stderr, "no prompt given: using ids %s (model %s has no tokenizer: ids in, ids out)\n", ids, l.Spec)
		}
		for _, part := range strings.Split(ids, ";") {
			p, err := parseIDs(part)
			if err != nil {
				return err
			}
			prompts = append(prompts, p)
		}
	}
	if m == nil {
		if m, err = mf.compile(l.Source, l.Config, stderr); err != nil {
			return err
		}
	}
	warnInsecure(stderr, m)
	eosIDs := plan.EOS(l.Config, tk)
	if eosFlag != nil {
		eosIDs = nil
		for _, v := range eosFlag {
			if int(v) >= l.Config.VocabSize {
				return fmt.Errorf("%w: --eos %d is outside the vocabulary of %d tokens", errUsage, v, l.Config.VocabSize)
			}
			eosIDs = append(eosIDs, int(v))
		}
	}
	if len(prompts) > 1 {
		return generateBatch(&mf, m, l, prompts, runtime.GenerateOptions{MaxTokens: *maxTokens, EOS: eosIDs, Sampler: sampler}, stdout, stderr)
	}
	s, done, err := mf.session(m, l.Weights)
	if err != nil {
		return err
	}
	defer done()
	var stream *tokenizer.StreamDecoder
	if tk != nil {
		stream = tk.NewStreamDecoder()
	}
	var ids []int
	start := time.Now()
	var first time.Duration
	c, err := s.Complete(prompts[0], runtime.GenerateOptions{MaxTokens: *maxTokens, EOS: eosIDs, Sampler: sampler,
		Emit: func(t int) error {
			if first == 0 {
				first = time.Since(start)
			}
			if stream != nil {
				ids = append(ids, t)
				_, err := io.WriteString(stdout, stream.Push(t))
				return err
			}
			_, err := fmt.Fprintf(stdout, "%d ", t)
			return err
		}})
	if stream != nil {
		io.WriteString(stdout, stream.Flush())
	}
	fmt.Fprintln(stdout)
	if *showIDs && stream != nil {
		fmt.Fprintf(stdout, "ids: %v\n", ids)
	}
	if err != nil {
		return err
	}
	out := c.Tokens
	fmt.Fprintln(stderr, finishText(c, *maxTokens, mf.maxContext))
	total := time.Since(start)
	tpot := time.Duration(0)
	if len(out) > 1 {
		tpot = (total - first) / time.Duration(len(out)-1)
	}
	fmt.Fprintf(stderr, "model %s, mask %s, weights %s, kv cache %s: %d prompt tokens, %d generated; TTFT %v, TPOT %v; resident %s (peak %s)\n",
		l.Spec, m.Meta["mask"], m.Meta["weights"], cmp.Or(m.Meta["kv_dtype"], "f32"), len(prompts[0]), len(out), first.Round(time.Microsecond), tpot.Round(time.Microsecond),
		humanRSS(residentBytes()), humanRSS(peakResidentBytes()))
	fmt.Fprintln(stderr, securityLine(m, mf.traffic))
	return nil
}

// generateBatch decodes several prompts together, one sequence each.
func generateBatch(mf *modelFlags, m *ir.Module, l *models.Model, prompts [][]int32, opt runtime.GenerateOptions, stdout, stderr io.Writer) error {
	key, err := mf.key()
	if err != nil {
		return err
	}
	eng, err := mf.engine(l.Weights, key, m)
	if err != nil {
		return err
	}
	defer eng.Close()
	bt, err := runtime.NewBatch(m, eng.Runtime, len(prompts), runtime.Options{MaxContext: mf.maxContext})
	if err != nil {
		return err
	}
	start := time.Now()
	cs, err := bt.Complete(prompts, opt, nil)
	for i, c := range cs {
		fmt.Fprintf(stdout, "[%d]", i)
		for _, t := range c.Tokens {
			fmt.Fprintf(stdout, " %d", t)
		}
		fmt.Fprintln(stdout)
	}
	if err != nil {
		return err
	}
	var n int
	for i, c := range cs {
		n += len(c.Tokens)
		fmt.Fprintf(stderr, "[%d] %s\n", i, finishText(c, opt.MaxTokens, mf.maxContext))
	}
	fmt.Fprintf(stderr, "model %s, mask %s (%s): batch of %d, %d tokens in %v\n", l.Spec, m.Meta["mask"], m.Meta["topology"],
		len(prompts), n, time.Since(start).Round(time.Millisecond))
	fmt.Fprintln(stderr, securityLine(m, mf.traffic))
	return nil
}

// securityLine is generate's last line: the plan's level and what crossed
// the boundary during the run.
func securityLine(m *ir.Module, t *plan.Traffic) string {
	level := m.Meta["security"]
	if level == "" {
		level = passes.LevelCustom
	}
	if m.Meta["insecure"] != "" {
		level += " (INSECURE)"
	}
	var local []string
	for _, g := range m.Graphs {
		if v := m.Meta["offload."+g.Name]; v != "" {
			local = append(local, fmt.Sprintf("%s %d", g.Name, len(strings.Split(v, "; "))))
		}
	}
	kept := "none kept TEE-local"
	if len(local) > 0 {
		kept = "kept TEE-local: " + strings.Join(local, ", ")
	}
	if t == nil {
		t = new(plan.Traffic)
	}
	p, rows := t.Payloads.Load(), t.Rows.Load()
	per := 0.0
	if p > 0 {
		per = float64(rows) / float64(p)
	}
	return fmt.Sprintf("security %s: %d payloads crossed (%.0f rows each on average), %s to the device, %s back; linear ops %s",
		level, p, per, byteSize(t.ToDevice.Load()), byteSize(t.ToTEE.Load()), kept)
}

// byteSize prints a byte count with a binary unit.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n), "KMGTPE"
	i := -1
	for f >= unit && i < len(u)-1 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, u[i])
}

func toI32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, v := range ids {
		out[i] = int32(v)
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
