package rowspace

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// GramError is the seed's cos-normalised row-Gram distance (section 09,
// "gram_error"), a prompt-fingerprinting probe:
//
//	GramError(U, H) = || G_U / ||G_U||_F  -  G_H / ||G_H||_F ||_F
//
// with G_X = X X^T the n x n row Gram. H is the n x d plaintext (data
// rows only); U is what the device saw, s >= n rows. The seed compares the
// data-row block, and so does this: G_U is the Gram of U's first n rows,
// the positions where the data rows sit in an unmasked stack (C0 sends H
// as is, so C0 reads exactly 0; any padding or shield rows after them are
// ignored, which is what makes it pad-invariant). Both Grams are Frobenius
// unit vectors, so the value lies in [0, sqrt 2]: 0 when U's leading rows
// have H's similarity structure (up to scale), sqrt 2 when the Grams are
// opposite (the seed quotes sqrt(2 - 2/n) as the ideal mask's asymptote;
// what an ideal mask reads depends on H's own structure: rows with no
// similarity structure have near-identity Grams, which any mask roughly
// keeps, so they read low whatever the mask). Lower is more
// fingerprintable. It errors when U has
// fewer rows than H or the widths differ, and returns NaN when either
// Gram is zero.
func GramError(U, H *mat.Dense) (float64, error) {
	if U == nil || H == nil {
		return 0, fmt.Errorf("rowspace: nil input")
	}
	s, d := U.Dims()
	n, dh := H.Dims()
	if d != dh {
		return 0, fmt.Errorf("rowspace: U has %d columns, H %d", d, dh)
	}
	if s < n {
		return 0, fmt.Errorf("rowspace: U has %d rows, fewer than H's %d", s, n)
	}
	var gu, gh mat.Dense
	top := U.Slice(0, n, 0, d)
	gu.Mul(top, top.T())
	gh.Mul(H, H.T())
	nu, nh := mat.Norm(&gu, 2), mat.Norm(&gh, 2)
	if nu == 0 || nh == 0 {
		return math.NaN(), nil
	}
	gu.Scale(1/nu, &gu)
	gh.Scale(1/nh, &gh)
	gu.Sub(&gu, &gh)
	return mat.Norm(&gu, 2), nil
}
