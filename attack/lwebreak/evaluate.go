package lwebreak

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"gelo/attack"
	"gelo/attack/bss"
	"gelo/attack/invert"
	attacklwe "gelo/attack/lwe"
	"gelo/attack/rowspace"
	"gelo/attack/uniform"
	"gelo/lwe"
)

// Config sizes one harness run over the lwe level. Zero fields take the
// defaults in parentheses.
type Config struct {
	Seed uint64
	// Level is the level's parameters (lwe.Default: lambda 4096, h 80,
	// Delta 16) at width LevelIn (1024, the 0.6B's d_model).
	Level   lwe.Params
	LevelIn int
	// Toy is the primal attack's instance (lambda 64, h 8) at width ToyIn
	// (64); MitMToy the MitM's (lambda 64, h 6) at the same width.
	Toy, MitMToy lwe.Params
	ToyIn        int
	// Known is how many known-plaintext rows the primal and MitM attacks
	// each break (6: one per row kind).
	Known int
	// Rows is how many rows of each kind the statistical attacks read (64).
	Rows int
	// Vocab, DictIn and Bag size the dictionary attacks: Bag secret rows
	// drawn from a public dictionary of Vocab rows of width DictIn
	// (512, 256, 32), encrypted at the level's lambda and h.
	Vocab, DictIn, Bag int
	Primal             PrimalOptions
	// Progress, if not nil, hears each attack as it starts.
	Progress func(condition, attack string)
}

func (c *Config) defaults() {
	if c.Level == (lwe.Params{}) {
		c.Level = lwe.Default
	}
	c.LevelIn = cmpOr(c.LevelIn, 1024)
	if c.Toy == (lwe.Params{}) {
		c.Toy = lwe.Params{Lambda: 64, H: 8, Delta: 16}
	}
	if c.MitMToy == (lwe.Params{}) {
		c.MitMToy = lwe.Params{Lambda: 64, H: 6, Delta: 16}
	}
	c.ToyIn = cmpOr(c.ToyIn, 64)
	c.Known = cmpOr(c.Known, len(allRows))
	c.Rows = cmpOr(c.Rows, 64)
	c.Vocab = cmpOr(c.Vocab, 512)
	c.DictIn = cmpOr(c.DictIn, 256)
	c.Bag = cmpOr(c.Bag, 32)
}

