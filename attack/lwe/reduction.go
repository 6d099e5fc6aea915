package lwe

import "math"

// maxBeta is the estimator's upper bound on the block size (2^(0.292 beta)
// reaches 2^512 there).
const maxBeta = 1754

// smallDelta holds the estimator's measured root-Hermite factors for small
// block sizes (BKZ 2.0 in fplll, d = 320, 20 trials each).
var smallDelta = [...]struct {
	beta  int
	delta float64
}{
	{2, 1.02190}, {5, 1.01862}, {10, 1.01616}, {15, 1.01485},
	{20, 1.01420}, {25, 1.01342}, {28, 1.01331}, {40, 1.01295},
}

// Delta is the root-Hermite factor delta(beta) that BKZ-beta reaches, as the
// lattice-estimator computes it: Chen's asymptotic formula
// (beta/(2 pi e) * (pi beta)^(1/beta))^(1/(2(beta-1))) above 40, the measured
// table below.
func Delta(beta int) float64 {
	switch {
	case beta <= 2:
		return 1.0219
	case beta < 40:
		for i := 1; i < len(smallDelta); i++ {
			if smallDelta[i].beta > beta {
				return smallDelta[i-1].delta
			}
		}
		return smallDelta[len(smallDelta)-1].delta
	case beta == 40:
		return smallDelta[len(smallDelta)-1].delta
	}
	b := float64(beta)
	return math.Pow(b/(2*math.Pi*math.E)*math.Pow(math.Pi*b, 1/b), 1/(2*(b-1)))
}

// CostModel prices lattice reduction. Costs are in "rop" (the estimator's
// word operations), returned as log2.
type CostModel interface {
	// Name is the estimator's name for the model.
	Name() string
	// Log2BKZ is log2 of the cost of BKZ-beta on a lattice of rank d.
	Log2BKZ(beta, d int) float64
	// shortVectors is the cost of n short vectors of a rank-d lattice
	// reduced with block size beta (the estimator's short_vectors): the
	// length factor rho over the shortest vector BKZ-beta gives, log2 of
	// the cost, and the sieving dimension. n <= 0 asks only for rho with
	// the model's default number of vectors.
	shortVectors(beta, d int, n float64) (rho, log2Cost float64)
}

// CoreSVP is the core-SVP model [ADPS16] (the estimator's RC.ADPS16,
// classical): one sieve in dimension beta at 2^(0.292 beta), nothing for
// the number of calls or the lattice rank. Kyber's and most papers' "core-SVP
// hardness" figures use it.
type CoreSVP struct{}

// Name implements CostModel.
func (CoreSVP) Name() string { return "core-SVP 0.292b (ADPS16)" }

// Log2BKZ implements CostModel.
func (CoreSVP) Log2BKZ(beta, _ int) float64 { return 0.292 * float64(beta) }

func (c CoreSVP) shortVectors(beta, d int, n float64) (float64, float64) {
	return sieveShortVectors(c, beta, d, n)
}

// BDGL16 is the estimator's RC.BDGL16: LLL (d^3) plus 8d calls of a sieve
// costing 2^(0.292 beta + 16.4). The HE standard v1.1 tables (2018) used
// this "sieve" model.
type BDGL16 struct{}

// Name implements CostModel.
func (BDGL16) Name() string { return "BDGL16 8d*2^(0.292b+16.4)" }

// Log2BKZ implements CostModel.
func (BDGL16) Log2BKZ(beta, d int) float64 {
	rep := 1.0
	if beta < d {
		rep = 8 * float64(d)
	}
	lll := 3 * math.Log2(float64(d))
	return log2Add(lll, 0.292*float64(beta)+16.4+math.Log2(rep))
}

func (c BDGL16) shortVectors(beta, d int, n float64) (float64, float64) {
	return sieveShortVectors(c, beta, d, n)
}

// sieveShortVectors is the estimator's _short_vectors_sieve with the sieve
// in dimension beta: one sieve yields 2^(0.2075 beta) vectors sqrt(4/3)
// longer than the shortest; more vectors cost more reductions.
func sieveShortVectors(c CostModel, beta, d int, n float64) (float64, float64) {
	if n == 1 {
		return 1, c.Log2BKZ(beta, d)
	}
	c1 := math.Exp2(0.2075 * float64(beta))
	if n <= 0 {
		n = math.Floor(c1)
	}
	reps := math.Ceil(n / c1)
	return math.Sqrt(4.0 / 3), math.Log2(reps) + c.Log2BKZ(beta, d)
}

// MATZOV is the estimator's default cost model (RC.MATZOV): progressive BKZ
// with C*(d-beta) calls of a list-decoding sieve in dimension
// beta - d4f(beta) (dimensions for free [Duc18]) costing
// C * 2^(0.29613 b' + 20.388) gates, C = 1/(1-2^-0.29613), fitted in
// [AGPS20] and corrected in [MATZOV22]; plus LLL at d^3.
type MATZOV struct{}

// matzovA and matzovB are the list_decoding-classical fit of the
// estimator's MATZOV.NN_AGPS.
const (
	matzovA = 0.29613500308205365
	matzovB = 20.387885985467914
)

// Name implements CostModel.
func (MATZOV) Name() string { return "MATZOV (estimator default)" }

// d4f is the number of dimensions for free [Duc18]:
// beta ln(4/3) / ln(beta/(2 pi e)).
func d4f(beta float64) float64 {
	return math.Max(beta*math.Log(4.0/3)/math.Log(beta/(2*math.Pi*math.E)), 0)
}

// matzovC is the progressive-sieving overhead 1/(1 - 2^-a).
var matzovC = 1 / (1 - math.Exp2(-matzovA))

// Log2BKZ implements CostModel. Below beta = 20 (only the tiny final SVP
// calls of the hybrid get there) the estimator switches to CheNgu12's
// enumeration fit; this package evaluates the sieve fit at 20 instead, a
// negligible cost either way.
func (MATZOV) Log2BKZ(beta, d int) float64 {
	if beta < 20 {
		beta = 20
	}
	b := float64(beta)
	calls := matzovC * math.Max(float64(d-beta), 1)
	gates := math.Log2(matzovC) + matzovA*(b-d4f(b)) + matzovB
	return log2Add(3*math.Log2(float64(d)), math.Log2(calls)+gates)
}

// shortVectors is the estimator's GJ21.short_vectors: after BKZ-beta, one
// sieve in dimension beta_sieve (chosen so that it costs about as much as
// the BKZ) on the first block yields 2^(0.2075 beta_sieve) vectors.
func (c MATZOV) shortVectors(beta, d int, n float64) (float64, float64) {
	b := float64(beta)
	bPrime := b - math.Floor(d4f(b))
	sd := bPrime
	if beta < d {
		sd = math.Min(float64(d), math.Floor(bPrime+math.Log2(float64(d-beta)*matzovC)/matzovA))
	}
	sdi := int(math.Round(sd))
	rho := math.Sqrt(4.0/3) * math.Pow(Delta(sdi), sd-1) * math.Pow(Delta(beta), 1-sd)
	if n == 1 {
		return 1, c.Log2BKZ(beta, d)
	}
	c1 := math.Floor(math.Exp2(0.2075 * sd))
	if n <= 0 {
		n = c1
	}
	reps := math.Ceil(n / c1)
	sieve := math.Log2(matzovC) + matzovA*sd + matzovB
	return rho, math.Log2(reps) + log2Add(c.Log2BKZ(beta, d), sieve)
}

// log2Add returns log2(2^a + 2^b) without overflow.
func log2Add(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log2(1+math.Exp2(b-a))
}
