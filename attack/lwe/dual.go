package lwe

import "math"

// dualReduce is the estimator's DualHybrid.dual_reduce: a short dual vector
// of the first n-zeta coordinates (found by BKZ-beta over m' samples, the
// [EspJouKha20] optimum) turns the instance into a zeta-dimensional one whose
// error has standard deviation q*sigma (returned as sigma, relative to q).
// redN and redS are the dimension and per-coordinate standard deviation of
// the secret part being reduced.
func dualReduce(in inst, beta, redN int, redS, rho float64) (sigma float64, mUsed float64) {
	delta := Delta(beta)
	se := in.xe.stddev(0)
	c := redS * in.q / se
	m := math.Max(1, math.Ceil(math.Sqrt(float64(redN)*math.Log(c)/math.Log(delta)))-float64(redN))
	m = math.Min(in.m, m)
	d := m + float64(redN)
	// sigma = rho * redS * delta^d / c^(m/d), in logs to keep delta^d finite.
	lnSigma := math.Log(rho*redS) + d*math.Log(delta) - (m/d)*math.Log(c)
	return math.Exp(lnSigma), m
}

// dualCost is the plain dual attack [MR09] at block size beta (the
// estimator's DualHybrid.cost with zeta = 0 and the "distinguish" solver):
// N short dual vectors give N samples of a Gaussian of width sqrt(2 pi) q
// sigma mod q, distinguished with advantage exp(-2 pi^2 sigma^2) each, so
// N = amplify_majority(advantage); the vectors cost the model's
// short_vectors(beta, d, N).
func dualCost(in inst, beta int, cm CostModel) (bits float64, d int) {
	rho, _ := cm.shortVectors(beta, 2*beta, 0)
	ss := in.xs.stddev(in.n)
	sigma, m := dualReduce(in, beta, in.n, ss, rho)
	if math.Sqrt(2*math.Pi)*sigma > 16 {
		return math.Inf(1), 0
	}
	adv := math.Exp(-2 * math.Pi * math.Pi * sigma * sigma)
	need := amplifyMajority(adv)
	if math.IsInf(need, 1) {
		return math.Inf(1), 0
	}
	d = int(m) + in.n
	_, red := cm.shortVectors(beta, d, need)
	return log2Add(math.Log2(need), red), d
}

// dual is the plain dual estimate (estimator's LWE.dual): the cheapest block
// size in [40, min(m, 1754)].
func dual(in inst, cm CostModel) Attack {
	best := Attack{Name: "dual", Bits: math.Inf(1)}
	hi := int(math.Max(math.Min(in.m, maxBeta), 48))
	beta, bits := minimizeInt(40, hi, 8, func(b int) float64 {
		v, _ := dualCost(in, b, cm)
		return v
	})
	if math.IsInf(bits, 1) {
		return best
	}
	_, d := dualCost(in, beta, cm)
	best.Bits, best.Beta, best.D = bits, beta, d
	return best
}

// dualHybridCost is the estimator's DualHybrid.cost with the
// exhaustive_search solver for a sparse secret [EspJouKha20]: the first
// n-zeta coordinates (holding h-h1 nonzeros) are reduced with dual vectors,
// the zeta others (h1 nonzeros, split between +1 and -1 as the whole
// secret is) are searched exhaustively against m_req reduced samples,
// m_req = 8 exp(4 pi^2 sigma^2) (ln|S| - ln ln(1/p)), cost 2|S| m_req; the
// attack repeats until the split guess (drop probability) holds.
func dualHybridCost(in inst, beta, zeta, h1 int, cm CostModel) (bits float64, d int, log2Rep float64) {
	inf := math.Inf(1)
	h := in.xs.h
	if h1 >= h || h1 > zeta || h-h1 > in.n-zeta {
		return inf, 0, 0
	}
	p, mm := in.xs.plusMinus()
	p1 := h1 * p / h
	m1 := h1 - p1
	redN := in.n - zeta
	redS := sparsePM(p-p1, mm-m1).stddev(redN)
	rho, _ := cm.shortVectors(beta, 2*beta, 0)
	sigma, m := dualReduce(in, beta, redN, redS, rho)
	prob := math.Sqrt(successTarget)
	lnSize := lnBinom(zeta, p1) + lnBinom(zeta-p1, m1) + math.Log(prob)
	lnSize = math.Max(lnSize, 0) // ceil(size) >= 1
	lnNeed := math.Log(8) + 4*math.Pi*math.Pi*sigma*sigma + math.Log(lnSize-math.Log(math.Log(1/prob)))
	need := math.Exp(lnNeed)
	if math.IsInf(need, 1) {
		return inf, 0, 0
	}
	search := (math.Ln2 + lnSize + lnNeed) / math.Ln2
	d = int(m) + redN
	_, red := cm.shortVectors(beta, d, need)
	log2Rep = math.Log2(amplify(dropProb(in.n, h, zeta, h1)))
	return log2Add(search, red) + log2Rep, d, log2Rep
}

// dualHybrid optimises dualHybridCost over zeta, h1 and beta (the
// estimator's dual_hybrid, without its MitM solver); only for sparse
// secrets.
func dualHybrid(in inst, cm CostModel) Attack {
	best := Attack{Name: "dual-hybrid", Bits: math.Inf(1)}
	if !in.xs.sparse() {
		best.Note = "dense secret"
		return best
	}
	h := in.xs.h
	hi := int(math.Max(math.Min(in.m, maxBeta), 48))
	type pt struct {
		bits           float64
		beta, zeta, h1 int
	}
	var bestPt pt
	bestPt.bits = math.Inf(1)
	atZeta := func(zeta int) pt {
		r := pt{bits: math.Inf(1)}
		h1lo, h1hi := max(0, h-(in.n-zeta)), min(zeta, h-1)
		// No block size whose reduction alone costs more than the best
		// attack found so far can win: BKZ-beta costs at least
		// Log2BKZ(beta, beta+1), increasing in beta.
		top := hi
		for top > 40 && cm.Log2BKZ(top, top+1) > bestPt.bits {
			top = max(40, top-16)
		}
		top = min(hi, top+16)
		for h1 := h1lo; h1 <= h1hi; h1++ {
			beta, bits := minimizeInt(40, top, 8, func(b int) float64 {
				v, _, _ := dualHybridCost(in, b, zeta, h1, cm)
				return v
			})
			if bits < r.bits {
				r = pt{bits, beta, zeta, h1}
			} else if bits > r.bits+1 {
				break // past the local minimum in h1
			}
		}
		return r
	}
	step := max(1, in.n/128)
	minimizeInt(0, in.n-1, step, func(z int) float64 {
		r := atZeta(z)
		if r.bits < bestPt.bits {
			bestPt = r
		}
		return r.bits
	})
	if math.IsInf(bestPt.bits, 1) {
		return best
	}
	bits, d, rep := dualHybridCost(in, bestPt.beta, bestPt.zeta, bestPt.h1, cm)
	best.Bits, best.Beta, best.D, best.Zeta, best.H1, best.Log2Repeat = bits, bestPt.beta, d, bestPt.zeta, bestPt.h1, rep
	return best
}
