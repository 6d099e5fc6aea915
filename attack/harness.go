// Package attack is the judge of gelo's protection levels: it attacks what
// the device saw (a recording, device/record) with public knowledge only
// (the model's weights and config) and scores each attack against the
// truth the TEE kept apart. Every figure is printed next to its chance
// level. Nothing in the module imports this package but the CLI and the
// tests.
//
// The attacks live in subpackages: rowspace (span membership, its
// centring-aware variant, the Gram spike, shield stripping, shared-mask
// correlation, the HD3 structure distinguisher, gram_error), invert (row
// nearest neighbour, ridge inverters) and bss (FastICA, JADE, SOBI,
// anchor-ICA). This package selects the payloads each attack reads,
// runs it over a recording and keeps the score.
package attack

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"

	"gelo/attack/bss"
	"gelo/attack/dict"
	"gelo/attack/invert"
	"gelo/attack/rowspace"
	"gelo/attack/uniform"
	"gelo/device"
	"gelo/device/record"
	"gelo/models"
	levels "gelo/passes"
)

// Dictionary is the layer-0 dictionary: row v is exactly the row the
// first device-bound payload of a pass carries for token v in plaintext,
// RMSNorm(e_v) * gamma, from the public embedding table and the layer-0
// input norm weight. The span attacks normalise rows; NN, IMA and
// gram_error use them as they are.
func Dictionary(embed []float32, gamma []float32, vocab, d int, eps float64) (*mat.Dense, error) {
	if vocab <= 0 || d <= 0 || len(embed) != vocab*d || len(gamma) != d {
		return nil, fmt.Errorf("dictionary: embedding of %d values and norm of %d for %d x %d", len(embed), len(gamma), vocab, d)
	}
	out := mat.NewDense(vocab, d, nil)
	for v := range vocab {
		row := embed[v*d : (v+1)*d]
		var ss float64
		for _, x := range row {
			ss += float64(x) * float64(x)
		}
		inv := 1 / math.Sqrt(ss/float64(d)+eps)
		dst := out.RawRowView(v)
		for j, x := range row {
			dst[j] = float64(x) * inv * float64(gamma[j])
		}
	}
	return out, nil
}

// DictionaryOf is the layer-0 dictionary of a model's public weights: the
// embedding table and the first input norm.
func DictionaryOf(w *models.Weights) (*mat.Dense, error) {
	cfg := w.Config
	embed, _, err := w.Get("model.embed_tokens.weight")
	if err != nil {
		return nil, err
	}
	gamma, _, err := w.Get("model.layers.0.input_layernorm.weight")
	if err != nil {
		return nil, err
	}
	return Dictionary(embed, gamma, cfg.VocabSize, cfg.HiddenSize, cfg.RMSNormEps)
}

// KnownPlaintext is the attacker's own prompts: n uniformly random token
// sequences of length l, from a fixed seed (the training rows of the ridge
// inverters come from their recording).
func KnownPlaintext(n, l, vocab int) [][]int32 {
	rng := rand.New(rand.NewPCG(0x6b6e6f776e, uint64(vocab)))
	out := make([][]int32, n)
	for i := range out {
		out[i] = make([]int32, l)
		for j := range out[i] {
			out[i][j] = int32(rng.IntN(vocab))
		}
	}
	return out
}

// Run is one recorded condition and its truth.
type Run struct {
	// Condition is a short name (C0, C2, ...); Label says what it is.
	Condition, Label string
	Rec              *record.Recording
	Truth            []record.PassTruth
	// DeepWeight names the weight of the deep crossing the ISA and the
	// sequential attack read (say, the last layer's QKV input); "" skips
	// them.
	DeepWeight string
	// Oracle runs the public model for the sequential attack; nil skips it.
	Oracle Oracle
	// Known is a recording of prompts the attacker chose itself (known
	// plaintext: a user of the service sees what the device saw for its
	// own prompts), with their truth: extra training rows for the ridge
	// inverters. The victim's passes are attacked as before.
	Known      *record.Recording
	KnownTruth []record.PassTruth
}

// Oracle is what an attacker with the public model computes: for a prefix
// and candidate next tokens, the plaintext row each candidate puts into
// the deep crossing (one row per candidate, in order).
type Oracle func(prefix []int32, candidates []int32) ([][]float32, error)

