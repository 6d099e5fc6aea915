package lwe

import (
	"math"
	"sort"
)

// hybridShape is what one block size and guessing dimension give the
// primal hybrid (the estimator's PrimalHybrid.beta_params under the GSA):
// the BKZ cost, the rank d of the reduced basis, the final SVP dimension
// eta and its cost, and the success probabilities of the Babai lift and of
// the MitM step (natural logs).
type hybridShape struct {
	bkz, svp float64 // log2 costs
	d, eta   int
	lnBabai  float64
	lnMitm   float64
	feasible bool
}

// gsaLog2 returns log2 of the squared Gram-Schmidt norms of a BKZ-beta
// reduced basis of rank d with d-k q-vectors and k secret coordinates scaled
// by xi (the estimator's simulator.GSA with tau = False).
func gsaLog2(d, k int, lnq float64, beta int, xi float64) []float64 {
	logVol := (lnq*float64(d-k) + math.Log(xi)*float64(k)) / math.Ln2
	lg := math.Log2(Delta(beta))
	r := make([]float64, d)
	for i := range r {
		r[i] = 2 * (float64(d-1-2*i)*lg + logVol/float64(d))
	}
	return r
}

// lnBallVol is ln of the volume of the unit ball in dimension k.
func lnBallVol(k float64) float64 {
	lg, _ := math.Lgamma(k/2 + 1)
	return k/2*math.Log(math.Pi) - lg
}

