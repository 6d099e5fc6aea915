package lwe

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Params is one LWE instance: M samples b = A s + e mod Q with A uniform
// (M x N), s drawn from Secret and e from Error.
type Params struct {
	N      int     // secret dimension (the level's lambda)
	Q      float64 // modulus (2^32 for the level; a float64 holds 2^k exactly)
	M      int     // samples available to the attacker; 0 means unlimited
	Secret Dist
	Error  Dist
}

// Level returns the parameters of the lwe level's ciphertexts: secret
// dimension lambda, q = 2^32, m = dIn samples (the rows of the public A, one
// instance per engine start), error CBD(2) and a ternary secret with exactly
// h nonzeros.
func Level(lambda, dIn, h int) Params {
	return Params{N: lambda, Q: math.Exp2(32), M: dIn, Secret: SparseTernary(h), Error: CBD(2)}
}

// Attack is one attack's estimate.
type Attack struct {
	Name string
	// Bits is log2 of the estimated cost in the cost model's rop; +Inf when
	// the attack does not apply or found no feasible parameters.
	Bits float64
	Beta int // BKZ block size (0 if none)
	D    int // lattice dimension
	Zeta int // coordinates guessed or dropped
	H1   int // nonzeros assumed among the zeta coordinates (dual hybrid)
	// Log2Repeat is log2 of the repetitions included in Bits (guesses
	// that fail, amplification to 99 % success).
	Log2Repeat float64
	Note       string
}

// Report is the estimate of every implemented attack on one instance.
type Report struct {
	Params  Params
	Model   string
	Attacks []Attack
}

// Min returns the cheapest attack.
func (r Report) Min() Attack {
	best := Attack{Bits: math.Inf(1)}
	for _, a := range r.Attacks {
		if a.Bits < best.Bits {
			best = a
		}
	}
	return best
}

// Bits returns the named attack's estimate (+Inf if absent).
func (r Report) Bits(name string) float64 {
	for _, a := range r.Attacks {
		if a.Name == name {
			return a.Bits
		}
	}
	return math.Inf(1)
}

// inst is a checked, normalised instance: m is +Inf for unlimited samples.
type inst struct {
	n      int
	q, lnq float64
	m      float64
	xs, xe Dist
}

// check reports parameters no estimate can use, naming the field.
func (p Params) check() error {
	if p.N < 1 {
		return fmt.Errorf("lwe params: N = %d must be at least 1", p.N)
	}
	if !(p.Q >= 2) || math.IsInf(p.Q, 0) {
		return fmt.Errorf("lwe params: Q = %v must be at least 2 and finite", p.Q)
	}
	if p.M < 0 {
		return fmt.Errorf("lwe params: M = %d must be >= 0 (0: unlimited)", p.M)
	}
	if err := p.Secret.check("lwe params: Secret", p.N); err != nil {
		return err
	}
	if p.Error.sparse() {
		return errors.New("lwe params: Error: a sparse error is not supported")
	}
	return p.Error.check("lwe params: Error", p.N)
}

// normalize is the estimator's LWEParameters.normalize: a secret wider than
// the error is traded for one distributed like the error (normal form,
// n samples spent) when m >= 2n, or swapped with the error when m = n.
func (p Params) normalize() inst {
	in := inst{n: p.N, q: p.Q, lnq: math.Log(p.Q), m: float64(p.M), xs: p.Secret, xe: p.Error}
	if p.M == 0 {
		in.m = math.Inf(1)
	}
	if in.xe.stddev(0) < in.xs.stddev(in.n) {
		switch {
		case in.m >= 2*float64(in.n):
			in.xs, in.m = in.xe, in.m-float64(in.n)
		case in.m == float64(in.n):
			in.xs, in.xe = in.xe, in.xs
		}
	}
	return in
}