// Options bound the work per run.
type Options struct {
	// MaxPrefill and MaxDecode cap the passes attacked by the span family
	// (0: all).
	MaxPrefill, MaxDecode int
	// ICAPasses caps the prefill passes FastICA, JADE and anchor-ICA run on
	// (0: 8); ICAComponents their whitening (0: 32).
	ICAPasses, ICAComponents int
	// SeqPrompts caps the prompts the sequential attack walks (0: 2),
	// SeqPositions the positions per prompt (0: 8) and SeqCandidates the
	// candidates per position (0: the whole vocabulary).
	SeqPrompts, SeqPositions, SeqCandidates int
	// Anchors are token ids the attacker knows to be present (the chat
	// template's), for anchor-ICA.
	Anchors []int32
	// Seed orders ties and seeds the ICA runs and the ridge split.
	Seed uint64
	// Progress, if not nil, hears each attack as it starts.
	Progress func(condition, attack string)
}

// Figure is one measured result.
type Figure struct {
	Attack string  `json:"attack"`
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	// Chance is what a guess that ignores the payload scores (NaN where
	// the metric has no chance level; Baseline then says what to compare).
	Chance float64 `json:"chance"`
	N      int     `json:"n"`
	Note   string  `json:"note,omitempty"`
	// NA, when set, says why the attack does not apply to the condition
	// (Value and Chance are NaN): the table reads "n/a, NA".
	NA string `json:"na,omitempty"`
}

// Report is every figure of one run.
type Report struct {
	Condition string   `json:"condition"`
	Label     string   `json:"label"`
	Insecure  string   `json:"insecure,omitempty"`
	Figures   []Figure `json:"figures"`
}

// Get returns the figure of an attack and metric.
func (r *Report) Get(attack, metric string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.Attack == attack && f.Metric == metric {
			return f, true
		}
	}
	return Figure{}, false
}

// stripNote says what shield stripping keeps.
const stripNote = "the top r - n singular directions of the payload dropped (n, the data rows, given), span membership on the rest"

// decodeBatch is how many decode passes share one dictionary product.
const decodeBatch = 16

// payload is one pass's view: the layer-0 payload, the deep one, the
// truth.
type payload struct {
	truth record.PassTruth
	u0    *mat.Dense // first device-bound payload (layer-0 QKV input)
	deep  *mat.Dense
}

// dense is a crossing's payload as the attacks read it: its float values,
// or an lwe ciphertext's words as centred int32 values (what a device
// would try first: c = A s + e + Delta x_q, read as signed numbers).
func dense(c device.Crossing) *mat.Dense {
	if c.Words != nil {
		d := make([]float64, len(c.Words))
		for i, w := range c.Words {
			d[i] = float64(int32(w))
		}
		return mat.NewDense(c.Rows, c.Cols, d)
	}
	d := make([]float64, len(c.Data))
	for i, x := range c.Data {
		d[i] = float64(x)
	}
	return mat.NewDense(c.Rows, c.Cols, d)
}

// LatticeHintOp is the op name of the crossings that compute an lwe
// plan's public hints (A's public columns sent as rows, at engine start):
// no pass's payload, so the attacks skip them.
const LatticeHintOp = device.LatticeHintOp

// UniformFigure is the uniformity verdict on ciphertext words as a
// figure: the smallest of the six chi-square p-values (attack/uniform)
// times six; chance is uniform.FalseAlarm, below which uniform words are
// flagged 0.1 % of the time. Below chance breaks the condition.
func UniformFigure(metric string, words []uint32) (Figure, error) {
	ps, adj, err := uniform.Uniformity(words)
	if err != nil {
		return Figure{}, fmt.Errorf("%s: %w", metric, err)
	}
	note := "p-values:"
	for i, t := range uniform.WordTests {
		note += fmt.Sprintf(" %s %.3g", t.Name, ps[i])
	}
	return Figure{Attack: "chi-square", Metric: metric + " (min p x 6)", Value: adj, Chance: uniform.FalseAlarm,
		N: len(words), Note: note + "; broken below chance"}, nil
}

// words gathers the u32 words of every device-bound crossing of a
// recording (none for a float plan).
func words(rec *record.Recording) []uint32 {
	var w []uint32
	for _, c := range rec.Crossings {
		if c.Dir == device.ToDevice && c.Op != LatticeHintOp {
			w = append(w, c.Words...)
		}
	}
	return w
}

// PadReuseAttack names the uniformity test on row differences
// (rowDiffWords): what a device that suspects a reused pad computes.
const PadReuseAttack = "pad-reuse"

