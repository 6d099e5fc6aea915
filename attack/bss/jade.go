package bss

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/mat"
)

// ErrNotConverged is returned (wrapped, with the best V so far) by
// JointDiagonalize when maxSweeps ran out before every rotation fell below tol.
var ErrNotConverged = errors.New("bss: joint diagonalisation did not converge")

// JointDiagonalize finds the orthogonal V that makes every V^T M V as
// diagonal as possible (least squares on the off-diagonal entries), by
// Cardoso & Souloumiac's Jacobi method: sweeps of Givens rotations over all
// pairs (p, q), each angle closed-form for the whole set. The matrices must
// be square, of one size, and symmetric (JADE's cumulant slices and SOBI's
// symmetrised lagged covariances are). A sweep stops rotating a pair when the
// rotation's sine is below tol; the routine stops after a sweep with no
// rotation, or after maxSweeps, returning V and a wrapped ErrNotConverged.
// The inputs are not modified.
func JointDiagonalize(mats []*mat.Dense, tol float64, maxSweeps int) (*mat.Dense, error) {
	v, _, err := jointDiag(mats, tol, maxSweeps)
	return v, err
}

func jointDiag(mats []*mat.Dense, tol float64, maxSweeps int) (*mat.Dense, int, error) {
	if len(mats) == 0 {
		return nil, 0, fmt.Errorf("%w: no matrices to diagonalise", ErrShape)
	}
	if maxSweeps <= 0 {
		maxSweeps = 100
	}
	if !(tol > 0) {
		tol = 1e-8
	}
	m, c := mats[0].Dims()
	if m != c || m < 1 {
		return nil, 0, fmt.Errorf("%w: matrix 0 is %dx%d, not square", ErrShape, m, c)
	}
	// Work on a private copy laid out entry-major, T[(i*m+j)*K + k] for matrix
	// k: a rotation of (p, q) then reads and writes rows and columns p, q of
	// all K matrices as 4m contiguous runs of length K, instead of striding
	// through every matrix (memory-bound at m ~ 64, K ~ 2000).
	K := len(mats)
	T := make([]float64, m*m*K)
	for k, a := range mats {
		r, cc := a.Dims()
		if r != m || cc != m {
			return nil, 0, fmt.Errorf("%w: matrix %d is %dx%d, want %dx%d", ErrShape, k, r, cc, m, m)
		}
		for i := 0; i < m; i++ {
			for j := 0; j < m; j++ {
				x := a.At(i, j)
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, 0, fmt.Errorf("bss: matrix %d has non-finite entries", k)
				}
				T[(i*m+j)*K+k] = x
			}
		}
	}
	v := make([]float64, m*m)
	for i := 0; i < m; i++ {
		v[i*m+i] = 1
	}
	// Chunks of jdChunk matrices run in parallel; partial sums are added in
	// chunk order, so the result does not depend on the number of cores.
	nch := (K + jdChunk - 1) / jdChunk
	part := make([][3]float64, nch)
	sweeps := 0
	for sweeps < maxSweeps {
		sweeps++
		rotated := false
		for p := 0; p < m-1; p++ {
			for q := p + 1; q < m; q++ {
				// g_k = [M_pp - M_qq, M_pq + M_qp]; G = sum_k g_k g_k^T.
				pp, qq, pq, qp := (p*m+p)*K, (q*m+q)*K, (p*m+q)*K, (q*m+p)*K
				parallelChunks(nch, func(c int) {
					lo, hi := c*jdChunk, min((c+1)*jdChunk, K)
					var g11, g12, g22 float64
					for k := lo; k < hi; k++ {
						a := T[pp+k] - T[qq+k]
						b := T[pq+k] + T[qp+k]
						g11 += a * a
						g12 += a * b
						g22 += b * b
					}
					part[c] = [3]float64{g11, g12, g22}
				})
				var g11, g12, g22 float64
				for _, pc := range part {
					g11 += pc[0]
					g12 += pc[1]
					g22 += pc[2]
				}
				ton := g11 - g22
				toff := 2 * g12
				theta := 0.5 * math.Atan2(toff, ton+math.Sqrt(ton*ton+toff*toff))
				cs, sn := math.Cos(theta), math.Sin(theta)
				if math.Abs(sn) <= tol {
					continue
				}
				rotated = true
				parallelChunks(nch, func(c int) {
					lo, hi := c*jdChunk, min((c+1)*jdChunk, K)
					for j := 0; j < m; j++ { // rows p, q
						rp := T[(p*m+j)*K+lo : (p*m+j)*K+hi]
						rq := T[(q*m+j)*K+lo : (q*m+j)*K+hi]
						for k := range rp {
							x, y := rp[k], rq[k]
							rp[k] = cs*x + sn*y
							rq[k] = -sn*x + cs*y
						}
					}
					for i := 0; i < m; i++ { // columns p, q
						cp := T[(i*m+p)*K+lo : (i*m+p)*K+hi]
						cq := T[(i*m+q)*K+lo : (i*m+q)*K+hi]
						for k := range cp {
							x, y := cp[k], cq[k]
							cp[k] = cs*x + sn*y
							cq[k] = -sn*x + cs*y
						}
					}
				})
				for i := 0; i < m; i++ {
					x, y := v[i*m+p], v[i*m+q]
					v[i*m+p] = cs*x + sn*y
					v[i*m+q] = -sn*x + cs*y
				}
			}
		}
		if !rotated {
			return mat.NewDense(m, m, v), sweeps, nil
		}
	}
	return mat.NewDense(m, m, v), sweeps, fmt.Errorf("%w after %d sweeps", ErrNotConverged, maxSweeps)
}

