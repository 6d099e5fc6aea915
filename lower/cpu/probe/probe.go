// Package probe is the TEE's check of the device's products (Freivalds,
// as Slalom applies it): for a public weight W [out, in], a pool of secret
// vectors r, uniform in [-1, 1)^out, and their products r^T W are made
// once at load; a device result Y of a payload U then passes when, for
// each row i and each probe r drawn for the pass,
//
//	|Y_i . r - U_i . (r^T W)| <= tol_i,
//
// which costs O(rows (in + out)) per probe instead of the O(rows in out)
// of recomputing the product.
//
// Rounding model. The device computes each y_ij = sum_k u_ik w_jk in IEEE
// binary32, in any order, with or without fused multiply-adds, from the
// exact operands it was sent: f32 rows or the dequantized q8_0 blocks
// (q * d, exact in float64, rounded once to binary32 here: one more unit
// of rounding), and the f32, bf16 or dequantized q8_0 / q4_0 weight (all
// exact in binary32). The weight format changes only which operands are
// exact; the model is the same for all four, because an untrusted device
// may sum a quantized product in integers per block or in binary32 after
// dequantizing, and both stay within it. With n = in + 3 rounding steps:
//
//   - per element, Higham and Mary's probabilistic bound (SIAM J. Sci.
//     Comput. 41(5), 2019; rounding errors independent, mean zero):
//     |delta_ij| <= lambda sqrt(n) u sum_k |u_ik w_jk|, u = 2^-24, with
//     probability at least 1 - 2 exp(-lambda^2 / 2), and the sum is at
//     most |u_i|_2 |w_j|_2 (Cauchy-Schwarz), so |delta_i|_2 <=
//     lambda sqrt(n) u |u_i|_2 |W|_F;
//   - over the secret r, independent of the device's rounding, the
//     statistic sum_j delta_ij r_j is a sum of independent bounded
//     zero-mean terms, so (Hoeffding) |sum| <= mu |delta_i|_2 with
//     probability at least 1 - 2 exp(-mu^2 / 2).
//
// tol_i = Tau sqrt(n) u |u_i|_2 |W|_F with Tau = lambda mu = 64 (both 8):
// a false alarm needs a rounding error past 8 sigma, under 1e-13 per
// element and per probe. The TEE's own sums are float64 and add at most
// gamma64(in + out + 4) (3 A_i + sum_j |y_ij|), A_i = sum_k |u_ik| c_k
// with c_k = sum_j |w_jk|, plus the binary32 subnormal floor. Honest runs
// stay 3 to 4 orders of magnitude below tol (the calibration the tests
// and `gelo bench --suite verify` print). A device that computes in less
// than binary32 (TF32, bf16 accumulation) is not computing the plan's
// product and fails by design.
//
// Soundness. Let D_i be the deviation of the returned row from the exact
// product. For r uniform on the cube, the density of D_i . r is at most
// 1 / (sqrt(2) |D_i|_2) (Ball's cube-slicing theorem) and at most 1 /
// (2 |D_i|_inf), so one probe passes with probability at most
// min(sqrt(2) tol / |D_i|_2, tol / |D_i|_inf), and K independent probes
// with that to the power K (Bound). Errors with |D_i|_1 <= tol_i pass
// whatever r is: that is the guarantee's limit. (r is drawn on a float64
// grid of 2^-52; the discretisation adds under 1e-12 to these bounds.)
package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"gelo/fanout"
	"gelo/keystream"
)

// ErrFailed is the one error every failed probe gives, whichever crossing,
// row or probe failed: the device learns one bit (the session ended) and
// nothing about where.
var ErrFailed = errors.New("integrity: a device result failed its probe; the session is aborted and its key wiped")

// Salts separating the probe streams from the mask stream and each other.
const (
	poolSalt = "gelo/probe-pool/v1"
	pickSalt = "gelo/probe-pick/v1"
)

const (
	u32 = 0x1p-24
	u64 = 0x1p-53
)

func gamma(n int, u float64) float64 {
	nu := float64(n) * u
	return nu / (1 - nu)
}

// Pool is one weight's probe material: secret, wiped by Zeroise.
type Pool struct {
	In, Out int
	r       [][]float64 // [P][Out], uniform in [-1, 1)
	wr      [][]float64 // [P][In] = r^T W, float64 sums in row order
	c       []float64   // [In]: sum_j |W[j, k]|
	wf      float64     // |W|_F
	gDev    float64     // Tau sqrt(in + 3) u32 |W|_F: the device's rounding per |u_i|_2
	g64     float64     // gamma(in + out + 4) at float64
	floor   float64     // binary32 subnormal floor of the device's sums
	workers int         // goroutines a many-row check splits its rows over
}

// Size is the pool's vector count.
func (pl *Pool) Size() int { return len(pl.r) }

// Bytes is the memory the pool holds.
func (pl *Pool) Bytes() int { return 8 * (len(pl.r)*(pl.In+pl.Out) + pl.In) }