func cmpOr(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// Conditions of a run: the toy instances that must fall, the level with
// fresh pads that must hold, and the two controls that must fall.
const (
	CondPrimal = "T1" // toy lambda, known plaintext: primal attack
	CondMitM   = "T2" // lambda 64, h 6, known plaintext: MitM
	CondLevel  = "L"  // the level's parameters, fresh pads
	CondReused = "X1" // test-only reused pads
	CondZero   = "X2" // control: a zero pad (c = Delta x_q, the plaintext scaled)
)

// Evaluate runs every attack of this package and returns one report per
// condition, in the harness's form (each figure next to its chance level).
func Evaluate(ctx context.Context, cfg Config) ([]*attack.Report, error) {
	cfg.defaults()
	progress := func(cond, a string) {
		if cfg.Progress != nil {
			cfg.Progress(cond, a)
		}
	}
	var reports []*attack.Report
	progress(CondPrimal, "primal (fplll)")
	t1, err := evalKnown(ctx, cfg, CondPrimal, cfg.Toy, "primal (fplll)")
	if err != nil {
		return nil, err
	}
	progress(CondMitM, "mitm")
	t2, err := evalKnown(ctx, cfg, CondMitM, cfg.MitMToy, "mitm")
	if err != nil {
		return nil, err
	}
	reports = append(reports, t1, t2)
	for _, cond := range []string{CondLevel, CondReused, CondZero} {
		progress(cond, "statistical")
		r, err := evalLevel(cfg, cond)
		if err != nil {
			return nil, err
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// secretChance is the probability that a guess of s that ignores the
// payload is right: one in C(n, h) 2^h.
func secretChance(p lwe.Params) float64 {
	return math.Exp(-lnChoose(p.Lambda, p.H) - float64(p.H)*math.Ln2)
}

// evalKnown breaks cfg.Known known-plaintext rows of the toy instance p
// with the primal attack or the MitM, scoring the recovered s against the
// pad's.
func evalKnown(ctx context.Context, cfg Config, cond string, p lwe.Params, name string) (*attack.Report, error) {
	st, err := NewSetup(p, cfg.ToyIn, cfg.Seed, []byte(fmt.Sprintf("lwebreak-%s-%d", cond, cfg.Seed)))
	if err != nil {
		return nil, err
	}
	r := &attack.Report{Condition: cond,
		Label:    fmt.Sprintf("toy lambda %d, h %d, q 2^32, CBD(2), %d samples a row, known plaintext", p.Lambda, p.H, cfg.ToyIn),
		Insecure: "toy parameters"}
	est, err := attacklwe.Estimate(attacklwe.Level(p.Lambda, cfg.ToyIn, p.H), attacklwe.MATZOV{})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b6e))
	hits := 0
	var spent time.Duration
	for i := range cfg.Known {
		x := Activation(allRows[i%len(allRows)], cfg.ToyIn, rng)
		ct, err := st.Encrypt(x)
		if err != nil {
			return nil, err
		}
		b, err := KnownPlaintext(st.Enc, ct.C, x)
		if err != nil {
			return nil, err
		}
		var s []int8
		var took time.Duration
		if name == "mitm" {
			res, err := MitM(st.A, b, p.H, MitMOptions{})
			if err != nil && !errors.Is(err, errNotFound) {
				return nil, err
			}
			s, took = res.S, res.Elapsed
		} else {
			res, err := Primal(ctx, st.A, b, p.H, cfg.Primal)
			if errors.Is(err, ErrNoReducer) {
				r.Figures = append(r.Figures, attack.Figure{Attack: name, Metric: "rows with s recovered",
					Value: math.NaN(), Chance: math.NaN(), NA: ErrNoReducer.Error()})
				return r, nil
			}
			if err != nil && !errors.Is(err, errNotFound) {
				return nil, err
			}
			s, took = res.S, res.Elapsed
		}
		spent += took
		truth, _, err := st.Secret(ct.Counter)
		if err != nil {
			return nil, err
		}
		if s != nil && slices.Equal(s, truth) {
			hits++
		}
	}
	cheapest := est.Min()
	r.Figures = append(r.Figures, attack.Figure{Attack: name, Metric: "rows with s recovered",
		Value: float64(hits) / float64(cfg.Known), Chance: secretChance(p), N: cfg.Known,
		Note: fmt.Sprintf("%v a row on average; estimate for this instance: %.1f bits (%s)", (spent / time.Duration(cfg.Known)).Round(time.Millisecond), cheapest.Bits, cheapest.Name)})
	return r, nil
}

// evalLevel runs the statistical attacks at the level's parameters under
// the condition's pads: fresh (CondLevel), one pad per pair of rows
// (CondReused), or a zero pad (CondZero).
func evalLevel(cfg Config, cond string) (*attack.Report, error) {
	p := cfg.Level
	st, err := NewSetup(p, cfg.LevelIn, cfg.Seed, []byte(fmt.Sprintf("lwebreak-level-%d", cfg.Seed)))
	if err != nil {
		return nil, err
	}
	r := &attack.Report{Condition: cond}
	switch cond {
	case CondLevel:
		r.Label = fmt.Sprintf("lambda %d, h %d, Delta %d, d_in %d: fresh pads", p.Lambda, p.H, p.Delta, cfg.LevelIn)
	case CondReused:
		r.Label = "the level, the difference attack's pairs of rows each under one reused pad (test only; other rows fresh)"
		r.Insecure = "pad reuse"
	case CondZero:
		r.Label = "control: a zero pad, c = Delta x_q"
		r.Insecure = "no pad"
	}
	enc := padMode(st, cond)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5757))
	// uniformity per row kind
	for _, kind := range allRows {
		var words []uint32
		for range cfg.Rows {
			c, _, err := enc(Activation(kind, st.In, rng), nil)
			if err != nil {
				return nil, err
			}
			words = append(words, c...)
		}
		if f, err := uniformFigure("uniformity "+string(kind)+" rows", words); err != nil {
			return nil, err
		} else {
			r.Figures = append(r.Figures, f)
		}
	}
	// the difference attack: pairs (x1 of each kind, x2 a known row)
	var pairs [][2][]uint32
	divisible, words, recovered, same := 0, 0, 0, 0
	for i := range cfg.Rows {
		x1 := Activation(allRows[i%len(allRows)], st.In, rng)
		x2 := Activation(RowGauss, st.In, rng)
		c1, ctr, err := enc(x1, nil)
		if err != nil {
			return nil, err
		}
		c2, _, err := enc(x2, &ctr)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, [2][]uint32{c1, c2})
		_, div, err := Difference(c1, c2, p.Delta)
		if err != nil {
			return nil, err
		}
		divisible += div
		words += len(c1)
		x1q, x2q := Quantize(st.Enc, x1), Quantize(st.Enc, x2)
		ok, err := RecoverFromKnown(c1, c2, p.Delta, x2q, x1q)
		if err != nil {
			return nil, err
		}
		if ok {
			recovered++
		}
		if slices.Equal(x1q, x2q) {
			same++
		}
	}
	r.Figures = append(r.Figures,
		attack.Figure{Attack: "pad-difference", Metric: "words of c1 - c2 divisible by Delta",
			Value: float64(divisible) / float64(words), Chance: 1 / float64(p.Delta), N: words},
		attack.Figure{Attack: "pad-difference", Metric: "rows recovered from a known partner",
			Value: float64(recovered) / float64(cfg.Rows), Chance: float64(same) / float64(cfg.Rows), N: cfg.Rows,
			Note: "x1_q = x2_q + centre(c1 - c2) / Delta, every coordinate exact; chance: x1_q = x2_q"})
	f, err := uniformFigure("uniformity of c1 - c2", uniform.DiffWords(pairs))
	if err != nil {
		return nil, err
	}
	r.Figures = append(r.Figures, f)
	// what a device would try first: the existing dictionary attacks on the
	// words as centred int32 values
	figs, err := dictionaryAttacks(cfg, cond)
	if err != nil {
		return nil, err
	}
	r.Figures = append(r.Figures, figs...)
	if cond == CondLevel {
		figs, err := levelEstimates(cfg)
		if err != nil {
			return nil, err
		}
		r.Figures = append(r.Figures, figs...)
	}
	return r, nil
}

