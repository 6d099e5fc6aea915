package mask

import (
	"fmt"
	"math"
)

// Haar is a dense Haar-distributed orthogonal mask: A = Q diag(sign(diag R))
// where G = QR is the Householder QR of an s x s standard Gaussian matrix
// G (drawn column by column from the RNG, G[i][j] = g[j*s+i]). The sign
// fix makes the distribution of A exactly Haar on O(s) (Mezzadri 2007).
//
// The QR runs in float64: blocked Householder (panels of haarNB columns,
// compact-WY trailing updates spread over the workers with AVX2 dot/axpy
// kernels), then Q is formed in place by backward accumulation of the
// block reflectors. A is stored as float32 twice, pre-packed for the apply
// kernel: 4-row panels of A (for Apply) and of A^T (for Unapply), each
// panel k-major with the 4 row values adjacent, so the kernel streams one
// contiguous 16-byte group per k (2 * s * ceil4(s) * 4 bytes in all).
//
// Apply computes Y[i,:] = sum_k A[i,k] X[k,:] (the axpy form) with a
// cache-blocked 4x16 register-tiled AVX2 FMA kernel: per column block of
// haarNC columns and k block of haarKC rows, the X panel is packed into
// contiguous 16-column strips (kc x 16) and swept by every 4-row panel of
// A; the result accumulates in a per-worker tile and is copied back.
// Every output element is a single fused chain over k = 0..s-1 in order,
// so the bits depend neither on the blocking nor on the worker count.
type Haar struct {
	s    int
	team *team
	live bool

	pa, pt []float32 // packed A and A^T panels: P[ib][k][r] at ib*4*s + k*4 + r
	s4     int       // s rounded up to a multiple of 4

	// sampling scratch (float64), kept for reuse across passes
	g    []float64 // G, then R/V, then Q (column-major)
	tau  []float64
	sign []float64
	vbuf []float64 // current panel's V (pb columns of length m)
	tbuf []float64 // current panel's T (haarNB x haarNB, T[i][j] = tbuf[i*haarNB+j])

	// sampling phase state for runBlock
	phase  int // 0 trailing update, 1 Q formation, 2 apply/unapply
	jb, pb int
	c0     int // first column updated in this phase

	// apply scratch: per-worker s4 x haarNC tiles and haarKC x haarNC
	// packed X panels
	ybuf, xbuf []float32

	// current call
	x      []float32
	d      int
	unmask bool
}

const (
	haarNB  = 32  // QR panel width
	haarQCB = 16  // QR column block (parallel unit)
	haarNC  = 256 // apply column block
	haarKC  = 256 // apply k block
)

// NewHaar samples a Haar mask of size s >= 1 on a private workspace with
// GOMAXPROCS workers.
func NewHaar(s int, rng *RNG) (*Haar, error) {
	return NewWorkspace(0).Haar(s, rng)
}

// haarMaxSize bounds s so that s*s float64 fits comfortably in memory
// (and cannot overflow int).
const haarMaxSize = 1 << 15

func (m *Haar) sample(s int, rng *RNG) error {
	m.Zeroise()
	if s < 1 || s > haarMaxSize {
		return fmt.Errorf("mask: haar size s = %d out of range [1, %d]", s, haarMaxSize)
	}
	if !rng.Live() {
		return errNoRNG
	}
	m.s = s
	m.g = grow64(m.g, s*s)
	m.tau = grow64(m.tau, s)
	m.sign = grow64(m.sign, s)
	m.vbuf = grow64(m.vbuf, haarNB*s)
	m.tbuf = grow64(m.tbuf, haarNB*haarNB)
	m.s4 = (s + 3) &^ 3
	m.pa = grow32(m.pa, m.s4*s)
	m.pt = grow32(m.pt, m.s4*s)
	m.ybuf = grow32(m.ybuf, m.team.workers*m.s4*haarNC)
	m.xbuf = grow32(m.xbuf, m.team.workers*haarKC*haarNC)

	rng.FillNormal64(m.g)
	m.factor()
	m.formQ()
	m.pack()
	clear(m.g)
	clear(m.vbuf)
	clear(m.tbuf)
	clear(m.tau)
	m.live = true
	return nil
}

