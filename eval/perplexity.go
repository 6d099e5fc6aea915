// Package eval measures a compiled model's quality the way users measure
// it: perplexity over a text in windows, as llama.cpp's llama-perplexity
// computes it, and the KL divergence, top-1 agreement and worst token
// against the log-probabilities of a base run saved to a file, as its
// --kl-divergence mode does. It streams: one prefill chunk of logits and
// one saved row are held at a time, whatever the text's length.
//
// The rule, llama.cpp's: the text's tokens are cut into windows of ctx
// tokens (a tail shorter than a window is dropped); each window is run
// from an empty cache, and only its second half is scored: the logits of
// rows ctx/2 .. ctx-2 predict tokens ctx/2+1 .. ctx-1, so every scored
// token has at least ctx/2 tokens of context. Where gelo differs: no BOS
// is put in front of a window (Qwen3 adds none, as llama.cpp does not for
// it either); the model computes every row's logits (a plan compiled with
// models.TraceOptions{AllLogits: true}) and the unscored first half's are
// discarded; a window runs as prefills of at most Batch rows, continuing
// the cache, so the logits held are Batch x vocab; and log-softmax is
// computed in float64.
//
// It imports no engine: a Model is anything with a session's Reset,
// Prefill and Vocab (runtime.Session is one).
package eval

import (
	"errors"
	"fmt"
	"math"
)

// Model is what perplexity runs: a runtime.Session over a plan traced
// with AllLogits.
type Model interface {
	// Vocab is the logits width.
	Vocab() int
	// Reset empties the cache.
	Reset()
	// Prefill appends tokens to the cache and returns every row's logits
	// (len(tokens) x Vocab), valid until the next call.
	Prefill(tokens []int32) ([]float32, error)
}

// minCtx is the smallest window that scores a token (ctx - 1 - ctx/2 >= 1).
const minCtx = 3

// Options say how to run.
type Options struct {
	// Ctx is the window in tokens (at least 3).
	Ctx int
	// Batch is the most rows one prefill runs (default Ctx).
	Batch int
	// Save, when set, receives every scored token's log-softmax row.
	Save *LogitsWriter
	// Base, when set, is a saved run to compare against: KL divergence,
	// top-1 agreement and the worst token go into Result.KL.
	Base *LogitsReader
	// Window, when set, is called after each window with the running
	// result (windows done so far).
	Window func(done, total int, running Estimate)
}

// Result is a run's outcome.
type Result struct {
	// PPL is the perplexity over every scored token with its standard
	// error; NLL the mean negative log-likelihood (nats) with its.
	PPL, NLL Estimate
	// Windows and Scored count what ran; Tokens is the text's length.
	Windows, Tokens int
	Scored          int64
	// KL is the comparison with Options.Base (nil without one).
	KL *KLStats
}

// Windows is the number of whole windows of ctx tokens in n tokens, and
// the tokens each scores.
func Windows(n, ctx int) (windows, scored int) {
	if ctx < minCtx {
		return 0, 0
	}
	return n / ctx, ctx - 1 - ctx/2
}

// ErrTooShort is returned for a text shorter than one window.
var ErrTooShort = errors.New("text shorter than one window")