// encodeFunc encodes a row; with ctr nil under a pad of its own (whose
// counter it returns), with ctr set under that counter's pad again.
type encodeFunc func(x []float32, ctr *uint64) ([]uint32, uint64, error)

// padMode returns the condition's encoder: fresh pads always (CondLevel),
// the partner's pad when ctr is given (CondReused), no pad (CondZero).
func padMode(st *Setup, cond string) encodeFunc {
	return func(x []float32, ctr *uint64) ([]uint32, uint64, error) {
		switch {
		case cond == CondZero:
			q := Quantize(st.Enc, x)
			c := make([]uint32, len(q))
			for i, v := range q {
				c[i] = st.Enc.Delta * uint32(v)
			}
			return c, 0, nil
		case cond == CondReused && ctr != nil:
			ct, err := st.EncryptReused(x, *ctr)
			return ct.C, ct.Counter, err
		}
		ct, err := st.Encrypt(x)
		return ct.C, ct.Counter, err
	}
}

// uniformFigure is the uniformity verdict on words as a figure
// (attack.UniformFigure).
func uniformFigure(metric string, words []uint32) (attack.Figure, error) {
	f, err := attack.UniformFigure(metric, words)
	if err != nil {
		return attack.Figure{}, fmt.Errorf("lwebreak: %w", err)
	}
	return f, nil
}

// dictionaryAttacks runs the harness's existing attacks (attack/rowspace,
// attack/invert, attack/bss) on ciphertexts of rows from a public
// dictionary, read as centred int32 values, what a device would try
// first: a bag of Bag rows for the span, Gram and separation attacks, and
// every dictionary row once for IMA's known-plaintext training.
func dictionaryAttacks(cfg Config, cond string) ([]attack.Figure, error) {
	p := cfg.Level
	st, err := NewSetup(p, cfg.DictIn, cfg.Seed+1, []byte(fmt.Sprintf("lwebreak-dict-%d", cfg.Seed)))
	if err != nil {
		return nil, err
	}
	enc := padMode(st, cond)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xd1c7))
	D := rowspace.Gaussian(cfg.Vocab, cfg.DictIn, rng)
	encrypt := func(tokens []int) (*mat.Dense, error) {
		U := mat.NewDense(len(tokens), cfg.DictIn, nil)
		x := make([]float32, cfg.DictIn)
		for i, tok := range tokens {
			for j, v := range D.RawRowView(tok) {
				x[j] = float32(v)
			}
			c, _, err := enc(x, nil)
			if err != nil {
				return nil, err
			}
			row := U.RawRowView(i)
			for j, w := range c {
				row[j] = float64(int32(w))
			}
		}
		return U, nil
	}
	tokens := rng.Perm(cfg.Vocab)[:cfg.Bag]
	U, err := encrypt(tokens)
	if err != nil {
		return nil, err
	}
	figs, err := bagFigures(cfg, U, D, tokens)
	if err != nil {
		return nil, err
	}
	sep, err := separationFigures(cfg, U, D, tokens)
	if err != nil {
		return nil, err
	}
	all := rng.Perm(cfg.Vocab)
	X, err := encrypt(all)
	if err != nil {
		return nil, err
	}
	res, err := invert.Ridge(X, all, D, invert.RidgeOptions{Seed: cfg.Seed})
	if err != nil {
		return nil, fmt.Errorf("lwebreak: ima: %w", err)
	}
	ima := attack.Figure{Attack: "ima", Metric: "top-1", Value: res.Top1, Chance: res.Chance, N: res.TestRows,
		Note: fmt.Sprintf("ridge from ciphertext to dictionary row, trained on %d known rows, tested on %d rows of unseen tokens", res.TrainRows+res.ValRows, res.TestRows)}
	return append(append(figs, sep...), ima), nil
}