// rowDiffWords are the differences c_1 - c_2 mod 2^32 of disjoint pairs of
// consecutive rows that went to the same weight at the same width, in the
// order they crossed: what a device that suspects a reused pad computes.
// Under fresh pads each difference is uniform; under a pad used twice the
// pads cancel and every word is Delta (x1_q - x2_q), a multiple of Delta,
// which the low-bits test sees at once.
func rowDiffWords(rec *record.Recording) []uint32 {
	type kind struct {
		op, weight string
		cols       int
	}
	rows := map[kind][][]uint32{}
	var order []kind
	for _, c := range rec.Crossings {
		if c.Dir != device.ToDevice || c.Op == LatticeHintOp || c.Words == nil || c.Cols <= 0 {
			continue
		}
		k := kind{c.Op, c.Weight, c.Cols}
		if _, ok := rows[k]; !ok {
			order = append(order, k)
		}
		for r := range c.Rows {
			rows[k] = append(rows[k], c.Words[r*c.Cols:(r+1)*c.Cols])
		}
	}
	var pairs [][2][]uint32
	for _, k := range order {
		rs := rows[k]
		for i := 0; i+1 < len(rs); i += 2 {
			pairs = append(pairs, [2][]uint32{rs[i], rs[i+1]})
		}
	}
	return uniform.DiffWords(pairs)
}

// passes groups a recording by pass and picks each pass's payloads.
func passes(run Run) ([]payload, error) {
	byPass := map[int][]device.Crossing{}
	for _, c := range run.Rec.Crossings {
		if c.Dir == device.ToDevice && c.Op != LatticeHintOp {
			byPass[c.Pass] = append(byPass[c.Pass], c)
		}
	}
	var out []payload
	for _, t := range run.Truth {
		cs := byPass[t.Pass]
		if len(cs) == 0 {
			return nil, fmt.Errorf("%s: pass %d has no device-bound payload", run.Condition, t.Pass)
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].Index < cs[j].Index })
		p := payload{truth: t, u0: dense(cs[0])}
		for _, c := range cs[1:] {
			if run.DeepWeight != "" && strings.HasPrefix(device.WeightName(c.Weight), run.DeepWeight) && p.deep == nil {
				p.deep = dense(c)
			}
		}
		out = append(out, perSequence(run, p)...)
	}
	return out, nil
}

// perSequence splits a batched decode pass of a per-sequence plan (each
// sequence's row stacked and masked on its own, the blocks one after
// another: public in the plan) into one single-row pass per sequence,
// as the device can: each block is attacked on its own. Other passes are
// returned as they are.
func perSequence(run Run, p payload) []payload {
	b := len(p.truth.Tokens)
	hdr := run.Rec.Header
	if p.truth.Phase == "prefill" || b < 2 || hdr["gelo.flag.topology"] == levels.Shared ||
		hdr["gelo.flag.mask"] == "" || hdr["gelo.flag.mask"] == levels.MaskNone {
		return []payload{p}
	}
	block := func(u *mat.Dense, i int) *mat.Dense {
		if u == nil {
			return nil
		}
		r, c := u.Dims()
		if r%b != 0 {
			return nil
		}
		return mat.DenseCopyOf(u.Slice(i*r/b, (i+1)*r/b, 0, c))
	}
	if r, _ := p.u0.Dims(); r%b != 0 {
		return []payload{p}
	}
	out := make([]payload, b)
	for i := range b {
		t := p.truth
		t.Tokens = []int32{p.truth.Tokens[i]}
		out[i] = payload{truth: t, u0: block(p.u0, i), deep: block(p.deep, i)}
	}
	return out
}

func distinct(ts []int32) []int {
	seen := map[int32]bool{}
	var out []int
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, int(t))
		}
	}
	return out
}

