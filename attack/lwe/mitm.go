package lwe

import "math"

// mitm is the estimator's MITM.mitm_analytical on the whole secret: split
// the n coordinates in two halves (k = n/(2-delta), delta = error range/q),
// tabulate A_1 s_1 for every weight-h/2 candidate of one half, and look up
// -A_2 s_2 + b for the other with a locality-sensitive hash on the top bits
// (the error must be small against q). For a sparse ternary secret the
// table holds 2^logT entries with
//
//	logT = h (log2 n - log2 h + log2 2 + log2 e) / (2 - delta) - log2(h)/2
//	       - h^2 log2(e) / (2 n (2-delta)^2),
//
// (a Stirling estimate of sqrt(C(n, h) 2^h)), the attack needs
// m = logT + log2 logT samples and costs 2^m, repeated until the weight
// splits as assumed. For a dense secret of r values, logT = k log2 r.
func mitm(in inst) Attack {
	best := Attack{Name: "mitm", Bits: math.Inf(1)}
	eRange, eProb := in.xe.rangeAndProb()
	if eRange >= in.q {
		best.Note = "error range >= q"
		return best
	}
	sRange, sProb := in.xs.rangeAndProb()
	delta := eRange / in.q
	n := float64(in.n)
	k := math.Round(n / (2 - delta))
	var logT, splitProb float64
	if in.xs.sparse() {
		h := float64(in.xs.h)
		logT = h * (math.Log2(n) - math.Log2(h) + math.Log2(sRange-1) + math.Log2E) / (2 - delta)
		logT -= math.Log2(h) / 2
		logT -= h * h * math.Log2E / (2 * n * (2 - delta) * (2 - delta))
		splitProb = splitProbability(in.xs, in.n, int(k))
	} else {
		logT = k * math.Log2(sRange)
		splitProb = 1
	}
	m := math.Max(1, math.Round(logT+math.Log2(logT)))
	if m > in.m {
		best.Note = "needs more samples than m"
		return best
	}
	// sProb^n * eProb^m * splitProb, in logs (sProb^n underflows for
	// Gaussian secrets in large n).
	lnProb := n*math.Log(sProb) + m*math.Log(eProb) + math.Log(splitProb)
	rep := amplify(math.Exp(lnProb))
	best.Bits = m + math.Log2(rep)
	best.Log2Repeat = math.Log2(rep)
	best.Note = "table 2^" + ftoa(logT)
	return best
}

// splitProbability is the estimator's SparseTernary.split_probability: the
// chance that the first k of n coordinates hold exactly floor(h k/n) of the
// nonzeros, with the +1/-1 counts split in proportion.
func splitProbability(d Dist, n, k int) float64 {
	p, m := d.plusMinus()
	h := d.h
	h1 := h * k / n
	p1 := h1 * p / h
	m1 := h1 - p1
	ln := func(p, m, n int) float64 { return lnBinom(n, p) + lnBinom(n-p, m) }
	return math.Exp(ln(p1, m1, k) + ln(p-p1, m-m1, n-k) - ln(p, m, n))
}

// meetLWEExponent is the exponent of the search space that May's Meet-LWE
// reaches asymptotically ("roughly S^0.25", May, Crypto 2021, abstract; its
// concrete instantiations for NTRU, NTRU Prime, BLISS and GLP are at
// S^0.28 to S^0.3).
const meetLWEExponent = 0.25

// meetLWE is a lower envelope for representation-based combinatorial
// attacks, not a cost the estimator computes: S^0.25 for the secret's
// search space S (C(n, p) C(n-p, m) for a sparse ternary secret, 3^n for a
// uniform ternary one), with no polynomial factors and no repetitions. It
// stands in for Meet-LWE, which this package does not model step by step;
// being the asymptotic exponent, it errs on the attacker's side.
func meetLWE(in inst) Attack {
	a := Attack{Name: "meet-lwe S^1/4", Bits: math.Inf(1)}
	var log2S float64
	switch in.xs.kind {
	case kindSparse:
		p, m := in.xs.plusMinus()
		log2S = log2Binom(in.n, p) + log2Binom(in.n-p, m)
	case kindTernary:
		log2S = float64(in.n) * math.Log2(3)
	default:
		a.Note = "secret not ternary"
		return a
	}
	a.Bits = meetLWEExponent * log2S
	a.Note = "S = 2^" + ftoa(log2S)
	return a
}
