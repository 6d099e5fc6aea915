package lwe

import "math"

// usvpCost is the estimator's PrimalUSVP.cost_gsa for one block size: the
// smallest embedding dimension d for which BKZ-beta's GSA profile puts the
// projected target (norm sqrt(se^2 (beta-1) + tau^2)) below the
// (d-beta)-th Gram-Schmidt vector [ADPS16, AGVW17], with Bai-Galbraith
// rescaling xi of the secret part; +Inf when no d <= mEmb works.
func usvpCost(in inst, beta int, mEmb float64, cm CostModel) (bits float64, d int) {
	n := float64(in.n)
	se, ss := in.xe.stddev(0), in.xs.stddev(in.n)
	xi := 1.0
	if ss < se {
		xi = se / ss
	}
	tau := se
	lnDelta := math.Log(Delta(beta))
	b := float64(beta)
	df := solveForD(in, mEmb, beta, tau, xi)
	if math.IsInf(df, 1) {
		return math.Inf(1), 0
	}
	if df < b {
		df = b
	}
	if df == b && df < mEmb {
		df++
	}
	lhs := math.Log(math.Sqrt(se*se*(b-1) + tau*tau))
	rhs := lnDelta*(2*b-df-1) + (math.Log(tau)+math.Log(xi)*n+in.lnq*(df-n-1))/df
	if lhs > rhs {
		return math.Inf(1), int(df)
	}
	return cm.Log2BKZ(beta, int(df)), int(df)
}

// solveForD is the estimator's PrimalUSVP._solve_for_d: the smallest
// d in [n, m] with a d^2 + b d + c >= 0 (the uSVP condition under the GSA,
// multiplied out by d), +Inf if there is none.
func solveForD(in inst, m float64, beta int, tau, xi float64) float64 {
	se := in.xe.stddev(0)
	lnDelta := math.Log(Delta(beta))
	a := -lnDelta
	C := math.Log(se*se*float64(beta-1)+tau*tau) / 2
	c := math.Log(tau) + float64(in.n)*math.Log(xi) - float64(in.n+1)*in.lnq
	b := lnDelta*float64(2*beta-1) + in.lnq - C
	n := float64(in.n)
	if a*n*n+b*n+c >= 0 {
		return n
	}
	disc := b*b - 4*a*c
	if disc < 0 {
		return math.Inf(1)
	}
	d1 := (-b + math.Sqrt(disc)) / (2 * a)
	d2 := (-b - math.Sqrt(disc)) / (2 * a)
	if a > 0 {
		return math.Min(m, math.Ceil(d2))
	}
	if n <= d1 {
		return math.Min(m, math.Ceil(d1))
	}
	return math.Inf(1)
}

// embeddingSamples is the number of rows the primal lattice may use: the
// m samples, plus n when the secret is no wider than the error (Bai and
// Galbraith's embedding of the secret as part of the short vector).
func embeddingSamples(in inst) float64 {
	if in.xs.stddev(in.n) <= in.xe.stddev(0) {
		return in.m + float64(in.n)
	}
	return in.m
}

// usvp estimates the primal attack via unique-SVP (the 2016 estimate,
// estimator's primal_usvp with red_shape_model="gsa"): every block size from
// 40 to min(1754, m) is tried and the cheapest that succeeds is returned.
func usvp(in inst, cm CostModel) Attack {
	mEmb := embeddingSamples(in)
	hi := int(math.Max(math.Min(maxBeta, mEmb), 45))
	best := Attack{Name: "usvp", Bits: math.Inf(1)}
	for beta := 40; beta <= hi; beta++ {
		bits, d := usvpCost(in, beta, mEmb, cm)
		if bits < best.Bits {
			best.Bits, best.Beta, best.D = bits, beta, d
		}
	}
	return best
}

// gammaf is the estimator's guess_composition.gammaf for a sparse secret:
// of the zeta coordinates set aside, up to gamma may be nonzero and are
// guessed (C(zeta, g) 2^g candidates each); it returns log2 of the repeats
// (amplification times candidates) for the best gamma.
func gammaf(n, h, zeta int) (log2Rep float64, gamma int) {
	if zeta == 0 {
		return 0, 0
	}
	best := math.Inf(1)
	prob, space := 0.0, 0.0
	for g := 0; g < min(h, zeta); g++ {
		prob += dropProb(n, h, zeta, g)
		space += math.Exp(lnBinom(zeta, g) + float64(g)*math.Ln2)
		rep := math.Log2(amplify(prob)) + math.Log2(space)
		if rep >= best {
			break
		}
		best, gamma = rep, g
	}
	return best, gamma
}

// dropAndSolve is the estimator's guess_composition(primal_usvp) for sparse
// secrets ("drop and solve"): zeta coordinates are assumed zero (up to gamma
// of them guessed), the uSVP estimate runs on the n - zeta others (whose
// secret is denser), and the whole attack repeats until the guess holds.
func dropAndSolve(in inst, cm CostModel) Attack {
	best := Attack{Name: "usvp+drop", Bits: math.Inf(1)}
	if !in.xs.sparse() {
		best.Note = "dense secret"
		return best
	}
	step := max(1, in.n/256)
	f := func(zeta int) float64 {
		if in.n-zeta < 1 || in.n-zeta < in.xs.h {
			return math.Inf(1)
		}
		sub := in
		sub.n = in.n - zeta
		a := usvp(sub, cm)
		rep, _ := gammaf(in.n, in.xs.h, zeta)
		return a.Bits + rep
	}
	zeta, bits := minimizeInt(0, in.n-40, step, f)
	if math.IsInf(bits, 1) {
		return best
	}
	sub := in
	sub.n = in.n - zeta
	a := usvp(sub, cm)
	rep, gamma := gammaf(in.n, in.xs.h, zeta)
	best.Bits, best.Beta, best.D, best.Zeta = bits, a.Beta, a.D, zeta
	best.Log2Repeat = rep
	best.Note = "guess<=" + itoa(gamma) + " nonzeros among dropped"
	return best
}