// bagFigures are the row-space and Gram attacks on the bag U of the
// dictionary rows tokens: span membership, the Gram spike, nearest
// neighbour and gram_error.
func bagFigures(cfg Config, U, D *mat.Dense, tokens []int) ([]attack.Figure, error) {
	span, err := rowspace.SpanMembership(U, D, rowspace.Options{TieSeed: cfg.Seed})
	if err != nil {
		return nil, fmt.Errorf("lwebreak: span membership: %w", err)
	}
	spike, err := rowspace.GramSpike(U, D, rowspace.SpikeOptions{TieSeed: cfg.Seed})
	if err != nil {
		return nil, fmt.Errorf("lwebreak: gram spike: %w", err)
	}
	top, err := invert.NN(U, D, 1)
	if err != nil {
		return nil, fmt.Errorf("lwebreak: nn: %w", err)
	}
	top1, _, err := invert.Accuracy(top, tokens)
	if err != nil {
		return nil, err
	}
	H := rowspace.Rows(D, tokens)
	ge, err := rowspace.GramError(U, H)
	if err != nil {
		return nil, fmt.Errorf("lwebreak: gram error: %w", err)
	}
	null, err := bss.NullPayload(len(tokens), cfg.DictIn, cfg.Seed)
	if err != nil {
		return nil, err
	}
	ge0, err := rowspace.GramError(null, H)
	if err != nil {
		return nil, fmt.Errorf("lwebreak: gram error: %w", err)
	}
	bagChance := float64(len(tokens)) / float64(cfg.Vocab)
	note := fmt.Sprintf("%d rows of a public %d x %d dictionary, ciphertext words read as centred int32", len(tokens), cfg.Vocab, cfg.DictIn)
	return []attack.Figure{
		{Attack: "span", Metric: "bag recall", Value: rowspace.SetRecall(span.Ranking, tokens), Chance: bagChance, N: len(tokens), Note: note},
		{Attack: "gram-spike", Metric: "bag recall", Value: rowspace.SetRecall(spike.Ranking, tokens), Chance: bagChance, N: len(tokens), Note: note},
		{Attack: "nn", Metric: "token recall", Value: top1, Chance: 1 / float64(cfg.Vocab), N: len(tokens), Note: note},
		{Attack: "gram-error", Metric: "distance", Value: ge, Chance: ge0, N: 1,
			Note: "0 = the row Gram is readable; chance: rows that carry nothing (bss.NullPayload); broken below 0.5 and below chance - 0.05"},
	}, nil
}

// sobiParts is how many payloads the bag is cut into for joint SOBI (the
// decode passes of one prompt, in the harness).
const sobiParts = 4