// JADEOptions configures JADE. The zero value is usable.
type JADEOptions struct {
	MaxComponents int     // PCA whitening keeps at most this many (0: 64); cost ~ m^4 N
	Tol           float64 // Jacobi rotation threshold (0: 1/(100 sqrt(N)), Cardoso's)
	MaxSweeps     int     // Jacobi sweep cap (0: 100)
}

// JADE is Cardoso & Souloumiac's (1993) joint approximate diagonalisation of
// eigen-matrices: PCA-whiten U (m x N, mixtures x samples) to k <= 64
// components, form the k(k+1)/2 fourth-order cumulant slices
// Q_ij = E[z_i z_j z z^T] - delta_ij I - e_i e_j^T - e_j e_i^T (off-diagonal
// slices weighted sqrt 2, so the set equals the full k^2 set in the JD
// criterion), jointly diagonalise them, and rotate the whitened data. The
// sources are the rows of X in U = A X.
func JADE(u mat.Matrix, opt JADEOptions) (*Result, error) {
	if u == nil {
		return nil, fmt.Errorf("%w: nil observation", ErrShape)
	}
	wh, err := whiten(u, opt.MaxComponents)
	if err != nil {
		return nil, err
	}
	_, n := wh.Z.Dims()
	tol := opt.Tol
	if tol <= 0 {
		tol = 1 / (100 * math.Sqrt(float64(n)))
	}
	cms := cumulantSlices(wh.Z)
	v, sweeps, err := jointDiag(cms, tol, opt.MaxSweeps)
	conv := true
	if errors.Is(err, ErrNotConverged) {
		conv = false
	} else if err != nil {
		return nil, err
	}
	return newResult(wh, mat.DenseCopyOf(v.T()), u, sweeps, conv), nil
}

// cumulantSlices returns JADE's k(k+1)/2 cumulant matrices of whitened z
// (k x N). All fourth moments E[z_i z_j z_p z_q] come from one product P P^T
// of the pair-product matrix P (rows z_i * z_j, i <= j), which gonum's blocked
// Mul does far faster than one product per slice.
func cumulantSlices(z *mat.Dense) []*mat.Dense {
	k, n := z.Dims()
	np := k * (k + 1) / 2
	idx := make([][]int, k) // idx[i][j] = pair index of (min, max)
	for i := range idx {
		idx[i] = make([]int, k)
	}
	pr := mat.NewDense(np, n, nil)
	t := 0
	for i := 0; i < k; i++ {
		zi := z.RawRowView(i)
		for j := i; j < k; j++ {
			zj := z.RawRowView(j)
			row := pr.RawRowView(t)
			for c := range row {
				row[c] = zi[c] * zj[c]
			}
			idx[i][j], idx[j][i] = t, t
			t++
		}
	}
	mom := mat.NewSymDense(np, nil)
	mom.SymOuterK(1/float64(n), pr)
	out := make([]*mat.Dense, 0, np)
	sq2 := math.Sqrt2
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			pij := idx[i][j]
			q := mat.NewDense(k, k, nil)
			for p := 0; p < k; p++ {
				for r := p; r < k; r++ {
					x := mom.At(pij, idx[p][r])
					if i == j && p == r {
						x--
					}
					if (i == p && j == r) || (i == r && j == p) {
						x--
						if i == j { // e_i e_i^T counted twice
							x--
						}
					}
					if i != j {
						x *= sq2
					}
					q.Set(p, r, x)
					q.Set(r, p, x)
				}
			}
			out = append(out, q)
		}
	}
	return out
}

// jdChunk is the number of matrices one goroutine rotates at a time.
const jdChunk = 256

// parallelChunks runs f(0..n-1) on up to GOMAXPROCS goroutines; inline when
// there is one chunk (small problems pay no goroutine cost).
func parallelChunks(n int, f func(c int)) {
	if n == 1 {
		f(0)
		return
	}
	w := min(runtime.GOMAXPROCS(0), n)
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(w)
	for range w {
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1)) - 1
				if c >= n {
					return
				}
				f(c)
			}
		}()
	}
	wg.Wait()
}