// Evaluate runs every attack on one run. T is the layer-0 dictionary
// prepared once (dict.New(Dictionary...)): a run's conditions share it.
func Evaluate(T *dict.Dict, run Run, opt Options) (*Report, error) {
	if T == nil {
		return nil, errors.New("attack: no dictionary")
	}
	D := T.D
	if run.Rec == nil || len(run.Truth) == 0 {
		return nil, errors.New("attack: a run needs a recording and its truth")
	}
	ps, err := passes(run)
	if err != nil {
		return nil, err
	}
	V, _ := D.Dims()
	rep := &Report{Condition: run.Condition, Label: run.Label, Insecure: run.Rec.Header["gelo.insecure"]}
	say := func(a string) {
		if opt.Progress != nil {
			opt.Progress(run.Condition, a)
		}
	}
	if w := words(run.Rec); len(w) > 0 {
		say("chi-square")
		f, err := UniformFigure("uniformity of the ciphertext words", w)
		if err != nil {
			return nil, err
		}
		rep.Figures = append(rep.Figures, f)
		if d := rowDiffWords(run.Rec); len(d) >= 5*256 {
			say("pad-reuse")
			f, err := UniformFigure("uniformity of row differences (a reused pad cancels)", d)
			if err != nil {
				return nil, err
			}
			f.Attack = PadReuseAttack
			rep.Figures = append(rep.Figures, f)
		}
	}
	add := func(f Figure) { rep.Figures = append(rep.Figures, f) }
	var prefill, decode, batched []payload
	for _, p := range ps {
		switch {
		case p.truth.Phase == "prefill":
			prefill = append(prefill, p)
		case len(p.truth.Tokens) > 1: // batched decode: one row per sequence
			batched = append(batched, p)
		default:
			decode = append(decode, p)
		}
	}
	if opt.MaxPrefill > 0 && len(prefill) > opt.MaxPrefill {
		prefill = prefill[:opt.MaxPrefill]
	}
	if opt.MaxDecode > 0 && len(decode) > opt.MaxDecode {
		decode = decode[:opt.MaxDecode]
	}
	if opt.MaxDecode > 0 && len(batched) > opt.MaxDecode {
		batched = batched[:opt.MaxDecode]
	}
	sopt := rowspace.Options{TieSeed: opt.Seed}
	// NN reads the same products U D^T the spike does, and both come from
	// the span test's projection (DictSpan.Products): one product of the
	// dictionary per payload. nnTop keeps each payload's lists for the NN
	// figure.
	nnTop := map[*mat.Dense][][]int{} // by payload: a per-sequence pass is several
	nnOf := func(p payload, sp *rowspace.DictSpan) ([]float32, error) {
		y, err := sp.Products(T)
		if err != nil {
			return nil, err
		}
		top, err := invert.NNOf(p.u0, T, y, 1)
		if err != nil {
			return nil, fmt.Errorf("%s: nn pass %d: %w", run.Condition, p.truth.Pass, err)
		}
		nnTop[p.u0] = top
		return y, nil
	}

	// Span membership at decode: the fed token is the nearest dictionary row.
	say("span-decode")
	if len(decode) > 0 {
		var top1, top5, strip1 float64
		var full int
		dopt := sopt
		dopt.Head = 5 // top-1 and top-5 are all this figure reads
		// Decode bases have a few rows: project decodeBatch passes' bases
		// at once, so the dictionary is streamed once for all of them.
		var batch []*rowspace.DictSpan
		for i, p := range decode {
			if i%decodeBatch == 0 {
				us := make([]*mat.Dense, 0, decodeBatch)
				for _, q := range decode[i:min(i+decodeBatch, len(decode))] {
					us = append(us, q.u0)
				}
				if batch, err = rowspace.SpanDictBatch(us, T, dopt); err != nil {
					return nil, fmt.Errorf("%s: span decode passes from %d: %w", run.Condition, p.truth.Pass, err)
				}
			}
			sp := batch[i%decodeBatch]
			res := sp.Result
			if _, err := nnOf(p, sp); err != nil {
				return nil, err
			}
			if res.Full {
				full++
			}
			tok := int(p.truth.Tokens[0])
			if rowspace.TopK(res.Ranking, tok, 1) {
				top1++
			}
			if rowspace.TopK(res.Ranking, tok, 5) {
				top5++
			}
			st, err := sp.Strip(T, max(0, res.Rank-1))
			if err != nil {
				return nil, fmt.Errorf("%s: strip decode pass %d: %w", run.Condition, p.truth.Pass, err)
			}
			if rowspace.TopK(st.Ranking, tok, 1) {
				strip1++
			}
		}
		n := float64(len(decode))
		note := ""
		if full > 0 {
			note = fmt.Sprintf("%d of %d payloads span the whole width (ranking is chance)", full, len(decode))
		}
		add(Figure{Attack: "span", Metric: "decode top-1", Value: top1 / n, Chance: 1 / float64(V), N: len(decode), Note: note})
		add(Figure{Attack: "span", Metric: "decode top-5", Value: top5 / n, Chance: 5 / float64(V), N: len(decode)})
		add(Figure{Attack: "strip-shield", Metric: "decode top-1", Value: strip1 / n, Chance: 1 / float64(V), N: len(decode), Note: stripNote})
	}

	// Span membership at prefill: the bag of prompt tokens, plain and
	// centring-aware; and the Gram spike on the same payloads. Batched
	// decode passes (one row per sequence) are bags too: the same attacks.
	say("span-prefill")
	if err := bagAttacks(T, run.Condition, "prefill", prefill, sopt, nnOf, add); err != nil {
		return nil, err
	}
	if len(batched) > 0 {
		say("span-batched")
		if err := bagAttacks(T, run.Condition, "batched decode", batched, sopt, nnOf, add); err != nil {
			return nil, err
		}
	}

	// Shared-mask correlation (U_a^T U_b = X_a^T X_b under one mask) is not
	// run here: its column space lies in rowspace(U_a), so as a token
	// attack it is the span attack again (rowspace's tests show the
	// identity and that CrossMatch never beats SpanMembership).

	// NN: every payload row against the dictionary; recall of the pass's
	// tokens among the rows' nearest neighbours. Its chance is what the
	// same NN reaches from a null payload of the same shape (isotropic
	// rows that carry nothing), or r / V if that is more: a trained
	// model's dictionary has hubs, frequent tokens that are the nearest
	// row of many random directions and also fill the prompts' bags, so
	// the uniform r / V understates chance there (on qwen3-kjv the null
	// reaches several times it).
	say("nn")
	{
		var recall, chance, null float64
		var n int
		_, d := D.Dims()
		recallOf := func(top [][]int, bag []int) float64 {
			got := map[int]bool{}
			for _, t := range top {
				if len(t) > 0 {
					got[t[0]] = true
				}
			}
			hit := 0
			for _, t := range bag {
				if got[t] {
					hit++
				}
			}
			return float64(hit) / float64(len(bag))
		}
		for i, p := range slices.Concat(prefill, decode, batched) {
			top, ok := nnTop[p.u0]
			if !ok {
				if top, err = invert.NNDict(p.u0, T, 1); err != nil {
					return nil, fmt.Errorf("%s: nn pass %d: %w", run.Condition, p.truth.Pass, err)
				}
			}
			bag := distinct(p.truth.Tokens)
			recall += recallOf(top, bag)
			r, _ := p.u0.Dims()
			chance += math.Min(1, float64(r)/float64(V))
			for k := range nnNullDraws {
				nu, err := bss.NullPayload(r, d, opt.Seed+0x6e6e*uint64(nnNullDraws*i+k+1))
				if err != nil {
					return nil, err
				}
				ntop, err := invert.NNDict(nu, T, 1)
				if err != nil {
					return nil, fmt.Errorf("%s: nn null of pass %d: %w", run.Condition, p.truth.Pass, err)
				}
				null += recallOf(ntop, bag) / nnNullDraws
			}
			n++
		}
		add(Figure{Attack: "nn", Metric: "token recall", Value: recall / float64(n), Chance: math.Max(chance, null) / float64(n), N: n,
			Note: fmt.Sprintf("chance: the larger of r / V (%.3g) and NN's recall from null payloads of the same shapes (%.3g)", chance/float64(n), null/float64(n))})
	}

	// IMA / ISA: ridge from payload rows (paired with the tokens by
	// position, as an attacker who runs known prompts pairs them) to the
	// dictionary, tested on tokens never seen in training.
	var known []payload
	if run.Known != nil {
		if known, err = passes(Run{Condition: run.Condition, Rec: run.Known, Truth: run.KnownTruth, DeepWeight: run.DeepWeight}); err != nil {
			return nil, err
		}
	}
	for _, which := range []string{"ima", "isa"} {
		say(which)
		var X [][]float64
		var toks []int
		for _, p := range slices.Concat(prefill, decode, batched, known) {
			u := p.u0
			if which == "isa" {
				u = p.deep
			}
			if u == nil {
				continue
			}
			r, _ := u.Dims()
			for i, t := range p.truth.Tokens {
				if i >= r {
					break
				}
				X = append(X, mat.Row(nil, i, u))
				toks = append(toks, int(t))
			}
		}
		if len(X) < 32 {
			continue
		}
		xm := mat.NewDense(len(X), len(X[0]), nil)
		for i, row := range X {
			xm.SetRow(i, row)
		}
		res, err := invert.Ridge(xm, toks, D, invert.RidgeOptions{Seed: opt.Seed, Dict: T})
		if err != nil {
			add(Figure{Attack: which, Metric: "top-1", Value: math.NaN(), Chance: 1 / float64(V), N: len(X), Note: err.Error()})
			continue
		}
		layer := "layer 0"
		if which == "isa" {
			layer = run.DeepWeight
		}
		add(Figure{Attack: which, Metric: "top-1", Value: res.Top1, Chance: 1 / float64(V), N: res.TestRows,
			Note: fmt.Sprintf("%s; %d train rows (victim and %d known-plaintext passes), %d test tokens never seen in training",
				layer, res.TrainRows, len(known), res.TestTokens)})
	}

	// gram_error and ICA on prefill payloads, against the plaintext layer-0
	// rows (the dictionary rows of the prompt's tokens).
	say("gram-error")
	if len(prefill) > 0 {
		// Its chance: the same distance for a payload that carries nothing,
		// a uniformly random orthonormal stack of the payload's shape (what
		// exact sends, in law, when s >= d: an ideal mask), against the same
		// H. Against near-orthogonal plaintext rows (wide random
		// embeddings) that is below 0.5.
		var sum, null float64
		var n int
		rng := rand.New(rand.NewPCG(opt.Seed, 0x6772616d))
		for _, p := range prefill {
			if len(p.truth.Tokens) < 2 {
				continue
			}
			H := rowsOf(D, p.truth.Tokens)
			ge, err := rowspace.GramError(p.u0, H)
			if err != nil || math.IsNaN(ge) {
				continue
			}
			g0, err := rowspace.GramError(orthonormalLike(p.u0, rng), H)
			if err != nil || math.IsNaN(g0) {
				continue
			}
			sum, null = sum+ge, null+g0
			n++
		}
		if n > 0 {
			add(Figure{Attack: "gram-error", Metric: "distance", Value: sum / float64(n), Chance: null / float64(n), N: n,
				Note: "0 = the row Gram is readable; chance: rows that carry nothing; the gate asks >= 0.5 or no lower than chance - 0.05"})
		}
	}
	icaPasses := opt.ICAPasses
	if icaPasses == 0 {
		icaPasses = 8
	}
	comps := opt.ICAComponents
	if comps == 0 {
		comps = 32
	}
	for _, which := range []string{"fastica", "jade", "anchor-ica"} {
		say(which)
		var p95, base float64
		var n int
		for i, p := range prefill {
			if i >= icaPasses {
				break
			}
			H := rowsOf(D, p.truth.Tokens)
			var run bss.Attack
			switch which {
			case "fastica":
				run = func(u mat.Matrix) (*mat.Dense, error) {
					res, err := bss.FastICA(u, bss.FastICAOptions{MaxComponents: comps, Seed: opt.Seed})
					if err != nil {
						return nil, err
					}
					return res.Sources, nil
				}
			case "jade":
				run = func(u mat.Matrix) (*mat.Dense, error) {
					res, err := bss.JADE(u, bss.JADEOptions{MaxComponents: min(comps, 16)})
					if err != nil {
						return nil, err
					}
					return res.Sources, nil
				}
			case "anchor-ica":
				var anchors, rest []int32
				for _, t := range p.truth.Tokens {
					if slices.Contains(opt.Anchors, t) {
						anchors = append(anchors, t)
					} else {
						rest = append(rest, t)
					}
				}
				if len(anchors) == 0 || len(rest) == 0 {
					continue
				}
				H = rowsOf(D, rest) // scored on the rows the attacker did not know
				A := rowsOf(D, anchors)
				run = func(u mat.Matrix) (*mat.Dense, error) {
					res, err := bss.AnchorICA(u, A, bss.AnchorOptions{ICA: bss.FastICAOptions{MaxComponents: comps, Seed: opt.Seed}})
					if err != nil {
						return nil, err
					}
					return res.Sources, nil
				}
			}
			est, err := run(p.u0)
			if err != nil || est == nil {
				continue
			}
			cos, err := bss.MatchedCosines(est, H)
			if err != nil {
				continue
			}
			m, _ := p.u0.Dims()
			b, err := bss.NullP95(run, m, H, 3, opt.Seed+uint64(i))
			if err != nil {
				continue
			}
			p95 += bss.P95(cos)
			base += b
			n++
		}
		if n > 0 {
			add(Figure{Attack: which, Metric: "p95 |cos|", Value: p95 / float64(n), Chance: base / float64(n), N: n,
				Note: "chance: the same attack on payloads that carry no information (bss.NullP95)"})
		}
	}

	say("joint-sobi")
	if f, ok, err := jointSOBI(D, slices.Concat(decode, batched), icaPasses, comps, opt.Seed); err != nil {
		return nil, fmt.Errorf("%s: joint-sobi: %w", run.Condition, err)
	} else if ok {
		add(f)
	}

	say("hd3-structure")
	fs, err := hd3Structure(T, run, prefill, slices.Concat(decode, batched), opt.Seed)
	if err != nil {
		return nil, fmt.Errorf("%s: hd3 structure: %w", run.Condition, err)
	}
	for _, f := range fs {
		add(f)
	}

	if run.Oracle != nil && len(prefill) > 0 {
		say("sequential")
		f, err := sequential(D, run, prefill, opt)
		if err != nil {
			return nil, fmt.Errorf("%s: sequential: %w", run.Condition, err)
		}
		add(f)
	}
	return rep, nil
}