// RowFunc gives row j of W [out, in] as the binary32 values the device
// multiplies: a view, or the row written into scratch (len in).
type RowFunc func(j int, scratch []float32) ([]float32, error)

// NewPool draws size secret vectors for the weight called name from
// HKDF(key, name) and precomputes r^T W and the column sums of |W|,
// reading W once per worker (workers <= 0: one). The result does not
// depend on the worker count.
func NewPool(key []byte, name string, size, out, in int, row RowFunc, workers int) (*Pool, error) {
	if size <= 0 || out <= 0 || in <= 0 {
		return nil, fmt.Errorf("probe pool %q: size %d, weight [%d, %d]", name, size, out, in)
	}
	var kdf keystream.KDF
	var s keystream.Stream
	defer kdf.Forget()
	defer s.Wipe()
	if err := kdf.Key(&s, key, poolSalt, []byte(name)); err != nil {
		return nil, fmt.Errorf("probe pool %q: %w", name, err)
	}
	pl := &Pool{In: in, Out: out, r: make([][]float64, size), wr: make([][]float64, size), c: make([]float64, in),
		g64: gamma(in+out+4, u64), floor: float64(in+3) * float64(out) * 0x1p-149}
	wf := 0.0
	for p := range pl.r {
		pl.r[p] = make([]float64, out)
		for j := range pl.r[p] {
			pl.r[p][j] = 2*s.Float64() - 1
		}
		pl.wr[p] = make([]float64, in)
	}
	workers = workers0(workers, size)
	pl.workers = workers
	// Worker w reads every row of W and accumulates the probes p = w mod
	// workers (worker 0 also the column sums and the norm).
	err := fanout.EachErr(workers, workers, func(_, w int) error {
		var scratch, rows [4][]float32
		for t := range scratch {
			scratch[t] = make([]float32, in)
		}
		var rs [4]float64
		for j0 := 0; j0 < out; j0 += 4 {
			nr := min(4, out-j0)
			for t := range nr {
				j := j0 + t
				wj, err := row(j, scratch[t])
				if err == nil && len(wj) != in {
					err = fmt.Errorf("%d values, want %d", len(wj), in)
				}
				if err != nil {
					return fmt.Errorf("probe pool %q: row %d: %w", name, j, err)
				}
				rows[t] = wj
				if w == 0 {
					for k, v := range wj {
						pl.c[k] += math.Abs(float64(v))
					}
					wf += sumSq(wj)
				}
			}
			for p := w; p < size; p += workers {
				if nr == 4 {
					copy(rs[:], pl.r[p][j0:j0+4])
					axpy4(pl.wr[p], &rows, &rs)
					continue
				}
				for t := range nr {
					axpy(pl.wr[p], rows[t], pl.r[p][j0+t])
				}
			}
		}
		return nil
	})
	if err != nil {
		pl.Zeroise()
		return nil, err
	}
	pl.wf = math.Sqrt(wf)
	pl.gDev = Tau * math.Sqrt(float64(in+3)) * u32 * pl.wf
	for _, v := range append(pl.c, pl.wf) {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			pl.Zeroise()
			return nil, fmt.Errorf("probe pool %q: the weight is not finite", name)
		}
	}
	return pl, nil
}

func workers0(workers, size int) int { return max(1, min(workers, size)) }

// Tau is the tolerance's multiple of the rounding scale: lambda mu of the
// package doc, 8 sigma each.
const Tau = 64

// Zeroise wipes the secret vectors and their products.
func (pl *Pool) Zeroise() {
	if pl == nil {
		return
	}
	for p := range pl.r {
		clear(pl.r[p])
		clear(pl.wr[p])
	}
}

// Scratch is a check's per-row state, sized for m rows.
type Scratch struct {
	a, sy, un, s []float64
	sub          []Scratch // one per worker of a split check
}

// splitRows is the row count from which a check splits its rows over the
// pool's workers (prefill; a decode step's few rows run on one).
const splitRows = 32

// Check tests the m rows of y [m, Out] (the device's result) against u
// [m, In] (the payload it was computed from) with the probes idx of the
// pool, and returns the largest |Y_i . r - U_i . (r^T W)| / tol_i over
// rows and probes: at most 1 passes, anything else (NaN included) fails.
// Every row and probe is computed whatever the outcome.
func (pl *Pool) Check(y, u []float32, m int, idx []int, sc *Scratch) float64 {
	w := pl.workers
	if m < splitRows || w < 2 {
		return pl.check(y, u, m, idx, sc)
	}
	if len(sc.sub) < w {
		sc.sub = make([]Scratch, w)
	}
	worst := make([]float64, w)
	fanout.Each(w, w, func(_, g int) {
		i0, i1 := g*m/w, (g+1)*m/w
		worst[g] = pl.check(y[i0*pl.Out:i1*pl.Out], u[i0*pl.In:i1*pl.In], i1-i0, idx, &sc.sub[g])
	})
	return slices.Max(worst) // the largest is the same whatever the split
}

