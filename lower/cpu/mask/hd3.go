package mask

import (
	"fmt"
	"math"
	"math/bits"
)

// HD3 is the Hadamard-cascade mask A = D3 H D2 H D1 H, with H the
// normalised Walsh-Hadamard matrix of order s (Sylvester ordering,
// H = H^T = H^-1) and D1, D2, D3 diagonal +-1 matrices drawn from the RNG
// (s signs each, in that order). A is never materialised: storage is O(s)
// and Apply/Unapply cost O(s log s) per column.
//
// Normalisation: each of the three transforms is scaled by c = s^-1/2,
// folded into the per-row factors of its first butterfly pass (c for the
// first transform of Apply, d1*c and d2*c for the next two; d3*c, d2*c,
// d1*c for Unapply). For even log2(s), c is a power of two and the scaling
// is exact; otherwise c is rounded once to float32. Keeping every stage
// orthonormal keeps intermediate magnitudes at the input's scale.
//
// The transform runs as radix-4 butterfly passes over whole rows (stride
// h = 1, 4, 16, ...), with one leading radix-2 pass (h = 1) when log2(s)
// is odd; each pass streams rows with 8-wide AVX2 loops. Columns are
// processed in blocks small enough that an s x block slab stays in L2
// across all passes; blocks are spread over the workspace's workers.
type HD3 struct {
	s, logS int
	team    *team
	live    bool

	// fac holds the interleaved (pre, post) per-row factor arrays, each of
	// length 2s: [0..2] first pass of each Apply transform, [3] the last
	// pass of Apply (post = d3), [4..6] first pass of each Unapply
	// transform. When a transform has a single pass, its first-pass array
	// also carries the post factors.
	fac    [7][]float32
	store  []float32
	passes []hd3Pass // one transform's pass schedule

	slab []float32 // per-worker s x cb contiguous copies of a column block

	// current call
	x      []float32
	d, cb  int
	unmask bool
}

type hd3Pass struct{ radix, h int }

// hd3MaxSize bounds s (the O(s) factor storage is 17*s float32).
const hd3MaxSize = 1 << 24

// NewHD3 samples an HD3 mask of size s (a power of two >= 2) on a private
// workspace with GOMAXPROCS workers.
func NewHD3(s int, rng *RNG) (*HD3, error) {
	return NewWorkspace(0).HD3(s, rng)
}

func (m *HD3) sample(s int, rng *RNG) error {
	m.Zeroise()
	if s < 2 || s&(s-1) != 0 || s > hd3MaxSize {
		return fmt.Errorf("mask: hd3 size s = %d must be a power of two in [2, %d]", s, hd3MaxSize)
	}
	if !rng.Live() {
		return errNoRNG
	}
	m.s, m.logS = s, bits.TrailingZeros(uint(s))
	m.passes = m.passes[:0]
	h := 1
	if m.logS%2 == 1 {
		m.passes = append(m.passes, hd3Pass{2, 1})
		h = 2
	}
	for ; h < s; h *= 4 {
		m.passes = append(m.passes, hd3Pass{4, h})
	}
	// 7 factor arrays of 2s plus 3s of raw signs (D1, D2, D3 in draw order).
	m.store = grow32(m.store, 7*2*s+3*s)
	for k := range m.fac {
		m.fac[k] = m.store[k*2*s : (k+1)*2*s]
	}
	sgn := m.store[7*2*s:]
	rng.FillSigns(sgn)
	d1, d2, d3 := sgn[:s], sgn[s:2*s], sgn[2*s:]
	c := float32(1 / math.Sqrt(float64(s)))
	single := len(m.passes) == 1
	for i := 0; i < s; i++ {
		post3 := float32(1)
		if single {
			post3 = d3[i]
		}
		m.fac[0][2*i], m.fac[0][2*i+1] = c, 1
		m.fac[1][2*i], m.fac[1][2*i+1] = d1[i]*c, 1
		m.fac[2][2*i], m.fac[2][2*i+1] = d2[i]*c, post3
		m.fac[3][2*i], m.fac[3][2*i+1] = 1, d3[i]
		m.fac[4][2*i], m.fac[4][2*i+1] = d3[i]*c, 1
		m.fac[5][2*i], m.fac[5][2*i+1] = d2[i]*c, 1
		m.fac[6][2*i], m.fac[6][2*i+1] = d1[i]*c, 1
	}
	m.live = true
	return nil
}

