package lwe

import "math"

// successTarget is the success probability every estimate amplifies to, as
// in the estimator (0.99).
const successTarget = 0.99

// lnBinom is ln C(n, k), -Inf outside 0 <= k <= n.
func lnBinom(n, k int) float64 {
	if k < 0 || k > n || n < 0 {
		return math.Inf(-1)
	}
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// log2Binom is log2 C(n, k).
func log2Binom(n, k int) float64 { return lnBinom(n, k) / math.Ln2 }

// dropProb is the estimator's prob.drop: the probability that k coordinates
// chosen at random from n, of which h are nonzero, hold exactly fail
// nonzeros (hypergeometric): C(n-h, k-fail) C(h, fail) / C(n, k).
func dropProb(n, h, k, fail int) float64 {
	return math.Exp(lnBinom(n-h, k-fail) + lnBinom(h, fail) - lnBinom(n, k))
}

// amplify is the number of independent trials that lift a success
// probability p to successTarget when a success can be recognised:
// ceil(ln(1 - target) / ln(1 - p)); +Inf for p = 0.
func amplify(p float64) float64 {
	if p >= successTarget {
		return 1
	}
	if !(p > 0) {
		return math.Inf(1)
	}
	return math.Ceil(math.Log(1-successTarget) / math.Log1p(-p))
}

// amplifyMajority is the estimator's amplify(majority=True) for a
// distinguisher of advantage adv: ceil(2 ln(2 - 2 target) / ln(1 - adv^2)).
func amplifyMajority(adv float64) float64 {
	if adv >= successTarget {
		return 1
	}
	if !(adv > 0) {
		return math.Inf(1)
	}
	den := math.Log1p(-adv * adv)
	if den == 0 {
		return math.Inf(1)
	}
	return math.Ceil(2 * math.Log(2-2*successTarget) / den)
}

// minimizeInt returns the x in [lo, hi] minimising f: it scans every
// step-th point, then rescans around the best point found with a quarter of
// the step, down to step 1 (the estimator's local_minimum, with a
// neighbourhood pass at each scale). f returns +Inf where the attack does
// not apply.
func minimizeInt(lo, hi, step int, f func(int) float64) (int, float64) {
	if step < 1 {
		step = 1
	}
	seen := map[int]float64{}
	eval := func(x int) float64 {
		if v, ok := seen[x]; ok {
			return v
		}
		v := f(x)
		seen[x] = v
		return v
	}
	bestX, best := lo, math.Inf(1)
	for x := lo; x <= hi; x += step {
		if v := eval(x); v < best {
			bestX, best = x, v
		}
	}
	for step > 1 {
		next := max(1, step/4)
		a, b := max(lo, bestX-step+1), min(hi, bestX+step-1)
		for x := a; x <= b; x += next {
			if v := eval(x); v < best {
				bestX, best = x, v
			}
		}
		step = next
	}
	return bestX, best
}