// check is Check over the rows of y and u on one goroutine.
func (pl *Pool) check(y, u []float32, m int, idx []int, sc *Scratch) float64 {
	k := len(idx)
	if cap(sc.a) < m || cap(sc.s) < m*k {
		sc.a, sc.sy, sc.un = make([]float64, m), make([]float64, m), make([]float64, m)
		sc.s = make([]float64, m*k)
	}
	a, sy, un, st := sc.a[:m], sc.sy[:m], sc.un[:m], sc.s[:m*k]
	clear(sy)
	clear(st)
	for i := range m {
		ui := u[i*pl.In : (i+1)*pl.In]
		a[i] = absDot(ui, pl.c)
		un[i] = math.Sqrt(sumSq(ui))
	}
	// Y r over column blocks, so a block of each drawn r stays in cache
	// for every row (the LM head's rows are long).
	for j0 := 0; j0 < pl.Out; j0 += checkBlock {
		j1 := min(j0+checkBlock, pl.Out)
		for i := range m {
			yi := y[i*pl.Out+j0 : i*pl.Out+j1]
			sy[i] += absSum(yi)
			for t, p := range idx {
				st[i*k+t] += dot(yi, pl.r[p][j0:j1])
			}
		}
	}
	worst := 0.0
	for t, p := range idx {
		wr := pl.wr[p]
		for i := range m {
			ref := dot(u[i*pl.In:(i+1)*pl.In], wr)
			tol := pl.tol(un[i], a[i], sy[i])
			d := math.Abs(st[i*k+t] - ref)
			ratio := d / tol
			switch {
			case tol == 0 && d == 0:
				ratio = 0
			case math.IsNaN(ratio):
				ratio = math.Inf(1) // a NaN or infinite result fails
			}
			worst = max(worst, ratio)
		}
	}
	return worst
}

// checkBlock is the column block of the Y r sums: 2048 float64 of each
// drawn r (16 KiB) and of a row of Y (8 KiB) stay in L1.
const checkBlock = 2048

// tol is a row's bound from |u_i|_2, A_i and sum_j |y_ij| (see the
// package doc); the last factor covers the float64 rounding of the bound
// itself.
func (pl *Pool) tol(un, a, sy float64) float64 {
	return (pl.gDev*un + pl.g64*(3*a+sy) + pl.floor) * (1 + 0x1p-40)
}

// Tol is row u's tolerance for a device row y, for tests and reports.
func (pl *Pool) Tol(u, y []float32) float64 {
	return pl.tol(math.Sqrt(sumSq(u)), absDot(u, pl.c), absSum(y))
}

// Bound is the probability that k independent probes all pass a row whose
// deviation from the exact product is d, at tolerance tol (Ball's bound
// and the sup-norm bound, whichever is smaller, capped at 1).
func Bound(d []float64, tol float64, k int) float64 {
	var l2, linf float64
	for _, v := range d {
		l2 += v * v
		linf = max(linf, math.Abs(v))
	}
	l2 = math.Sqrt(l2)
	if l2 == 0 {
		return 1
	}
	p := min(1, math.Sqrt2*tol/l2, tol/linf)
	return math.Pow(p, float64(k))
}

// Caught is the smallest deviation 2-norm that k probes catch with
// probability at least 1 - fail, at tolerance tol.
func Caught(tol float64, k int, fail float64) float64 {
	return math.Sqrt2 * tol / math.Pow(fail, 1/float64(k))
}

// Picker draws the probes of each pass from HKDF(session key, pass):
// k distinct pool indices per check, uniform, in instruction order.
type Picker struct {
	kdf  keystream.KDF
	s    keystream.Stream
	info [12]byte
	perm []int
}

// Begin keys the pass's draws.
func (pk *Picker) Begin(key []byte, pass uint64) error {
	copy(pk.info[:4], "pass")
	binary.BigEndian.PutUint64(pk.info[4:], pass)
	return pk.kdf.Key(&pk.s, key, pickSalt, pk.info[:])
}

// Pick returns k distinct indices below size, uniform (a partial
// Fisher-Yates shuffle with rejection sampling); the slice is reused.
func (pk *Picker) Pick(k, size int) []int {
	if cap(pk.perm) < size {
		pk.perm = make([]int, size)
	}
	perm := pk.perm[:size]
	for i := range perm {
		perm[i] = i
	}
	for i := range k {
		j := i + pk.below(uint64(size-i))
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm[:k]
}

// below is uniform in [0, n).
func (pk *Picker) below(n uint64) int {
	limit := -n % n // 2^64 mod n: values below it are rejected
	for {
		v := pk.s.Uint64()
		if v >= limit {
			return int(v % n)
		}
	}
}

// Wipe forgets the session key's derived state.
func (pk *Picker) Wipe() {
	pk.s.Wipe()
	pk.kdf.Forget()
}
