package attack

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"gelo/attack/dict"
	"gelo/attack/invert"
	"gelo/attack/rowspace"
	"gelo/lower/cpu/mask"
	levels "gelo/passes"
)

// The HD3 structure attack needs the stack X = A^T U as a function of a
// hypothesis about the data. A whitened level's stack is one: X = [H';
// S; 0] with S = (I - H'^T H')^(1/2) fixed by H (lower/cpu/mask.Whiten,
// public code), so a hypothesised H fixes X, and the attacker asks
// whether U is an HD3 image of it (rowspace.HD3Fit). A Gaussian shield is
// drawn in the TEE: no hypothesis about H fixes X, and the attack does
// not apply (reported n/a, not a figure).

// structureDefaults bound the work: the attack fits a few crossings
// (two decode and two prefill passes), each under the truth, wrongHyp
// wrong hypotheses, a Haar-mixed reference and the data-free guess.
const (
	structurePasses = 2
	wrongHyp        = 7
	// haarControlMaxFit is the largest stack the fit is run on under a
	// Haar mask (the control): at the 0.6B widths (s = 2048) each of its
	// ten fits a pass runs every start to the end, minutes each.
	haarControlMaxFit = 512
)

// structureFit is the search every structure fit uses, the same for
// every hypothesis: four starts (on whiten's stacks about 95 % of starts
// find the mask, so four miss it about once in 1e5), stopping at a float32
// payload's exact fit. Four, not more, to keep the CI gate's time.
func structureFit(seed uint64) rowspace.HD3Options {
	return rowspace.HD3Options{Restarts: 4, Seed: seed, Stop: 1e-4}
}

// knownStack reports whether the run's level makes X a function of H:
// the level from the recording's header (the plan's public meta).
func knownStack(run Run) (ok bool, why string) {
	hdr := run.Rec.Header
	if hdr["gelo.flag.mask"] == levels.MaskNone || hdr["gelo.flag.mask"] == "" {
		return false, "no mask"
	}
	if l, found := levels.LookupLevel(hdr["gelo.flag.security"]); found && l.Whiten {
		return true, ""
	}
	if hdr["gelo.flag.mask"] == levels.MaskHaar {
		return false, "Haar mask" // no structure to fit (exact, whitened, is the Haar reference)
	}
	return false, "shield unknown"
}

// whitenedStack rebuilds the TEE's stack for the rows of toks, padded to
// s' = next_pow2(s) zero rows (a Haar mask of a size HD3 cannot have is
// the same mask on [X; 0] extended by the identity).
func whitenedStack(D *mat.Dense, toks []int32, s int) (*mat.Dense, error) {
	_, d := D.Dims()
	n := len(toks)
	h := make([]float32, n*d)
	for i, t := range toks {
		for j, x := range D.RawRowView(int(t)) {
			h[i*d+j] = float32(x)
		}
	}
	dst := make([]float32, s*d)
	if _, err := mask.Whiten(dst, h, n, d, s); err != nil {
		return nil, err
	}
	x := mat.NewDense(pow2(s), d, nil)
	for i := 0; i < s; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, float64(dst[i*d+j]))
		}
	}
	return x, nil
}

// refinedGuess is the data-free attack's second step: the mask fitted to
// the guess [0; I; 0] unmasks an estimate of the stack, which is projected
// on what a whitened stack must look like (S symmetric, the padding rows
// zero; the n data rows kept as read) and returned as the hypothesis to
// fit again. With the mask found, the refit reaches float rounding (the
// first fit cannot: the guess differs from X by the data rows and S - I);
// with a wrong mask the projection is no stack the payload is an image of.
func refinedGuess(u, g *mat.Dense, n, d int, opts rowspace.HD3Options) (*mat.Dense, error) {
	f, err := rowspace.HD3Fit(u, g, opts)
	if err != nil {
		return nil, err
	}
	est, err := rowspace.HD3Unmask(f, u)
	if err != nil {
		return nil, err
	}
	s, _ := est.Dims()
	for i := 0; i < d; i++ {
		for j := i + 1; j < d; j++ {
			m := (est.At(n+i, j) + est.At(n+j, i)) / 2
			est.Set(n+i, j, m)
			est.Set(n+j, i, m)
		}
	}
	for i := n + d; i < s; i++ {
		for j := 0; j < d; j++ {
			est.Set(i, j, 0)
		}
	}
	return est, nil
}

// dataFree is the residual of the two-step data-free fit: the mask fitted
// to the guess, then refitted to its refined estimate (refinedGuess).
func dataFree(u, g *mat.Dense, n, d int, opts rowspace.HD3Options) (float64, error) {
	x2, err := refinedGuess(u, g, n, d, opts)
	if err != nil {
		return 0, err
	}
	f, err := rowspace.HD3Fit(u, x2, opts)
	if err != nil {
		return 0, err
	}
	return f.Residual, nil
}