// Run runs m over tokens in windows and scores them.
func Run(m Model, tokens []int32, o Options) (*Result, error) {
	if o.Ctx < minCtx {
		return nil, fmt.Errorf("ctx %d: want at least %d (a window scores tokens ctx/2+1 .. ctx-1)", o.Ctx, minCtx)
	}
	batch := o.Batch
	if batch == 0 {
		batch = o.Ctx
	}
	if batch < 1 {
		return nil, fmt.Errorf("batch %d: want at least 1", batch)
	}
	nw, per := Windows(len(tokens), o.Ctx)
	if nw == 0 {
		return nil, fmt.Errorf("%w: %d tokens, a window is %d", ErrTooShort, len(tokens), o.Ctx)
	}
	vocab := m.Vocab()
	want := Header{Vocab: vocab, Ctx: o.Ctx, Count: int64(nw) * int64(per)}
	if o.Save != nil {
		if h := o.Save.h; h.Vocab != want.Vocab || h.Ctx != want.Ctx || h.Count != want.Count {
			return nil, fmt.Errorf("saved logits header (%v) does not match this run (vocab %d, ctx %d, %d scored tokens)", h, vocab, o.Ctx, want.Count)
		}
	}
	sc := &scorer{vocab: vocab, save: o.Save, base: o.Base, logp: make([]float64, vocab), row: make([]float32, vocab)}
	if o.Base != nil {
		if err := compatible(o.Base.h, want); err != nil {
			return nil, err
		}
		sc.kl = newKL()
	}
	first := o.Ctx / 2
	for w := range nw {
		win := tokens[w*o.Ctx : (w+1)*o.Ctx]
		m.Reset()
		for s := 0; s < o.Ctx; s += batch {
			e := min(s+batch, o.Ctx)
			logits, err := m.Prefill(win[s:e])
			if err != nil {
				return nil, fmt.Errorf("window %d, rows %d..%d: %w", w+1, s, e-1, err)
			}
			if len(logits) != (e-s)*vocab {
				return nil, fmt.Errorf("window %d: the model returned %d logits for %d rows of %d (a plan traced without AllLogits returns the last row's only)", w+1, len(logits), e-s, vocab)
			}
			for j := max(s, first); j < min(e, o.Ctx-1); j++ {
				pos := w*o.Ctx + j + 1
				if err := sc.score(logits[(j-s)*vocab:(j-s+1)*vocab], win[j+1], pos); err != nil {
					return nil, err
				}
			}
		}
		if o.Window != nil {
			o.Window(w+1, nw, expOf(sc.nll.mean()))
		}
	}
	r := &Result{NLL: sc.nll.mean(), Windows: nw, Tokens: len(tokens), Scored: sc.nll.n}
	r.PPL = expOf(r.NLL)
	if sc.kl != nil {
		sc.kl.finish()
		r.KL = sc.kl
	}
	return r, nil
}

// compatible checks that a base file scored what this run scores.
func compatible(base, run Header) error {
	switch {
	case base.Vocab != run.Vocab:
		return fmt.Errorf("base logits have a vocabulary of %d, this model's is %d", base.Vocab, run.Vocab)
	case base.Ctx != run.Ctx:
		return fmt.Errorf("base logits were scored in windows of %d tokens, this run's --ctx is %d", base.Ctx, run.Ctx)
	case base.Count != run.Count:
		return fmt.Errorf("base logits hold %d scored tokens, this text and --ctx score %d (not the same text)", base.Count, run.Count)
	}
	return nil
}

// scorer scores one row at a time.
type scorer struct {
	vocab int
	save  *LogitsWriter
	base  *LogitsReader
	nll   moments
	kl    *KLStats
	logp  []float64 // this row's log-softmax
	row   []float32 // the same, as saved
}

// score adds the row of logits that predicts target (the text's token at
// pos).
func (sc *scorer) score(logits []float32, target int32, pos int) error {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	if math.IsNaN(lse) || math.IsInf(lse, 0) {
		return fmt.Errorf("token %d: logits are not finite (log-sum-exp %v)", pos, lse)
	}
	for i, v := range logits {
		sc.logp[i] = float64(v) - lse
		sc.row[i] = float32(sc.logp[i])
	}
	sc.nll.add(-sc.logp[target])
	if sc.save != nil {
		if err := sc.save.Write(target, sc.row); err != nil {
			return fmt.Errorf("token %d: %w", pos, err)
		}
	}
	if sc.base == nil {
		return nil
	}
	bt, base, err := sc.base.Next()
	if err != nil {
		return fmt.Errorf("base logits: %w", err)
	}
	if bt != target {
		return fmt.Errorf("base logits scored token %d at text position %d, this text has %d there (not the same text)", bt, pos, target)
	}
	sc.kl.add(base, sc.row, sc.base.h.DType, target, pos)
	return nil
}

// KLStats compare a run with a base run, token by token: KL(base || run)
// of the next-token distributions, as llama.cpp's --kl-divergence mode
// defines it, top-1 agreement, and the perplexities of both.
type KLStats struct {
	// KLD is the mean KL divergence (nats) with its standard error.
	KLD Estimate
	// Max, Median and the percentiles of the per-token KL (percentiles
	// within 2.3 %: see histogram); Min is exact.
	Max, Min    float64
	Percentiles []Percentile
	// Top1 is the fraction of tokens whose most likely next token is the
	// same in both runs, with its binomial standard error
	// sqrt(p (1 - p) / (n - 1)).
	Top1 Estimate
	// PPL and BasePPL are each run's perplexity; LogRatio is
	// ln(PPL/PPL_base) with the error of a difference of correlated
	// means (the covariance of the per-token NLLs subtracted).
	PPL, BasePPL, LogRatio Estimate
	// RMSDeltaP is the root mean square of p(target) - p_base(target).
	RMSDeltaP float64
	// Worst is the token of the largest KL.
	Worst Worst
	// Count is the tokens compared.
	Count int64

	kld, nll, nllBase moments
	nllCross          comoment // of nll and nll_base, for the error of their difference
	same              int64
	dp2               float64
	hist              *histogram
}