// jointSOBI is JD/SOBI across passes: the decode passes of one prompt
// carry the same row count, so one unmixing is fitted to all of them
// (bss.JointSOBI); a mask drawn fresh per pass should leave it nothing to
// share. Scored like the other ICA attacks (p95 matched |cos| against
// the passes' plaintext rows) on up to prompts prompts, its chance the
// same attack on null payloads of the same shapes. ok is false when no
// prompt has two decode passes.
func jointSOBI(D *mat.Dense, decode []payload, prompts, comps int, seed uint64) (Figure, bool, error) {
	var order []int
	byPrompt := map[int][]payload{}
	for _, p := range decode {
		if _, seen := byPrompt[p.truth.Prompt]; !seen {
			order = append(order, p.truth.Prompt)
		}
		byPrompt[p.truth.Prompt] = append(byPrompt[p.truth.Prompt], p)
	}
	_, d := D.Dims()
	var p95, base float64
	var n int
	for _, pr := range order {
		if n >= prompts {
			break
		}
		ps := byPrompt[pr]
		m, _ := ps[0].u0.Dims()
		var us, nulls, hs []*mat.Dense
		for j, p := range ps {
			if r, _ := p.u0.Dims(); r != m {
				break
			}
			nu, err := bss.NullPayload(m, d, seed+uint64(pr)*0x9e37+uint64(j))
			if err != nil {
				return Figure{}, false, err
			}
			us, nulls, hs = append(us, p.u0), append(nulls, nu), append(hs, rowsOf(D, p.truth.Tokens))
		}
		if len(us) < 2 {
			continue
		}
		a, err := bss.JointSOBIP95(us, hs, comps)
		if err != nil {
			continue // no separation on this prompt (as for the other ICA attacks)
		}
		b, err := bss.JointSOBIP95(nulls, hs, comps)
		if err != nil {
			continue
		}
		p95, base = p95+a, base+b
		n++
	}
	if n == 0 {
		return Figure{}, false, nil
	}
	return Figure{Attack: "joint-sobi", Metric: "p95 |cos|", Value: p95 / float64(n), Chance: base / float64(n), N: n,
		Note: "decode passes of one prompt under one unmixing (JD across passes); chance: the same on null payloads"}, true, nil
}