// factor overwrites g with R (upper triangle) and the Householder vectors
// (strictly below the diagonal, unit diagonal implicit); tau[j] holds the
// reflector scalars and sign[j] = sign(R[j][j]) (+1 for 0).
func (m *Haar) factor() {
	s, g := m.s, m.g
	for jb := 0; jb < s; jb += haarNB {
		pb := min(haarNB, s-jb)
		for j := jb; j < jb+pb; j++ {
			col := g[j*s+j : (j+1)*s]
			alpha := col[0]
			xn := 0.0
			if len(col) > 1 {
				xn = math.Sqrt(dot(col[1:], col[1:]))
			}
			beta, tau := alpha, 0.0
			if xn != 0 {
				beta = -math.Copysign(math.Hypot(alpha, xn), alpha)
				tau = (beta - alpha) / beta
				scale := 1 / (alpha - beta)
				for i := 1; i < len(col); i++ {
					col[i] *= scale
				}
				col[0] = beta
			}
			m.tau[j] = tau
			m.sign[j] = 1
			if beta < 0 {
				m.sign[j] = -1
			}
			if tau == 0 {
				continue
			}
			// Apply H_j to the remaining panel columns.
			v := col[1:]
			for c := j + 1; c < jb+pb; c++ {
				ac := g[c*s+j : (c+1)*s]
				w := ac[0] + dot(v, ac[1:])
				ac[0] = math.FMA(-tau, w, ac[0])
				axpy(-tau*w, v, ac[1:])
			}
		}
		if jb+pb < s {
			m.loadPanel(jb, pb)
			m.phase, m.jb, m.pb, m.c0 = 0, jb, pb, jb+pb
			m.team.run(m, (s-m.c0+haarQCB-1)/haarQCB, 0)
		}
	}
}

// formQ overwrites g with Q = H_0 H_1 ... H_{s-1} by backward block
// accumulation.
func (m *Haar) formQ() {
	s, g := m.s, m.g
	for j := 1; j < s; j++ { // strict upper triangle (R) -> 0
		clear(g[j*s : j*s+j])
	}
	last := (s - 1) / haarNB * haarNB
	for jb := last; jb >= 0; jb -= haarNB {
		pb := min(haarNB, s-jb)
		m.loadPanel(jb, pb)
		for c := jb; c < jb+pb; c++ { // panel columns -> identity
			col := g[c*s+jb : (c+1)*s]
			clear(col)
			col[c-jb] = 1
		}
		m.phase, m.jb, m.pb, m.c0 = 1, jb, pb, jb
		m.team.run(m, (s-m.c0+haarQCB-1)/haarQCB, 0)
	}
}

// loadPanel copies panel jb's Householder vectors into vbuf (explicit unit
// diagonal, zeros above) and builds the forward compact-WY factor T with
// H_jb ... H_{jb+pb-1} = I - V T V^T.
func (m *Haar) loadPanel(jb, pb int) {
	s, g := m.s, m.g
	mm := s - jb
	v := m.vbuf[:pb*mm]
	for q := 0; q < pb; q++ {
		vq := v[q*mm : (q+1)*mm]
		clear(vq[:q])
		vq[q] = 1
		copy(vq[q+1:], g[(jb+q)*s+jb+q+1:(jb+q+1)*s])
	}
	t := m.tbuf
	clear(t)
	var z [haarNB]float64
	for i := 0; i < pb; i++ {
		ti := m.tau[jb+i]
		t[i*haarNB+i] = ti
		vi := v[i*mm : (i+1)*mm]
		for j := 0; j < i; j++ {
			z[j] = dot(v[j*mm+i:(j+1)*mm], vi[i:]) // V_j^T v_i (v_i is zero above i)
		}
		for r := 0; r < i; r++ {
			acc := 0.0
			for j := r; j < i; j++ {
				acc = math.FMA(t[r*haarNB+j], z[j], acc)
			}
			t[r*haarNB+i] = -ti * acc
		}
	}
}