// Percentile is one quantile of the per-token KL.
type Percentile struct {
	Q, KL float64
}

// Worst names the token where the two runs differ most.
type Worst struct {
	// Pos is the token's index in the text (the token predicted).
	Pos int
	// Token is the text's token there; Top, BaseTop each run's argmax.
	Token, Top, BaseTop int32
	// KL is its divergence; P, BaseP each run's probability of Token.
	KL, P, BaseP float64
}

func newKL() *KLStats { return &KLStats{hist: newHistogram(), Min: math.Inf(1), Max: math.Inf(-1)} }

// add compares one row. Both rows are log-softmax at the file's dtype:
// the run's is rounded to it first, so a run against its own file gives
// the same values and KL exactly 0.
//
// The divergence is summed as sum p (b - q) - sum p + sum e^q, p = e^b:
// KL(base || run) in exact arithmetic (both rows sum to 1), and, for rows
// that the file's rounding has left not quite normalised, the divergence
// of the two measures, whose every term p (x - 1) + e^q (x = b - q) is
// e^q ((x - 1) e^x + 1) >= 0 and only second order in x. The plain
// sum p (b - q) is first order in each value's rounding: against an f16
// file (log-probabilities rounded by up to 2^-8) it read single tokens'
// KL as negative (-5e-4 on the trained model's q8_0 run) and moved the
// mean by 2 %; in f32 rows it read a masked run's mean KL, about 1e-12,
// as -5e-10 +/- 4e-10.
func (k *KLStats) add(base, run []float32, dt DType, target int32, pos int) {
	var cross, massBase, massRun float64
	top, baseTop := 0, 0
	topV := float32(math.Inf(-1))
	for i, b := range base {
		q := dt.round(run[i])
		if q > topV {
			top, topV = i, q
		}
		if b > base[baseTop] {
			baseTop = i
		}
		massRun += math.Exp(float64(q))
		if math.IsInf(float64(b), -1) {
			continue // p_base = 0: no cross term, no base mass
		}
		p := math.Exp(float64(b))
		massBase += p
		cross += p * (float64(b) - float64(q))
	}
	kl := cross - massBase + massRun
	nll, nllBase := -float64(dt.round(run[target])), -float64(base[target])
	k.kld.add(kl)
	k.nll.add(nll)
	k.nllBase.add(nllBase)
	k.nllCross.add(nll, nllBase)
	if top == baseTop {
		k.same++
	}
	p, pb := math.Exp(-nll), math.Exp(-nllBase)
	k.dp2 += (p - pb) * (p - pb)
	k.hist.add(kl)
	k.Min = math.Min(k.Min, kl)
	if kl > k.Max {
		k.Max = kl
		k.Worst = Worst{Pos: pos, Token: target, Top: int32(top), BaseTop: int32(baseTop), KL: kl, P: p, BaseP: pb}
	}
}

// finish computes the reported figures from the sums.
func (k *KLStats) finish() {
	n := k.kld.n
	k.Count = n
	k.KLD = k.kld.mean()
	p := float64(k.same) / float64(n)
	k.Top1 = Estimate{Value: p}
	if n > 1 {
		k.Top1.Err = math.Sqrt(p * (1 - p) / float64(n-1))
	}
	lq, lb := k.nll.mean(), k.nllBase.mean()
	k.PPL, k.BasePPL = expOf(lq), expOf(lb)
	cov := k.nllCross.meanCov()
	k.LogRatio = Estimate{Value: lq.Value - lb.Value, Err: math.Sqrt(math.Max(0, lq.Err*lq.Err+lb.Err*lb.Err-2*cov))}
	k.RMSDeltaP = math.Sqrt(k.dp2 / float64(n))
	for _, q := range []float64{0.999, 0.99, 0.95, 0.9, 0.5, 0.1, 0.05, 0.01} {
		k.Percentiles = append(k.Percentiles, Percentile{Q: q, KL: k.hist.quantile(q, k.Max)})
	}
}
