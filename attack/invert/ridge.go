package invert

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"gelo/attack/dict"
)

// RidgeOptions tunes Ridge.
type RidgeOptions struct {
	// Alphas to try (default 1e-3 ... 1e3 in decades), relative to the
	// mean eigenvalue of the training Gram so one grid fits any scale.
	Alphas []float64
	// TestFrac and ValFrac are the shares of distinct tokens held out for
	// testing and for choosing alpha (defaults 0.2 and 0.15).
	TestFrac, ValFrac float64
	// Seed of the token split.
	Seed uint64
	// K is the NN list length for top-k (default 5).
	K int
	// Dict, when set, is E prepared for the NN scoring (NNDict): the
	// same figures at a fraction of the cost at the full vocabulary.
	Dict *dict.Dict
}

// RidgeResult reports the inverter's accuracy on the test tokens.
type RidgeResult struct {
	// Top1 and Top5: the share of test rows whose predicted embedding row
	// has the true token first / among the first five of its NN list over
	// the whole dictionary.
	Top1, Top5 float64
	// Alpha chosen on the validation tokens (relative, as in Options).
	Alpha float64
	// ValTop1[i] is the validation top-1 for Alphas[i].
	ValTop1 []float64
	// Rows and distinct tokens in each split.
	TrainRows, ValRows, TestRows       int
	TrainTokens, ValTokens, TestTokens int
	// Chance is the top-1 chance level, 1/V.
	Chance float64
}

// Ridge is the seed's multi-alpha ridge inverter (IMA at layer 0, ISA at a
// deep layer): it learns a linear map (with intercept) from observed rows
// X (N x d_in, row i labelled tokens[i]) to embedding rows E[tokens[i]]
// (E: V x d_out), choosing alpha on held-out tokens, then refits on train
// plus validation and scores NN of each predicted test row against E.
// The split is by token: no test token appears in training, so the map
// must generalise rather than memorise. The closed form is
// (X^T X + alpha I) B = X^T Y, solved through one eigendecomposition of
// the smaller of X^T X and X X^T for every alpha at once.
func Ridge(X *mat.Dense, tokens []int, E *mat.Dense, opts RidgeOptions) (*RidgeResult, error) {
	if X == nil || E == nil {
		return nil, errors.New("invert: nil input")
	}
	N, _ := X.Dims()
	V, _ := E.Dims()
	if len(tokens) != N {
		return nil, fmt.Errorf("invert: %d rows, %d labels", N, len(tokens))
	}
	for _, t := range tokens {
		if t < 0 || t >= V {
			return nil, fmt.Errorf("invert: token %d outside a dictionary of %d", t, V)
		}
	}
	if len(opts.Alphas) == 0 {
		opts.Alphas = []float64{1e-3, 1e-2, 1e-1, 1, 10, 100, 1000}
	}
	if opts.TestFrac <= 0 {
		opts.TestFrac = 0.2
	}
	if opts.ValFrac <= 0 {
		opts.ValFrac = 0.15
	}
	if opts.K <= 0 {
		opts.K = 5
	}
	// Split distinct tokens.
	var distinct []int
	seen := map[int]bool{}
	for _, t := range tokens {
		if !seen[t] {
			seen[t] = true
			distinct = append(distinct, t)
		}
	}
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5851f42d4c957f2d))
	rng.Shuffle(len(distinct), func(i, j int) { distinct[i], distinct[j] = distinct[j], distinct[i] })
	nt := int(opts.TestFrac * float64(len(distinct)))
	nv := int(opts.ValFrac * float64(len(distinct)))
	if nt < 1 || nv < 1 || nt+nv >= len(distinct) {
		return nil, fmt.Errorf("invert: %d distinct tokens are too few to split", len(distinct))
	}
	part := map[int]int{} // 0 train, 1 val, 2 test
	for i, t := range distinct {
		switch {
		case i < nt:
			part[t] = 2
		case i < nt+nv:
			part[t] = 1
		}
	}
	var tr, va, te []int
	for i, t := range tokens {
		switch part[t] {
		case 0:
			tr = append(tr, i)
		case 1:
			va = append(va, i)
		default:
			te = append(te, i)
		}
	}
	res := &RidgeResult{TrainRows: len(tr), ValRows: len(va), TestRows: len(te),
		TrainTokens: len(distinct) - nt - nv, ValTokens: nv, TestTokens: nt, Chance: 1 / float64(V)}

	fit, err := newRidgeFit(X, tokens, E, tr)
	if err != nil {
		return nil, err
	}
	best := -1.0
	vp := fit.project(X, va)
	for _, a := range opts.Alphas {
		acc, _, err := fit.score(a, vp, tokens, E, va, 1, opts.Dict)
		if err != nil {
			return nil, err
		}
		res.ValTop1 = append(res.ValTop1, acc)
		if acc > best {
			best, res.Alpha = acc, a
		}
	}
	if fit, err = newRidgeFit(X, tokens, E, append(append([]int(nil), tr...), va...)); err != nil {
		return nil, err
	}
	if res.Top1, res.Top5, err = fit.score(res.Alpha, fit.project(X, te), tokens, E, te, opts.K, opts.Dict); err != nil {
		return nil, err
	}
	return res, nil
}