// svpDimensionGSA is the estimator's PrimalHybrid.svp_dimension_gsa for an
// inhomogeneous instance: the largest projected sublattice (plus Kannan's
// row tau = sigma_e) in which the projected error is still the shortest
// vector by the Gaussian heuristic. The condition flips once as i grows
// (the projected volume per dimension falls linearly in i), so it is
// bisected.
func svpDimensionGSA(d int, lnVol, lnDelta, se float64) int {
	tau := se
	lnProj := func(i int) float64 {
		fi, fd := float64(i), float64(d)
		return (fd-fi)/fd*lnVol - fi*(fd-fi)*lnDelta
	}
	fails := func(i int) bool { // error no longer shortest at i
		k := float64(d - i + 1)
		lnGH := (2*lnProj(i) + 2*math.Log(tau) - 2*lnBallVol(k)) / k
		return lnGH < math.Log(se*se*float64(d-i)+tau*tau)
	}
	minI := 0
	if d > 4096 {
		minI = d - 1754
	}
	if fails(minI) {
		return d - (minI - 1) + 1
	}
	lo, hi := minI, d-1 // fails(lo) false
	if !fails(hi) {
		return 2
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return d - (hi - 1) + 1
}

// lnBabaiProb is the estimator's prob.babai [Wun19]: the probability that
// Babai's nearest plane lifts an error of norm `norm` through Gram-Schmidt
// norms r (log2 of squared norms): prod_i P(X > 1 - r_i/(4 norm^2)) with
// X ~ Beta((k-1)/2, 1/2). For the large k here 1 - X is Gamma(1/2, rate
// (k-1)/2) up to O(1/k), so each factor is erf(sqrt((k-1)/2 * r_i/(4
// norm^2))); this package uses that closed form (the estimator calls the
// exact Beta CDF), TestBabaiApprox bounds the difference.
func lnBabaiProb(r []float64, norm float64) float64 {
	k := float64(len(r))
	a := (k - 1) / 2
	lnDen := 2 * math.Log(2*norm)
	sum := 0.0
	// r decreases (GSA): skip the head whose factors are 1 to float64
	// precision (a t > 40).
	cut := math.Log2(40/a) + lnDen/math.Ln2
	start := sort.Search(len(r), func(i int) bool { return r[i] < cut })
	for _, l2 := range r[start:] {
		t := math.Exp(l2*math.Ln2 - lnDen)
		if t >= 1 {
			continue
		}
		x := a * t
		if x > 40 {
			continue
		}
		sum += math.Log(math.Erf(math.Sqrt(x)))
	}
	return sum
}

// lnMitmProb is the estimator's prob.mitm_babai_probability [SC19]: the
// chance that the error is "admissible" for the MitM lookup,
// prod_i (erf(x_i) - (1 - exp(-x_i^2)) / (x_i sqrt(pi))), x_i = sqrt(r_i/2)/sigma_e.
func lnMitmProb(r []float64, se float64) float64 {
	sum := 0.0
	// skip the head with x > 40 (factor 1): r_i > log2(2 (40 se)^2).
	cut := math.Log2(2 * 1600 * se * se)
	start := sort.Search(len(r), func(i int) bool { return r[i] < cut })
	for _, l2 := range r[start:] {
		x := math.Sqrt(0.5*math.Exp2(l2)) / se
		if x > 40 {
			continue
		}
		sum += math.Log(math.Erf(x) - (1-math.Exp(-x*x))/(x*math.Sqrt(math.Pi)))
	}
	return sum
}

// hybridBeta computes the hybridShape for block size beta, guessing
// dimension zeta and m samples (rows of the embedding); dFix > 0 imposes
// the rank d instead of the GSA optimum.
func hybridBeta(in inst, beta, zeta int, babai, mitm bool, mEmb float64, dFix int, cm CostModel) hybridShape {
	k := in.n - zeta
	if mEmb-float64(zeta) < float64(beta) || (dFix > 0 && dFix < beta) {
		return hybridShape{}
	}
	se, ss := in.xe.stddev(0), in.xs.stddev(in.n)
	xi := 1.0
	if ss < se {
		xi = se / ss
	}
	lnDelta := math.Log(Delta(beta))
	df := math.Ceil(math.Sqrt(float64(k) * (in.lnq - math.Log(xi)) / lnDelta))
	df = math.Max(float64(beta), math.Min(df, mEmb-float64(zeta)))
	d := int(df)
	if dFix > 0 {
		d = dFix
	}
	r := gsaLog2(d, k, in.lnq, beta, xi)
	s := hybridShape{bkz: cm.Log2BKZ(beta, d), d: d, feasible: true}
	if babai {
		s.eta = 2
		s.svp = 2 * math.Log2(float64(d))
		s.lnBabai = lnBabaiProb(r, math.Sqrt(float64(d))*se)
	} else {
		lnVol := float64(d-k)*in.lnq + float64(k)*math.Log(xi)
		dim := svpDimensionGSA(d, lnVol, lnDelta, se)
		s.eta = dim - 1
		if s.eta > d {
			return hybridShape{}
		}
		s.svp = log2Add(cm.Log2BKZ(dim, dim), 2*math.Log2(float64(max(d-s.eta, 1))))
		s.lnBabai = lnBabaiProb(r[:d-s.eta], math.Sqrt(float64(d-s.eta))*se)
	}
	if mitm && zeta > 0 && babai {
		s.lnMitm = lnMitmProb(r, se)
	}
	return s
}

// guessSpace is the estimator's guessing_set_and_hit_probability for a
// sparse secret: every pattern of weight <= hw on zeta coordinates
// (C(zeta, w) 2^w each) and the probability that the secret's restriction
// is one of them. Returns log2 of the size and the probability.
func guessSpace(in inst, zeta, hw int) (log2Size, prob float64) {
	if zeta == 0 {
		return 0, 1
	}
	h := in.xs.h
	lo := max(0, zeta-in.n+h)
	size := math.Inf(-1)
	for w := lo; w <= hw; w++ {
		size = log2Add(size, log2Binom(zeta, w)+float64(w))
		prob += dropProb(in.n, h, zeta, w)
	}
	return size, prob
}

// hybridCost is the estimator's PrimalHybrid.cost for a given guessing set:
// (BKZ + |S|' SVP calls) repeated until the guess, the Babai lift and the
// MitM step all succeed; |S|' = sqrt|S| with MitM.
func hybridCost(s hybridShape, log2Size, prob float64, mitm bool) float64 {
	if !s.feasible {
		return math.Inf(1)
	}
	calls := log2Size
	if mitm {
		calls /= 2
	}
	lnP := math.Log(prob) + s.lnBabai + s.lnMitm
	rep := amplify(math.Exp(lnP))
	return log2Add(s.bkz, s.svp+calls) + math.Log2(rep)
}

// primalHybrid is the estimator's primal_hybrid (zeta > 0, sparse secret)
// and primal_bdd (zeta = 0): BKZ-beta on the lattice of the n - zeta
// unguessed coordinates, then per guess of the zeta others a final SVP in
// dimension eta (babai = false: [AlbCurWun19]) or a Babai lift (babai =
// true, with mitm halving the guesses' exponent: [HG07, WAHC:SonChe19]).
// name tags the result.
func primalHybrid(in inst, name string, babai, mitm, guess bool, cm CostModel) Attack {
	best := Attack{Name: name, Bits: math.Inf(1)}
	mEmb := embeddingSamples(in)
	base := usvp(in, cm)
	hiBeta := base.Beta + 2
	if base.Beta == 0 {
		hiBeta = maxBeta
	}
	type res struct {
		bits           float64
		beta, zeta, hw int
		s              hybridShape
	}
	global := res{bits: math.Inf(1)}
	atZeta := func(zeta int) res {
		cache := map[int]hybridShape{}
		shape := func(beta int) hybridShape {
			if s, ok := cache[beta]; ok {
				return s
			}
			s := hybridBeta(in, beta, zeta, babai, mitm, mEmb, 0, cm)
			cache[beta] = s
			return s
		}
		top := hiBeta
		for top > 40 && cm.Log2BKZ(top, top+1) > global.bits {
			top = max(40, top-16)
		}
		top = min(hiBeta, top+16)
		r := res{bits: math.Inf(1)}
		hwLo, hwHi := 0, 0
		if zeta > 0 {
			hwLo, hwHi = max(0, zeta-in.n+in.xs.h), min(zeta, in.xs.h)
		}
		for hw := hwLo; hw <= hwHi; hw++ {
			size, prob := guessSpace(in, zeta, hw)
			beta, bits := minimizeInt(40, top, 4, func(b int) float64 {
				return hybridCost(shape(b), size, prob, mitm)
			})
			if bits < r.bits {
				r = res{bits, beta, zeta, hw, shape(beta)}
			} else if bits > r.bits {
				break
			}
		}
		if r.bits < global.bits {
			global = r
		}
		return r
	}
	if !guess {
		atZeta(0)
	} else {
		if !in.xs.sparse() {
			best.Note = "dense secret"
			return best
		}
		minimizeInt(0, in.n-1, max(1, in.n/64), func(z int) float64 { return atZeta(z).bits })
	}
	if math.IsInf(global.bits, 1) {
		return best
	}
	if !guess {
		// primal_bdd then optimises the rank d in [n, d + 1] at the chosen
		// beta (the estimator's cost_zeta step 2; primal_hybrid skips it).
		size, prob := guessSpace(in, 0, 0)
		d, bits := minimizeInt(in.n, global.s.d+1, 8, func(d int) float64 {
			return hybridCost(hybridBeta(in, global.beta, 0, babai, mitm, mEmb, d, cm), size, prob, mitm)
		})
		if bits < global.bits {
			global.bits, global.s = bits, hybridBeta(in, global.beta, 0, babai, mitm, mEmb, d, cm)
		}
	}
	best.Bits, best.Beta, best.D, best.Zeta = global.bits, global.beta, global.s.d, global.zeta
	best.Note = "eta " + itoa(global.s.eta) + ", guess weight <= " + itoa(global.hw)
	return best
}