// runBlock dispatches the parallel phases: QR trailing update (phase 0),
// Q formation (phase 1) and Apply/Unapply (phase 2).
func (m *Haar) runBlock(worker, b int) {
	if m.phase == 2 {
		m.applyBlock(worker, b)
		return
	}
	s := m.s
	c0 := m.c0 + b*haarQCB
	c1 := min(c0+haarQCB, s)
	m.reflectCols(c0, c1, m.phase == 1)
}

// reflectCols applies the panel's block reflector to columns [c0, c1),
// rows jb..s-1: a <- a - V T^T V^T a (transposeT: factorisation,
// H_{jb+pb-1} ... H_jb a) or a <- a - V T V^T a (Q formation).
func (m *Haar) reflectCols(c0, c1 int, formQ bool) {
	s, jb, pb := m.s, m.jb, m.pb
	mm := s - jb
	v := m.vbuf[:pb*mm]
	t := m.tbuf
	var w [2][haarNB]float64
	var w8 [8]float64
	for c := c0; c < c1; c += 2 {
		nc := min(2, c1-c)
		a := m.g[c*s+jb:]
		// w = V^T a
		q := 0
		if nc == 2 {
			for ; q+4 <= pb; q += 4 {
				dot4x2(v[q*mm:], mm, a, s, mm, &w8)
				for k := 0; k < 4; k++ {
					w[0][q+k], w[1][q+k] = w8[k*2], w8[k*2+1]
				}
			}
		}
		for ; q < pb; q++ {
			for k := 0; k < nc; k++ {
				w[k][q] = dot1(v[q*mm:], a[k*s:], mm)
			}
		}
		// w <- T^T w (factorisation) or T w (Q formation)
		for k := 0; k < nc; k++ {
			wk := &w[k]
			if formQ {
				for i := 0; i < pb; i++ {
					acc := 0.0
					for j := pb - 1; j >= i; j-- {
						acc = math.FMA(t[i*haarNB+j], wk[j], acc)
					}
					wk[i] = acc
				}
			} else {
				for i := pb - 1; i >= 0; i-- {
					acc := 0.0
					for j := i; j >= 0; j-- {
						acc = math.FMA(t[j*haarNB+i], wk[j], acc)
					}
					wk[i] = acc
				}
			}
		}
		// a <- a - V w
		q = 0
		if nc == 2 {
			for ; q+4 <= pb; q += 4 {
				for k := 0; k < 4; k++ {
					w8[k*2], w8[k*2+1] = w[0][q+k], w[1][q+k]
				}
				axpy4x2(v[q*mm:], mm, a, s, mm, &w8)
			}
		} else {
			for ; q+4 <= pb; q += 4 {
				axpy1(v[q*mm:], mm, a, mm, w[0][q:q+4], 4)
			}
		}
		if q < pb {
			for k := 0; k < nc; k++ {
				axpy1(v[q*mm:], mm, a[k*s:], mm, w[k][q:pb], pb-q)
			}
		}
	}
}

// Size returns s.
func (m *Haar) Size() int { return m.s }

// Apply computes x <- A x over the row index (x is s x d row-major).
func (m *Haar) Apply(x []float32, d int) error { return m.run(x, d, false) }

// Unapply computes y <- A^T y over the row index.
func (m *Haar) Unapply(y []float32, d int) error { return m.run(y, d, true) }

// haarParallelMin is the multiply-add count below which a call runs on
// the calling goroutine only.
const haarParallelMin = 1 << 21

func (m *Haar) run(x []float32, d int, unmask bool) error {
	if !m.live {
		if !unmask {
			clear(x)
		}
		return ErrZeroised
	}
	if err := checkShape("haar", m.s, len(x), d); err != nil {
		if !unmask {
			clear(x)
		}
		return err
	}
	m.x, m.d, m.unmask, m.phase = x, d, unmask, 2
	if need := m.team.workers * m.s4 * haarNC; len(m.ybuf) < need {
		m.ybuf = grow32(m.ybuf, need)
	}
	maxActive := 0
	if m.s*m.s*d < haarParallelMin {
		maxActive = 1
	}
	m.team.run(m, (d+haarNC-1)/haarNC, maxActive)
	m.x = nil
	return nil
}