// ridgeFit holds one eigendecomposition of a training set's centred Gram.
type ridgeFit struct {
	xm, ym []float64  // means
	xc, yc *mat.Dense // centred training rows and targets
	dual   bool       // eigen of X X^T (N <= d_in) rather than X^T X
	vecs   *mat.Dense // eigenvectors
	vals   []float64  // eigenvalues
	proj   *mat.Dense // vecs^T X^T Y (primal) or vecs^T Y (dual)
	scale  float64    // mean eigenvalue (alphas are relative to it)
}

func newRidgeFit(X *mat.Dense, tokens []int, E *mat.Dense, idx []int) (*ridgeFit, error) {
	_, din := X.Dims()
	_, dout := E.Dims()
	n := len(idx)
	if n == 0 {
		return nil, errors.New("invert: empty training split")
	}
	xc := mat.NewDense(n, din, nil)
	yc := mat.NewDense(n, dout, nil)
	for i, r := range idx {
		copy(xc.RawRowView(i), X.RawRowView(r))
		copy(yc.RawRowView(i), E.RawRowView(tokens[r]))
	}
	f := &ridgeFit{xm: centre(xc), ym: centre(yc), xc: xc, yc: yc, dual: n <= din}
	var g mat.SymDense
	if f.dual {
		g.SymOuterK(1, xc)
	} else {
		g.SymOuterK(1, xc.T())
	}
	var eig mat.EigenSym
	if !eig.Factorize(&g, true) {
		return nil, errors.New("invert: eigendecomposition did not converge")
	}
	f.vals = eig.Values(nil)
	f.vecs = new(mat.Dense)
	eig.VectorsTo(f.vecs)
	for _, l := range f.vals {
		f.scale += l / float64(len(f.vals))
	}
	if f.scale <= 0 {
		f.scale = 1
	}
	f.proj = new(mat.Dense)
	if f.dual {
		f.proj.Mul(f.vecs.T(), yc)
	} else {
		var xty mat.Dense
		xty.Mul(xc.T(), yc)
		f.proj.Mul(f.vecs.T(), &xty)
	}
	return f, nil
}

// project returns the rows idx of X, centred, in the eigenbasis: x V
// (primal) or x Xc^T V (dual). Every alpha's prediction is this times
// diag(1/(lambda + alpha)) times proj, so the d_in x d_out coefficients
// are never formed (a d^3 product per alpha at the full width).
func (f *ridgeFit) project(X *mat.Dense, idx []int) *mat.Dense {
	_, din := X.Dims()
	x := mat.NewDense(max(len(idx), 1), din, nil)
	for i, r := range idx {
		row := x.RawRowView(i)
		copy(row, X.RawRowView(r))
		for j := range row {
			row[j] -= f.xm[j]
		}
	}
	if f.dual {
		var k mat.Dense
		k.Mul(x, f.xc.T())
		x = &k
	}
	var xv mat.Dense
	xv.Mul(x, f.vecs)
	return &xv
}

// score predicts the rows idx (xv = f.project of them) for one relative
// alpha and returns their NN top-1 and top-k accuracy against E.
func (f *ridgeFit) score(alpha float64, xv *mat.Dense, tokens []int, E *mat.Dense, idx []int, k int, T *dict.Dict) (float64, float64, error) {
	if len(idx) == 0 {
		return 0, 0, errors.New("invert: empty evaluation split")
	}
	a := alpha * f.scale
	w := mat.DenseCopyOf(xv)
	rows, cols := w.Dims()
	for i := 0; i < rows; i++ {
		row := w.RawRowView(i)
		for j := 0; j < cols; j++ {
			row[j] /= f.vals[j] + a
		}
	}
	var pred mat.Dense
	pred.Mul(w, f.proj)
	truth := make([]int, len(idx))
	for i, r := range idx {
		truth[i] = tokens[r]
		row := pred.RawRowView(i)
		for j := range row {
			row[j] += f.ym[j]
		}
	}
	var top [][]int
	var err error
	if T != nil {
		top, err = NNDict(&pred, T, max(k, 1))
	} else {
		top, err = NN(&pred, E, max(k, 1))
	}
	if err != nil {
		return 0, 0, err
	}
	t1, t5, err := Accuracy(top, truth)
	if k == 1 {
		t5 = t1
	}
	return t1, t5, err
}

// centre subtracts the column means of M in place and returns them.
func centre(M *mat.Dense) []float64 {
	r, c := M.Dims()
	m := make([]float64, c)
	for i := 0; i < r; i++ {
		for j, x := range M.RawRowView(i) {
			m[j] += x / float64(r)
		}
	}
	for i := 0; i < r; i++ {
		row := M.RawRowView(i)
		for j := range row {
			row[j] -= m[j]
		}
	}
	return m
}