func pow2(s int) int { return 1 << bits.Len(uint(s-1)) }

// padded returns U with zero rows up to s'.
func padded(u *mat.Dense, s2 int) *mat.Dense {
	s, d := u.Dims()
	if s == s2 {
		return u
	}
	out := mat.NewDense(s2, d, nil)
	out.Slice(0, s, 0, d).(*mat.Dense).Copy(u)
	return out
}

// hd3Structure is the HD3 structure attack on the layer-0 crossings of a
// few passes: under the true H (the distinguisher against a Haar-mixed
// copy), under wrong hypotheses (the attacker's test: does the truth fit
// better than every other candidate?), and with no hypothesis at all
// (rowspace.WhitenGuess: fit the mask, unmask, read the rows by NN).
func hd3Structure(T *dict.Dict, run Run, prefill, decode []payload, seed uint64) ([]Figure, error) {
	D := T.D
	V, d := D.Dims()
	names := [][2]string{
		{"hd3-structure", "fit residual, true H"}, {"hd3-structure", "fit residual, best wrong H"},
		{"hd3-structure", "true H ranked first"}, {"hd3-unmask", "decode top-1"}, {"hd3-unmask", "prefill bag recall"},
		{"hd3-unmask", "deep fit residual, no hypothesis"}, {"hd3-unmask", "deep crossings unmasked"},
	}
	if ok, why := knownStack(run); !ok {
		var out []Figure
		for _, nm := range names {
			out = append(out, Figure{Attack: nm[0], Metric: nm[1], Value: math.NaN(), Chance: math.NaN(), NA: why})
		}
		return out, nil
	}
	// Under a Haar mask (exact) the fit is the attack's control: a 3s-bit
	// sign search cannot reproduce a dense orthogonal matrix, and there it
	// never stops early, running every start to the end. It is run at the
	// sizes where that costs seconds.
	maxFit := rowspace.HD3MaxFit
	if run.Rec.Header["gelo.flag.mask"] == levels.MaskHaar {
		maxFit = haarControlMaxFit
	}
	var picked []payload
	for _, ps := range [][]payload{decode, prefill} {
		k := 0
		for _, p := range ps {
			s, _ := p.u0.Dims()
			if k >= structurePasses || len(p.truth.Tokens) == 0 {
				break
			}
			if pow2(s) > maxFit || s < len(p.truth.Tokens)+d {
				continue
			}
			picked = append(picked, p)
			k++
		}
	}
	if len(picked) == 0 {
		var out []Figure
		for _, nm := range names {
			out = append(out, Figure{Attack: nm[0], Metric: nm[1], Value: math.NaN(), Chance: math.NaN(),
				NA: fmt.Sprintf("no crossing of at most %d rows%s", maxFit, map[bool]string{true: " (Haar: the control runs at smaller widths)"}[maxFit == haarControlMaxFit])})
		}
		return out, nil
	}
	var resTrue, resWrong, resHaar, deepRes, deepHaar, deepN, deepHit, deepHaarHit float64
	var first, dHits, dN, bagSum, bagChance float64
	var nPre int
	for i, p := range picked {
		s, _ := p.u0.Dims()
		s2 := pow2(s)
		u := padded(p.u0, s2)
		toks := p.truth.Tokens
		opts := structureFit(seed + uint64(i))
		X, err := whitenedStack(D, toks, s)
		if err != nil {
			return nil, fmt.Errorf("pass %d: %w", p.truth.Pass, err)
		}
		v, err := rowspace.HD3Distinguish(u, X, opts)
		if err != nil {
			return nil, fmt.Errorf("pass %d: %w", p.truth.Pass, err)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(p.truth.Pass)))
		best := math.Inf(1)
		for range wrongHyp {
			w := append([]int32(nil), toks...)
			j := rng.IntN(len(w))
			for w[j] == toks[j] {
				w[j] = int32(rng.IntN(V))
			}
			Xw, err := whitenedStack(D, w, s)
			if err != nil {
				return nil, fmt.Errorf("pass %d: %w", p.truth.Pass, err)
			}
			f, err := rowspace.HD3Fit(u, Xw, opts)
			if err != nil {
				return nil, fmt.Errorf("pass %d: %w", p.truth.Pass, err)
			}
			best = math.Min(best, f.Residual)
		}
		resTrue, resWrong, resHaar = resTrue+v.Observed, resWrong+best, resHaar+v.Haar
		if v.Observed < best {
			first++
		}
		// No hypothesis: fit the data-free guess, unmask, read each data
		// row's nearest dictionary row.
		g, err := rowspace.WhitenGuess(len(toks), d, s2)
		if err != nil {
			return nil, fmt.Errorf("pass %d: %w", p.truth.Pass, err)
		}
		f, err := rowspace.HD3Fit(u, g, opts)
		if err != nil {
			return nil, fmt.Errorf("pass %d: %w", p.truth.Pass, err)
		}
		if p.deep != nil {
			// The deep crossing needs no hypothesis either: its stack is
			// [H'_deep; S; 0] as well, whatever the deep rows are.
			if sd, _ := p.deep.Dims(); sd == s {
				// Chance: the same two fits on the payload re-mixed by a Haar
				// matrix, the same stack under a mask with no structure.
				du := padded(p.deep, s2)
				obs, err := dataFree(du, g, len(toks), d, opts)
				if err != nil {
					return nil, fmt.Errorf("pass %d: deep: %w", p.truth.Pass, err)
				}
				ref, err := dataFree(rowspace.Mix(rowspace.Haar(s2, rowspace.NewRand(opts.Seed^0x4a1)), du), g, len(toks), d, opts)
				if err != nil {
					return nil, fmt.Errorf("pass %d: deep: %w", p.truth.Pass, err)
				}
				v := rowspace.HD3Verdict{Observed: obs, Haar: ref}
				deepRes, deepHaar, deepN = deepRes+v.Observed, deepHaar+v.Haar, deepN+1
				if v.Observed <= opts.Stop {
					deepHit++
				}
				if v.Haar <= opts.Stop {
					deepHaarHit++
				}
			}
		}
		est, err := rowspace.HD3Unmask(f, u)
		if err != nil {
			return nil, fmt.Errorf("pass %d: %w", p.truth.Pass, err)
		}
		top, err := invert.NNDict(mat.DenseCopyOf(est.Slice(0, len(toks), 0, d)), T, 1)
		if err != nil {
			return nil, fmt.Errorf("pass %d: %w", p.truth.Pass, err)
		}
		if len(toks) == 1 { // a batched decode pass is a bag, as a prompt is
			dN++
			if len(top[0]) > 0 && top[0][0] == int(toks[0]) {
				dHits++
			}
			continue
		}
		var ranking []int
		for _, t := range top {
			if len(t) > 0 {
				ranking = append(ranking, t[0])
			}
		}
		// Scored per token (each bag token a trial, so the gate's binomial
		// test has the power the few fitted passes would not give it).
		bag := distinct(toks)
		bagSum += rowspace.SetRecall(ranking, bag) * float64(len(bag))
		bagChance += float64(len(bag)*len(bag)) / float64(V)
		nPre += len(bag)
	}
	n := float64(len(picked))
	note := fmt.Sprintf("layer-0 crossings of %d passes, X rebuilt from the hypothesis as the TEE builds it (mask.Whiten); chance: the same fit of the true X under a Haar mask", len(picked))
	out := []Figure{
		{Attack: "hd3-structure", Metric: "fit residual, true H", Value: resTrue / n, Chance: resHaar / n, N: len(picked), Note: note},
		{Attack: "hd3-structure", Metric: "fit residual, best wrong H", Value: resWrong / n, Chance: resHaar / n, N: len(picked),
			Note: fmt.Sprintf("the best of %d hypotheses that differ from the truth in one token", wrongHyp)},
		{Attack: "hd3-structure", Metric: "true H ranked first", Value: first / n, Chance: 1 / float64(wrongHyp+1), N: len(picked),
			Note: fmt.Sprintf("the truth fits better than all %d wrong hypotheses", wrongHyp)},
	}
	if deepN > 0 {
		out = append(out, Figure{Attack: "hd3-unmask", Metric: "deep fit residual, no hypothesis", Value: deepRes / deepN, Chance: deepHaar / deepN, N: int(deepN),
			Note: fmt.Sprintf("the mask of the deep crossing (%s) fitted to [0; I; 0]: at float rounding A^T U is the plaintext deep rows; chance: the same fit under a Haar mask", run.DeepWeight)},
			Figure{Attack: "hd3-unmask", Metric: "deep crossings unmasked", Value: deepHit / deepN, Chance: deepHaarHit / deepN, N: int(deepN),
				Note: fmt.Sprintf("fits that reach a float32 payload's exact residual (%g): the device holds those passes' plaintext deep rows; chance: the same under a Haar mask", structureFit(seed).Stop)})
	}
	if dN > 0 {
		out = append(out, Figure{Attack: "hd3-unmask", Metric: "decode top-1", Value: dHits / dN, Chance: 1 / float64(V), N: int(dN),
			Note: "no hypothesis: the mask fitted to [0; I; 0] (rowspace.WhitenGuess), A^T U read by NN; n given"})
	}
	if nPre > 0 {
		out = append(out, Figure{Attack: "hd3-unmask", Metric: "prefill bag recall", Value: bagSum / float64(nPre), Chance: bagChance / float64(nPre), N: nPre,
			Note: "no hypothesis, as decode top-1; per prompt token (N tokens); batched decode passes are bags too and counted here"})
	}
	return out, nil
}