// bagAttacks runs the bag attacks (span membership plain and
// centring-aware, shield stripping, the Gram spike) on passes whose rows
// are a set of tokens: prefill passes (a prompt) and batched decode passes
// (one row per sequence). The figures' metric is "<what> bag recall".
func bagAttacks(T *dict.Dict, cond, what string, ps []payload, sopt rowspace.Options,
	nnOf func(payload, *rowspace.DictSpan) ([]float32, error), add func(Figure)) error {
	if len(ps) == 0 {
		return nil
	}
	V, _ := T.D.Dims()
	metric := what + " bag recall"
	var rPlain, rCentred, rSpike, rStrip, chance float64
	for _, p := range ps {
		bag := distinct(p.truth.Tokens)
		chance += float64(len(bag)) / float64(V)
		popt := sopt
		popt.Head = len(bag) // set recall reads the first len(bag)
		sp, err := rowspace.SpanDict(p.u0, T, popt)
		if err != nil {
			return fmt.Errorf("%s: span %s pass %d: %w", cond, what, p.truth.Pass, err)
		}
		res := sp.Result
		plain := rowspace.SetRecall(res.Ranking, bag)
		rPlain += plain
		best := plain
		if !res.Full && res.Rank > 1 {
			cres, err := sp.Centred(T, rowspace.CentredOptions{Options: popt, Candidates: max(4, len(bag))})
			if err == nil {
				best = max(best, rowspace.SetRecall(cres.Ranking, bag))
			}
		}
		rCentred += best
		st, err := sp.Strip(T, max(0, res.Rank-len(p.truth.Tokens)))
		if err != nil {
			return fmt.Errorf("%s: strip %s pass %d: %w", cond, what, p.truth.Pass, err)
		}
		rStrip += rowspace.SetRecall(st.Ranking, bag)
		y, err := nnOf(p, sp)
		if err != nil {
			return err
		}
		gs, err := rowspace.GramSpikeOf(p.u0, T, y, rowspace.SpikeOptions{TieSeed: sopt.TieSeed, Head: len(bag)})
		if err != nil {
			return fmt.Errorf("%s: gram spike pass %d: %w", cond, p.truth.Pass, err)
		}
		rSpike += rowspace.SetRecall(gs.Ranking, bag)
	}
	n := float64(len(ps))
	add(Figure{Attack: "span", Metric: metric, Value: rPlain / n, Chance: chance / n, N: len(ps)})
	add(Figure{Attack: "span-centred", Metric: metric, Value: rCentred / n, Chance: chance / n, N: len(ps),
		Note: "the better of the plain and the centring-aware ranking"})
	add(Figure{Attack: "gram-spike", Metric: metric, Value: rSpike / n, Chance: chance / n, N: len(ps)})
	add(Figure{Attack: "strip-shield", Metric: metric, Value: rStrip / n, Chance: chance / n, N: len(ps), Note: stripNote})
	return nil
}