// Size returns s.
func (m *HD3) Size() int { return m.s }

// Apply computes x <- A x over the row index (x is s x d row-major).
func (m *HD3) Apply(x []float32, d int) error { return m.run(x, d, false) }

// Unapply computes y <- A^T y over the row index.
func (m *HD3) Unapply(y []float32, d int) error { return m.run(y, d, true) }

func (m *HD3) run(x []float32, d int, unmask bool) error {
	if !m.live {
		if !unmask {
			clear(x)
		}
		return ErrZeroised
	}
	if err := checkShape("hd3", m.s, len(x), d); err != nil {
		if !unmask {
			clear(x)
		}
		return err
	}
	m.x, m.d, m.unmask = x, d, unmask
	m.cb = hd3ColBlock(m.s, d)
	if need := m.team.workers * m.s * m.cb; m.cb < d && len(m.slab) < need {
		m.slab = grow32(m.slab, need) // first call at a new shape only
	}
	nb := (d + m.cb - 1) / m.cb
	maxActive := 0
	if m.s*d < hd3ParallelMin {
		maxActive = 1
	}
	m.team.run(m, nb, maxActive)
	m.x = nil
	return nil
}

// hd3ParallelMin is the element count below which a call runs on the
// calling goroutine only (goroutine start-up would dominate).
const hd3ParallelMin = 1 << 16

// hd3ColBlock picks the column block width from s and d only (never from
// the worker count): the s x cb float32 slab targets half of a 1 MiB L2,
// cb a multiple of 16 in [16, 1024], capped at d.
func hd3ColBlock(s, d int) int {
	cb := (512 << 10) / (4 * s)
	cb &^= 15
	cb = max(16, min(cb, 1024))
	return min(cb, d)
}

// runBlock transforms columns [b*cb, b*cb+w) of x: unless the block is the
// whole of x, it is copied to the worker's contiguous slab (row stride w,
// avoiding the cache-set conflicts of power-of-two row strides), all
// passes run there, and the result is copied back. Both layouts run the
// same per-column arithmetic.
func (m *HD3) runBlock(worker, b int) {
	c0 := b * m.cb
	w := min(m.cb, m.d-c0)
	s, np, d := m.s, len(m.passes), m.d
	inPlace := w == d // one block covers x: it is already contiguous
	p, ld := m.x, d
	if !inPlace {
		p, ld = m.slab[worker*s*m.cb:worker*s*m.cb+s*w], w
		for i := 0; i < s; i++ {
			copy(p[i*w:(i+1)*w], m.x[i*d+c0:i*d+c0+w])
		}
	}
	for t := 0; t < 3; t++ {
		for k, ps := range m.passes {
			var fac []float32
			switch {
			case k == 0 && m.unmask:
				fac = m.fac[4+t]
			case k == 0:
				fac = m.fac[t]
			case !m.unmask && t == 2 && k == np-1:
				fac = m.fac[3]
			}
			fwhtPass(p, ld, s, ps.h, w, ps.radix, fac)
		}
	}
	if !inPlace {
		for i := 0; i < s; i++ {
			copy(m.x[i*d+c0:i*d+c0+w], p[i*w:(i+1)*w])
		}
	}
}

// Zeroise wipes the sign material; the mask refuses further use.
func (m *HD3) Zeroise() {
	clear(m.store[:cap(m.store)])
	clear(m.slab[:cap(m.slab)])
	m.live = false
	m.x = nil
}