// pack writes A = Q diag(sign) (Q column-major float64 in g) into the
// two packed float32 panel layouts; rows past s are zero padding.
func (m *Haar) pack() {
	s, g := m.s, m.g
	for ib := 0; ib < m.s4; ib += 4 {
		pa := m.pa[ib*s : (ib+4)*s]
		pt := m.pt[ib*s : (ib+4)*s]
		for r := 0; r < 4; r++ {
			i := ib + r
			if i >= s {
				for k := 0; k < s; k++ {
					pa[k*4+r], pt[k*4+r] = 0, 0
				}
				continue
			}
			si := m.sign[i]
			rowT := g[i*s : (i+1)*s] // column i of Q = row i of A^T
			for k := 0; k < s; k++ {
				pa[k*4+r] = float32(g[k*s+i] * m.sign[k]) // A[i][k]
				pt[k*4+r] = float32(rowT[k] * si)         // A^T[i][k] = A[k][i]
			}
		}
	}
}

// applyBlock computes columns [b*haarNC, ...) of A X (or A^T X) into the
// worker's tile, then copies the tile back over x.
func (m *Haar) applyBlock(worker, b int) {
	s, s4, d := m.s, m.s4, m.d
	c0 := b * haarNC
	w := min(haarNC, d-c0)
	y := m.ybuf[worker*s4*haarNC : worker*s4*haarNC+s4*w]
	clear(y)
	xp := m.xbuf[worker*haarKC*haarNC : (worker+1)*haarKC*haarNC]
	x := m.x[c0:]
	pk := m.pa
	if m.unmask {
		pk = m.pt
	}
	n16 := w &^ 15
	n8 := 0
	if w-n16 >= 8 && useAsm {
		n8 = 8
	}
	np := n16 + n8
	for k0 := 0; k0 < s; k0 += haarKC {
		kc := min(haarKC, s-k0)
		// Pack X[k0:k0+kc, 0:np] into 16-wide strips (and one 8-wide).
		for k := 0; k < kc; k++ {
			row := x[(k0+k)*d : (k0+k)*d+np]
			for j := 0; j < n16; j += 16 {
				copy(xp[j*kc+k*16:j*kc+k*16+16], row[j:j+16])
			}
			if n8 > 0 {
				copy(xp[n16*kc+k*8:n16*kc+k*8+8], row[n16:n16+8])
			}
		}
		// The 4-row A panel (kc x 4, 4 KiB) stays in L1 across the strips;
		// the packed X panel (kc x haarNC, 256 KiB) stays in L2 across the
		// panels. (A Goto-style row-block order measured no faster.)
		for ib := 0; ib < s4; ib += 4 {
			ap := pk[ib*s+k0*4:]
			yb := y[ib*w:]
			for j := 0; j < n16; j += 16 {
				sgemmTile(ap, 1, 4, xp[j*kc:], 16, yb[j:], w, 4, 16, kc)
			}
			if n8 > 0 {
				sgemmTile(ap, 1, 4, xp[n16*kc:], 8, yb[n16:], w, 4, 8, kc)
			}
			if np < w {
				sgemmTile(ap, 1, 4, x[k0*d+np:], d, yb[np:], w, 4, w-np, kc)
			}
		}
	}
	for i := 0; i < s; i++ {
		copy(x[i*d:i*d+w], y[i*w:(i+1)*w])
	}
}

// Zeroise wipes A and every sampling/apply buffer; the mask refuses
// further use.
func (m *Haar) Zeroise() {
	clear(m.pa[:cap(m.pa)])
	clear(m.pt[:cap(m.pt)])
	clear(m.xbuf[:cap(m.xbuf)])
	clear(m.g[:cap(m.g)])
	clear(m.tau[:cap(m.tau)])
	clear(m.sign[:cap(m.sign)])
	clear(m.vbuf[:cap(m.vbuf)])
	clear(m.tbuf[:cap(m.tbuf)])
	clear(m.ybuf[:cap(m.ybuf)])
	m.live = false
	m.x = nil
}