// orthonormalLike is a uniformly random matrix of u's shape with
// orthonormal columns (s >= d) or rows (s < d): Gaussian, then the Q of
// its QR with the signs fixed by R's diagonal.
func orthonormalLike(u *mat.Dense, rng *rand.Rand) *mat.Dense {
	s, d := u.Dims()
	r, c := s, d
	if s < d {
		r, c = d, s
	}
	z := mat.NewDense(r, c, nil)
	for i := range r {
		for j := range c {
			z.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(z)
	var q, rr mat.Dense
	qr.QTo(&q)
	qr.RTo(&rr)
	out := mat.NewDense(r, c, nil)
	for j := range c {
		sg := 1.0
		if rr.At(j, j) < 0 {
			sg = -1
		}
		for i := range r {
			out.Set(i, j, sg*q.At(i, j))
		}
	}
	if s < d {
		return mat.DenseCopyOf(out.T())
	}
	return out
}

// nnNullDraws is how many null payloads a pass's NN chance averages: a
// hub token is hit or missed whole, so one draw is noisy.
const nnNullDraws = 3

func rowsOf(D *mat.Dense, toks []int32) *mat.Dense {
	_, d := D.Dims()
	out := mat.NewDense(len(toks), d, nil)
	for i, t := range toks {
		out.SetRow(i, D.RawRowView(int(t)))
	}
	return out
}

// sequential is sequential vocabulary matching on the deep crossing of
// prefill passes: from the true prefix of each position, the attacker runs
// the public model on every candidate next token and ranks the candidates
// by the distance of the row each produces to the payload's row space.
func sequential(D *mat.Dense, run Run, prefill []payload, opt Options) (Figure, error) {
	V, _ := D.Dims()
	prompts := opt.SeqPrompts
	if prompts == 0 {
		prompts = 2
	}
	positions := opt.SeqPositions
	if positions == 0 {
		positions = 8
	}
	cands := make([]int32, V)
	for i := range cands {
		cands[i] = int32(i)
	}
	if opt.SeqCandidates > 0 && opt.SeqCandidates < V {
		cands = cands[:opt.SeqCandidates]
	}
	var hits, n int
	for pi, p := range prefill {
		if pi >= prompts || p.deep == nil {
			break
		}
		Q, _, err := rowspace.Basis(p.deep, rowspace.DefaultRankTol, 0)
		if err != nil {
			return Figure{}, err
		}
		for i := 1; i < len(p.truth.Tokens) && i <= positions; i++ {
			want := p.truth.Tokens[i]
			cs := cands // with SeqCandidates set, the truth may be outside them: a miss
			raw, err := run.Oracle(p.truth.Tokens[:i], cs)
			if err != nil {
				return Figure{}, err
			}
			rows := mat.NewDense(len(raw), len(raw[0]), nil)
			for r, row := range raw {
				for c, x := range row {
					rows.Set(r, c, float64(x))
				}
			}
			dist, err := rowspace.Distances(Q, rows)
			if err != nil {
				return Figure{}, err
			}
			best := 0
			for j := range dist {
				if dist[j] < dist[best] {
					best = j
				}
			}
			if cs[best] == want {
				hits++
			}
			n++
		}
	}
	return Figure{Attack: "sequential", Metric: "prompt top-1", Value: float64(hits) / math.Max(1, float64(n)),
		Chance: 1 / float64(len(cands)), N: n,
		Note: fmt.Sprintf("deep crossing %s; %d candidates a position, from the true prefix", run.DeepWeight, len(cands))}, nil
}