// separationFigures are the blind source separation attacks on the bag:
// FastICA and JADE on U, joint SOBI across sobiParts slices of it, each
// scored by the p95 matched |cos| against the true rows, its chance the
// same attack on payloads that carry nothing.
func separationFigures(cfg Config, U, D *mat.Dense, tokens []int) ([]attack.Figure, error) {
	H := rowspace.Rows(D, tokens)
	m := len(tokens)
	run := map[string]bss.Attack{
		"fastica": func(u mat.Matrix) (*mat.Dense, error) {
			res, err := bss.FastICA(u, bss.FastICAOptions{MaxComponents: m, Seed: cfg.Seed})
			if err != nil {
				return nil, err
			}
			return res.Sources, nil
		},
		"jade": func(u mat.Matrix) (*mat.Dense, error) {
			res, err := bss.JADE(u, bss.JADEOptions{MaxComponents: min(m, 16)})
			if err != nil {
				return nil, err
			}
			return res.Sources, nil
		},
	}
	var out []attack.Figure
	for _, name := range []string{"fastica", "jade"} {
		est, err := run[name](U)
		if err != nil {
			return nil, fmt.Errorf("lwebreak: %s: %w", name, err)
		}
		cos, err := bss.MatchedCosines(est, H)
		if err != nil {
			return nil, fmt.Errorf("lwebreak: %s: %w", name, err)
		}
		null, err := bss.NullP95(run[name], m, H, 3, cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("lwebreak: %s null: %w", name, err)
		}
		out = append(out, attack.Figure{Attack: name, Metric: "p95 |cos|", Value: bss.P95(cos), Chance: null, N: 1,
			Note: "chance: the same attack on payloads that carry nothing (bss.NullP95); broken above chance + 0.05"})
	}
	f, err := jointSOBIFigure(cfg, U, H)
	if err != nil {
		return nil, err
	}
	return append(out, f), nil
}

// jointSOBIFigure cuts the bag into sobiParts payloads that an attacker
// hopes share one unmixing and runs joint SOBI across them.
func jointSOBIFigure(cfg Config, U, H *mat.Dense) (attack.Figure, error) {
	m, d := U.Dims()
	per := m / sobiParts
	var us, nulls, hs []*mat.Dense
	for t := range sobiParts {
		us = append(us, mat.DenseCopyOf(U.Slice(t*per, (t+1)*per, 0, d)))
		hs = append(hs, mat.DenseCopyOf(H.Slice(t*per, (t+1)*per, 0, d)))
		nu, err := bss.NullPayload(per, d, cfg.Seed+uint64(t)*0x9e37)
		if err != nil {
			return attack.Figure{}, err
		}
		nulls = append(nulls, nu)
	}
	a, err := bss.JointSOBIP95(us, hs, per)
	if err != nil {
		return attack.Figure{}, fmt.Errorf("lwebreak: joint sobi: %w", err)
	}
	b, err := bss.JointSOBIP95(nulls, hs, per)
	if err != nil {
		return attack.Figure{}, fmt.Errorf("lwebreak: joint sobi null: %w", err)
	}
	return attack.Figure{Attack: "joint-sobi", Metric: "p95 |cos|", Value: a, Chance: b, N: sobiParts,
		Note: fmt.Sprintf("%d payloads of %d rows under one unmixing; chance: the same on null payloads", sobiParts, per)}, nil
}

// levelEstimates are the primal and MitM attacks at the level's parameters:
// not run (fplll cannot reduce a lattice of rank in the thousands, and a
// MitM half has C(lambda, h/2) 2^(h/2) vectors); the estimate of each
// family (attack/lwe, MATZOV cost model) says what running would cost.
func levelEstimates(cfg Config) ([]attack.Figure, error) {
	p := cfg.Level
	est, err := attacklwe.Estimate(attacklwe.Level(p.Lambda, cfg.LevelIn, p.H), attacklwe.MATZOV{})
	if err != nil {
		return nil, err
	}
	family := func(names ...string) string {
		best := attacklwe.Attack{Bits: math.Inf(1)}
		for _, a := range est.Attacks {
			for _, n := range names {
				if a.Name == n && a.Bits < best.Bits {
					best = a
				}
			}
		}
		if math.IsInf(best.Bits, 1) {
			return fmt.Sprintf("none of %s feasible with %d samples", strings.Join(names, ", "), cfg.LevelIn)
		}
		return fmt.Sprintf("estimated 2^%.1f rop (%s)", best.Bits, best.Name)
	}
	all := fmt.Sprintf("cheapest of all estimates 2^%.1f (%s)", est.Min().Bits, est.Min().Name)
	half := (lnChoose(p.Lambda, p.H/2) + float64(p.H/2)*math.Ln2) / math.Ln2
	return []attack.Figure{
		{Attack: "primal (fplll)", Metric: "rows with s recovered", Value: math.NaN(), Chance: math.NaN(),
			NA: fmt.Sprintf("not run: %s; %s", family("usvp", "bdd", "usvp+drop", "bdd-hybrid", "bdd-mitm-hybrid"), all)},
		{Attack: "mitm", Metric: "rows with s recovered", Value: math.NaN(), Chance: math.NaN(),
			NA: fmt.Sprintf("not run: a half has 2^%.1f vectors; %s; %s", half, family("mitm", "meet-lwe S^1/4"), all)},
	}, nil
}