// Estimate runs every implemented attack on p under the cost model cm.
func Estimate(p Params, cm CostModel) (Report, error) {
	if err := p.check(); err != nil {
		return Report{}, err
	}
	in := p.normalize()
	r := Report{Params: p, Model: cm.Name()}
	r.Attacks = append(r.Attacks, usvp(in, cm), primalHybrid(in, "bdd", false, false, false, cm), dual(in, cm), matzovDual(in, cm))
	if in.xs.sparse() {
		r.Attacks = append(r.Attacks,
			dropAndSolve(in, cm),
			primalHybrid(in, "bdd-hybrid", false, false, true, cm),
			primalHybrid(in, "bdd-mitm-hybrid", true, true, true, cm),
			dualHybrid(in, cm))
	}
	r.Attacks = append(r.Attacks, mitm(in), meetLWE(in))
	return r, nil
}

// MinWeight returns the smallest secret weight h in [lo, hi] for which every
// attack on Level-like parameters p (p.Secret replaced by SparseTernary(h))
// costs at least target bits, with its report. It bisects, which assumes
// that security grows with h (each estimate's secret standard deviation and
// search space do); an error says when even hi falls short.
func MinWeight(p Params, lo, hi int, target float64, cm CostModel) (int, Report, error) {
	if lo < 1 || hi > p.N || lo > hi {
		return 0, Report{}, fmt.Errorf("lwe: weight range [%d, %d] must lie in [1, N = %d]", lo, hi, p.N)
	}
	at := func(h int) (Report, error) {
		q := p
		q.Secret = SparseTernary(h)
		return Estimate(q, cm)
	}
	top, err := at(hi)
	if err != nil {
		return 0, Report{}, err
	}
	if top.Min().Bits < target {
		return 0, top, fmt.Errorf("lwe: N = %d: even h = %d reaches only %.1f bits (%s) < %.0f", p.N, hi, top.Min().Bits, top.Min().Name, target)
	}
	best := top
	for lo < hi {
		mid := (lo + hi) / 2
		r, err := at(mid)
		if err != nil {
			return 0, Report{}, err
		}
		if r.Min().Bits >= target {
			hi, best = mid, r
		} else {
			lo = mid + 1
		}
	}
	return hi, best, nil
}

// Choice is the smallest secret weight that reaches a target at one secret
// dimension, with the report at that weight, or why there is none.
type Choice struct {
	Lambda int
	H      int
	Report Report
	Err    error
}

// Choose runs MinWeight at each secret dimension in lambdas for the level's
// parameters (Level(lambda, dIn, h)), with h searched in [8, lambda/4]: the
// table a parameter choice is read from (the smallest lambda whose h is
// acceptable for the TEE's pad cost wins).
func Choose(lambdas []int, dIn int, target float64, cm CostModel) []Choice {
	out := make([]Choice, 0, len(lambdas))
	for _, lambda := range lambdas {
		h, r, err := MinWeight(Level(lambda, dIn, 1), 8, max(8, lambda/4), target, cm)
		out = append(out, Choice{Lambda: lambda, H: h, Report: r, Err: err})
	}
	return out
}

// WriteTable prints one line per report: the parameters, each attack's bits
// and the minimum, in the order of the first report's attacks.
func WriteTable(w io.Writer, reports []Report) error {
	if len(reports) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"n", "log2q", "m", "secret", "error"}
	for _, a := range reports[0].Attacks {
		head = append(head, a.Name)
	}
	head = append(head, "min", "by", "beta", "zeta")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range reports {
		p := r.Params
		m := "inf"
		if p.M > 0 {
			m = itoa(p.M)
		}
		row := []string{itoa(p.N), ftoa(math.Log2(p.Q)), m, p.Secret.String(), p.Error.String()}
		for _, a := range reports[0].Attacks {
			row = append(row, ftoa(r.Bits(a.Name)))
		}
		best := r.Min()
		row = append(row, ftoa(best.Bits), best.Name, itoa(best.Beta), itoa(best.Zeta))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

func itoa(i int) string { return strconv.Itoa(i) }

// ftoa prints bits with one decimal ("inf" when the attack does not apply).
func ftoa(x float64) string {
	if math.IsInf(x, 1) {
		return "inf"
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}
