package lwe

import "math"

// MATZOV22's constants for the FFT dual (their p. 37: 32-bit multiplies
// cost 32^2, additions 5*32).
const (
	matzovCMul = 32 * 32
	matzovCAdd = 5 * 32
)

// matzovEntropy is MATZOV's H(chi_s) in bits: the entropy of a discrete
// Gaussian of the secret's standard deviation,
// (1/2 + ln(sqrt(2 pi) s) + ln coth(pi^2 s^2)) / ln 2. For a sparse secret
// it overstates the entropy of the guessed coordinates (it models them as a
// Gaussian of the same variance), as the estimator does.
func matzovEntropy(s float64) float64 {
	x := math.Pi * math.Pi * s * s
	return (0.5 + math.Log(math.Sqrt(2*math.Pi)*s) + math.Log(1/math.Tanh(x))) / math.Ln2
}

// matzovDualCost is the estimator's lwe_dual.MATZOV.cost (MATZOV22, Theorem
// 7.6; GuoJoh21): BKZ-beta on k_lat = n - kEnum - kFFT coordinates and
// m = n samples gives N short dual vectors (one sieve: short_vectors); for
// each of the ~2^(kEnum H) guesses of kEnum coordinates an FFT over kFFT
// coordinates mod p scores all candidates at once. N follows from the
// vectors' length
//
//	l = sigma_e^(m/(m+k)) (sigma_s q)^(k/(m+k)) sqrt(4/3) sqrt(beta/(2 pi e)) delta^(m+k-beta)
//
// as N = exp(4 (l pi/q)^2) exp(kFFT/3 (sigma_s pi/p)^2) (kEnum H + kFFT ln p + ln 2).
func matzovDualCost(in inst, beta, p, kEnum, kFFT int, cm CostModel) float64 {
	n := in.n
	m := math.Min(float64(n), in.m)
	kLat := n - kFFT - kEnum
	if kLat < 1 {
		return math.Inf(1)
	}
	se, ss := in.xe.stddev(0), in.xs.stddev(n)
	k := float64(kLat)
	b := float64(beta)
	lnL := m/(m+k)*math.Log(se) + k/(m+k)*math.Log(ss*in.q) + 0.5*math.Log(4.0/3) +
		0.5*math.Log(b/(2*math.Pi*math.E)) + (m+k-b)*math.Log(Delta(beta))
	l := math.Exp(lnL)
	H := matzovEntropy(ss)
	pf := float64(p)
	lnN := 4*math.Pow(l*math.Pi/in.q, 2) + float64(kFFT)/3*math.Pow(ss*math.Pi/pf, 2) +
		math.Log(float64(kEnum)*H+float64(kFFT)*math.Log(pf)+math.Log(2))
	N := math.Exp(lnN)
	if math.IsInf(N, 1) {
		return math.Inf(1)
	}
	_, sample := cm.shortVectors(beta, kLat+int(m), N)
	coeff := 1 / (1 - math.Exp(-1/(2*ss*ss)))
	alpha := math.Pi * math.Pi * ss * ss
	a := math.Exp(8 * alpha * math.Exp(-2*alpha) * math.Tanh(alpha))
	fft := math.Log2(matzovCMul) + math.Log2(float64(kFFT)) + float64(kFFT+1)*math.Log2(pf)
	if kFFT == 0 {
		fft = math.Inf(-1) // C_mul * 0 * p
	}
	table := math.Log2(4*matzovCAdd) + lnN/math.Ln2
	guess := math.Log2(coeff) + float64(kEnum)*(math.Log2(2*a/math.Sqrt(math.E))+H) + log2Add(fft, table)
	return log2Add(sample, guess)
}

// matzovDual is the estimator's lwe_dual.matzov (LWE.dual_hybrid in its
// default estimate): the search over the FFT modulus p, the enumerated
// and FFT dimensions (steps of 10, each stopped once it no longer helps)
// and beta.
func matzovDual(in inst, cm CostModel) Attack {
	best := Attack{Name: "dual-fft", Bits: math.Inf(1)}
	type pt struct {
		bits            float64
		beta, p, kE, kF int
	}
	bestPt := pt{bits: math.Inf(1)}
	atBeta := func(p, kE, kF int) pt {
		hi := int(math.Max(math.Min(in.m-float64(kE+kF), maxBeta), 41))
		beta, bits := minimizeInt(40, hi, 8, func(b int) float64 {
			return matzovDualCost(in, b, p, kE, kF, cm)
		})
		return pt{bits, beta, p, kE, kF}
	}
	// early-abort linear searches, as the estimator's early_abort_range:
	// keep going while the result does not get worse.
	for p := 2; float64(p) < in.q; p++ {
		pBest := pt{bits: math.Inf(1)}
		for kE := 0; kE < in.n; kE += 10 {
			eBest := pt{bits: math.Inf(1)}
			for kF := 0; kF < in.n-kE; kF += 10 {
				r := atBeta(p, kE, kF)
				if r.bits > eBest.bits {
					break
				}
				eBest = r
			}
			if eBest.bits > pBest.bits {
				break
			}
			pBest = eBest
		}
		if pBest.bits > bestPt.bits {
			break
		}
		bestPt = pBest
		if pBest.kF == 0 && p > 2 {
			break // p does not matter without an FFT part
		}
	}
	if math.IsInf(bestPt.bits, 1) {
		return best
	}
	best.Bits, best.Beta, best.Zeta = bestPt.bits, bestPt.beta, bestPt.kE
	best.Note = "p " + itoa(bestPt.p) + ", fft dims " + itoa(bestPt.kF)
	return best
}
