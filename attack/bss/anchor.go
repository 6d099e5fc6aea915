package bss

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// AnchorOptions configures AnchorICA.
type AnchorOptions struct {
	// Ridge is the ridge weight of the anchor map, relative to the largest
	// squared singular value of U (0: 1e-8, which is least squares).
	Ridge float64
	// ICA configures the FastICA run on the deflated payload.
	ICA FastICAOptions
}

// AnchorResult is what known anchor rows buy an ICA attacker.
type AnchorResult struct {
	// AnchorMap is the p x m ridge least-squares map with AnchorMap*U ~
	// anchors: under U = A X with A orthogonal and the anchors rows of X, its
	// rows are the anchors' columns of A (read off exactly when U has full row
	// rank), which fixes the anchors' permutation and sign outright.
	AnchorMap *mat.Dense
	// AnchorResidual is ||AnchorMap*U - anchors||_F / ||anchors||_F: near 0
	// when the anchors lie in U's row space, as rows of X always do.
	AnchorResidual float64
	// Complement is an orthonormal (m-p) x m basis of the mixture space
	// orthogonal to AnchorMap's rows: Complement*U mixes only the non-anchor
	// rows of X (exactly so in the full-rank orthogonal case).
	Complement *mat.Dense
	// ICA is FastICA on Complement*U; its Sources estimate the non-anchor
	// rows up to the permutation/sign that MatchedCosines forgives. Its
	// Unmixing is re-expressed against U itself (Unmixing = Rotation *
	// Whitening * Complement), so Sources = Unmixing * U and Amari(Unmixing,
	// A) score it directly.
	ICA *Result
	// Sources are ICA.Sources (k x N): the attacker's non-anchor estimates.
	Sources *mat.Dense
}

// AnchorICA attacks U (m x N) knowing some rows of X (anchors, p x N; in gelo
// the BOS or chat-template rows whose values the public model fixes). It fits
// the ridge map from U to the anchors, deflates U onto the orthogonal
// complement of the fitted mixing rows (removing the anchors and one
// dimension of the mask per anchor), and runs FastICA on what is left.
// Score Sources against the true non-anchor rows with MatchedCosines.
func AnchorICA(u, anchors mat.Matrix, opt AnchorOptions) (*AnchorResult, error) {
	if u == nil || anchors == nil {
		return nil, fmt.Errorf("%w: nil input", ErrShape)
	}
	m, n := u.Dims()
	p, na := anchors.Dims()
	if na != n {
		return nil, fmt.Errorf("%w: anchors have %d columns, U has %d", ErrShape, na, n)
	}
	if p < 1 || p >= m {
		return nil, fmt.Errorf("%w: need 1 <= anchors (%d) < mixtures (%d)", ErrShape, p, m)
	}
	ridge := opt.Ridge
	if ridge <= 0 {
		ridge = 1e-8
	}
	// M = anchors * U^T (U U^T + lambda I)^{-1}, through U's SVD:
	// U = P Sigma R^T  =>  M = anchors R diag(sigma/(sigma^2+lambda)) P^T.
	var svd mat.SVD
	if !svd.Factorize(u, mat.SVDThin) {
		return nil, fmt.Errorf("bss: SVD of U failed")
	}
	sv := svd.Values(nil)
	var pu, ru mat.Dense
	svd.UTo(&pu)
	svd.VTo(&ru)
	lambda := ridge * sv[0] * sv[0]
	var ar mat.Dense
	ar.Mul(anchors, &ru) // p x r
	for j, s := range sv {
		f := s / (s*s + lambda)
		for i := 0; i < p; i++ {
			ar.Set(i, j, ar.At(i, j)*f)
		}
	}
	mp := new(mat.Dense)
	mp.Mul(&ar, pu.T()) // p x m
	var fit mat.Dense
	fit.Mul(mp, u)
	fit.Sub(&fit, anchors)
	res := mat.Norm(&fit, 2) / math.Max(mat.Norm(anchors, 2), math.SmallestNonzeroFloat64)

	// Complement of span(rows of M) in R^m from the full SVD of M.
	var msvd mat.SVD
	if !msvd.Factorize(mp, mat.SVDFull) {
		return nil, fmt.Errorf("bss: SVD of the anchor map failed")
	}
	msv := msvd.Values(nil)
	rank := 0
	for _, s := range msv {
		if s > math.Sqrt(rankTol)*msv[0] {
			rank++
		}
	}
	var vm mat.Dense
	msvd.VTo(&vm) // m x m
	comp := mat.DenseCopyOf(vm.Slice(0, m, rank, m).T())
	var def mat.Dense
	def.Mul(comp, u)
	ica, err := FastICA(&def, opt.ICA)
	if err != nil {
		return nil, err
	}
	// Express the ICA unmixing against the original U.
	total := new(mat.Dense)
	total.Mul(ica.Unmixing, comp)
	ica.Unmixing = total
	return &AnchorResult{AnchorMap: mp, AnchorResidual: res, Complement: comp, ICA: ica, Sources: ica.Sources}, nil
}
