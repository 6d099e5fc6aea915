package bss

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0xda3e39cb94b95bdb)) }

// kind of a synthetic source row
type kind int

const (
	laplace kind = iota // super-Gaussian, kurtosis 3
	uniform             // sub-Gaussian, kurtosis -1.2
	bimodal             // sub-Gaussian: +-1 plus small noise
	spiky               // super-Gaussian: scale mixture 0.9 N(0,1) + 0.1 N(0,25)
	gauss               // unidentifiable by ICA
)

func sample(r *rand.Rand, k kind) float64 {
	switch k {
	case laplace:
		u := r.Float64() - 0.5
		return -math.Copysign(1, u) * math.Log(1-2*math.Abs(u)) / math.Sqrt2
	case uniform:
		return math.Sqrt(3) * (2*r.Float64() - 1)
	case bimodal:
		s := 1.0
		if r.IntN(2) == 0 {
			s = -1
		}
		return s + 0.2*r.NormFloat64()
	case spiky:
		if r.Float64() < 0.1 {
			return 5 * r.NormFloat64()
		}
		return r.NormFloat64()
	default:
		return r.NormFloat64()
	}
}

// sources returns len(kinds) x n rows, row i of kinds[i].
func sources(kinds []kind, n int, seed uint64) *mat.Dense {
	r := rng(seed)
	x := mat.NewDense(len(kinds), n, nil)
	for i, k := range kinds {
		for j := 0; j < n; j++ {
			x.Set(i, j, sample(r, k))
		}
	}
	return x
}

// mixedKinds is the non-Gaussian test set: super- and sub-Gaussian rows.
func mixedKinds(n int) []kind {
	ks := make([]kind, n)
	for i := range ks {
		ks[i] = []kind{laplace, uniform, bimodal, spiky}[i%4]
	}
	return ks
}

func repeatKind(k kind, n int) []kind {
	ks := make([]kind, n)
	for i := range ks {
		ks[i] = k
	}
	return ks
}

// ar1 returns rows x_t = phi_i x_{t-1} + e_t with Gaussian innovations.
func ar1(phis []float64, n int, seed uint64) *mat.Dense {
	r := rng(seed)
	x := mat.NewDense(len(phis), n, nil)
	for i, phi := range phis {
		prev := r.NormFloat64() / math.Sqrt(1-phi*phi)
		for j := 0; j < n; j++ {
			prev = phi*prev + r.NormFloat64()
			x.Set(i, j, prev)
		}
	}
	return x
}

func mul(a, b mat.Matrix) *mat.Dense {
	var c mat.Dense
	c.Mul(a, b)
	return &c
}

func haar(t *testing.T, n int, seed uint64) *mat.Dense {
	t.Helper()
	q, err := Haar(n, seed)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func p95(t *testing.T, est, truth mat.Matrix) float64 {
	t.Helper()
	mc, err := MatchedCosines(est, truth)
	if err != nil {
		t.Fatal(err)
	}
	return P95(mc)
}

func amari(t *testing.T, w, a mat.Matrix) float64 {
	t.Helper()
	v, err := Amari(w, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func randomRows(t *testing.T, truth mat.Matrix, rows int) float64 {
	t.Helper()
	v, err := RandomRowsP95(truth, rows, 99)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func randomMix(t *testing.T, span, truth mat.Matrix, rows int) float64 {
	t.Helper()
	v, err := RandomMixP95(span, truth, rows, 77)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// scaleTop scales h so its top singular value is top.
func scaleTop(h *mat.Dense, top float64) *mat.Dense {
	var svd mat.SVD
	svd.Factorize(h, mat.SVDNone)
	s := svd.Values(nil)[0]
	var out mat.Dense
	out.Scale(top/s, h)
	return &out
}

func stack(a, b mat.Matrix) *mat.Dense {
	var c mat.Dense
	c.Stack(a, b)
	return &c
}

func meanRowNorm(h mat.Matrix) float64 {
	r, _ := h.Dims()
	s := 0.0
	for i := 0; i < r; i++ {
		s += floats.Norm(mat.Row(nil, i, h), 2)
	}
	return s / float64(r)
}

func eye(n int) *mat.Dense {
	e := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		e.Set(i, i, 1)
	}
	return e
}
