package mask

import (
	"encoding/binary"
	"fmt"
	"math"

	"gelo/ir"
)

// Shield defaults from the protocol (GELO §4.2): at least 8 shield rows at
// energy 4 x the mean row norm of the secret rows.
const (
	DefaultMinShield = 8
	DefaultEnergy    = 4.0
)

// maxStack bounds s = n + k so that next_pow2 and s*d stay far from int
// overflow.
const maxStack = 1 << 30

// ShieldRows returns the shield row count k for n secret rows.
//
//   - "hd3": k = next_pow2(n + minK) - n, the smallest k >= minK that makes
//     s = n + k a power of two (shield-as-padding: HD3 then needs no zero
//     rows). minK <= k < n + 2*minK.
//   - "haar": k = minK.
//
// minK = 0 selects DefaultMinShield; a positive minK below the protocol
// floor of 8 is refused.
func ShieldRows(family string, n, minK int) (int, error) {
	if minK == 0 {
		minK = DefaultMinShield
	}
	if minK < DefaultMinShield {
		return 0, fmt.Errorf("mask: shield rows minK = %d below the protocol floor %d", minK, DefaultMinShield)
	}
	if n < 0 {
		return 0, fmt.Errorf("mask: row count n = %d is negative", n)
	}
	if n > maxStack-minK {
		return 0, fmt.Errorf("mask: n + minK = %d + %d exceeds %d", n, minK, maxStack)
	}
	f, ok := ir.LookupMaskFamily(family)
	if !ok || !HasSampler(family) {
		return 0, unknownFamily(family)
	}
	return f.ShieldRows(n, minK), nil // the family's rule, from ir's registry
}

// Shield rows are generated in blocks of shieldRowsPerBlock(d) rows. Each
// block gets its own 256-bit seed, drawn from the pass RNG in block order,
// and is expanded by a ChaCha8 generator keyed with that seed. The block
// size depends only on d, so the values, and the RNG bytes consumed (32
// per block), depend only on the shape and the RNG state, never on the
// worker count.
//
// shieldBlockMin is the smallest number of normals per block: small rows
// are grouped so the per-block ChaCha8 setup (one 8-block, 512-byte call)
// stays a few percent of the block's cost.
const shieldBlockMin = 1024

func shieldRowsPerBlock(d int) int { return (shieldBlockMin + d - 1) / d }

// dataNormBlock is the number of data elements per parallel block of the
// mean-norm pass (whole rows; row norms are summed serially in row order).
const dataNormBlock = 1 << 15

// FillShield writes k shield rows of width d into dst[:k*d]: standard
// Gaussian rows, each rescaled so its Euclidean norm is
// energy * mean_i ||data_i|| over the n rows of data (row-major n x d). If
// n = 0 or every data row is zero the mean norm is taken as 1 (the rows
// still get norm `energy`), so a shield is never degenerate. Norms are
// computed in float64 in a fixed order (rowNorm); the float32 rows match
// the target to float32 rounding.
//
// Randomness: the rows are split into blocks of ceil(1024/d) rows. For
// each block, in order, a 32-byte seed is drawn from rng (four Uint64
// words, little-endian) and expanded with ChaCha8 (the stream of
// math/rand/v2's ChaCha8 for that seed, computed by cc8), whose 32-bit
// halves feed a 256-layer ziggurat row by row (zigFill); each row is then
// scaled by target/norm in float64 and rounded to float32. rng advances by
// exactly 32 bytes per block, and not at all when an argument is
// rejected. The result is a pure function of (rng state, k, d, data, n,
// energy): bit-identical on every architecture and build (AVX2 or not,
// purego or not), and identical to (*Workspace).FillShield with any
// worker count or GOMAXPROCS.
//
// Soundness: each block's ChaCha8 is keyed by a fresh secret 256-bit seed
// taken from the pass's ChaCha20/HKDF stream, so the shield is
// computationally indistinguishable from Gaussian rows drawn with truly
// random bits, and distinct blocks, fills and passes use independent
// keys; nothing about the shield is reused across passes. ChaCha8 (C2SP
// chacha8rand, 8 rounds) is documented by Go as a cryptographically strong
// generator; it also erases each key as it runs (every 992 output bytes
// the next key is taken from the generator's own output). The generator
// state and the seed live in memory this package owns (for the serial
// FillShield, scratch inside rng) and are zeroed before FillShield
// returns and again by rng.Zeroise; without AVX2 the state includes a
// math/rand/v2 ChaCha8, which has no wipe method but is a plain value and
// is wiped by overwriting it (its Seed takes the seed by value, leaving a
// stack copy Go cannot wipe, like the HKDF internals noted in the package
// documentation).
//
// FillShield runs serially on the calling goroutine and allocates
// nothing; (*Workspace).FillShield runs the same computation on the
// workspace's worker team.
//
// A typical stack: x := buf[:(n+k)*d]; copy(x, h); FillShield(x[n*d:], ...).
func FillShield(dst []float32, k, d int, data []float32, n int, energy float64, rng *RNG) error {
	if err := checkShield(dst, k, d, data, n, energy, rng); err != nil {
		return err
	}
	mean := 0.0
	for i := 0; i < n; i++ {
		mean += rowNorm(data[i*d : (i+1)*d])
	}
	target, err := shieldTarget(mean, n, energy)
	if err != nil {
		return err
	}
	rows := shieldRowsPerBlock(d)
	for r0 := 0; r0 < k; r0 += rows {
		drawSeed(rng, &rng.shieldSeed)
		fillShieldBlock(&rng.shieldGen, &rng.shieldSeed, dst, r0, min(r0+rows, k), d, target)
	}
	wipeShieldGen(&rng.shieldGen, &rng.shieldSeed)
	return nil
}

// FillShield is the parallel form of the package-level FillShield: the
// same arguments, checks, RNG consumption and bit-identical result (for
// any worker count or GOMAXPROCS), with the per-row data norms (in blocks
// of about 32K elements, summed serially in row order) and the shield
// blocks spread over the workspace's worker team. The block seeds are
// drawn from rng serially, in block order, before any block is filled;
// each worker expands its blocks with its own ChaCha8 generator in the
// workspace. Seeds, generator states and data-row norms are wiped before
// FillShield returns (w.Zeroise wipes them again). It allocates nothing
// once the workspace has seen a fill with at least as many blocks and data
// rows.
//
// Like every workspace method, it must not run concurrently with other
// uses of w or its masks.
func (w *Workspace) FillShield(dst []float32, k, d int, data []float32, n int, energy float64, rng *RNG) error {
	if err := checkShield(dst, k, d, data, n, energy, rng); err != nil {
		return err
	}
	st := &w.shield
	if len(st.gens) != w.team.workers {
		st.gens = make([]shieldGen, w.team.workers)
	}
	mean := 0.0
	if n > 0 {
		rowsPer := max(1, dataNormBlock/d)
		nb := (n + rowsPer - 1) / rowsPer
		st.norms = grow64(st.norms, n)
		*st = shieldTask{gens: st.gens, seeds: st.seeds, norms: st.norms,
			data: data, d: d, rows: rowsPer, n: n}
		if nb > 1 {
			w.team.runDynamic(st, nb, 0)
		} else {
			st.runBlock(0, 0)
		}
		for _, v := range st.norms {
			mean += v
		}
		clear(st.norms)
		st.data = nil
	}
	target, err := shieldTarget(mean, n, energy)
	if err != nil {
		return err
	}
	rows := shieldRowsPerBlock(d)
	nb := (k + rows - 1) / rows
	if nb == 0 {
		return nil
	}
	if cap(st.seeds) < nb {
		clear(st.seeds[:cap(st.seeds)])
		st.seeds = make([][32]byte, nb)
	}
	seeds := st.seeds[:nb]
	for b := range seeds {
		drawSeed(rng, &seeds[b])
	}
	*st = shieldTask{gens: st.gens, seeds: st.seeds, norms: st.norms,
		shield: true, dst: dst, k: k, d: d, rows: rows, target: target}
	w.team.runDynamic(st, nb, 0)
	for i := range st.gens {
		wipeShieldGen(&st.gens[i].g, nil)
	}
	clear(seeds)
	st.dst = nil
	st.target = 0
	return nil
}

// shieldTask is the team task of (*Workspace).FillShield: the data-norm
// pass (shield = false) or the shield fill (shield = true).
type shieldTask struct {
	gens  []shieldGen // per worker
	seeds [][32]byte  // per block
	norms []float64   // per data row

	shield bool
	dst    []float32
	data   []float32
	k, d   int
	n      int
	rows   int // rows per block
	target float64
}

// shieldGen is a worker's generator, padded so neighbours do not share a
// cache line.
type shieldGen struct {
	g cc8
	_ [64]byte
}

func (t *shieldTask) runBlock(worker, block int) {
	r0 := block * t.rows
	if t.shield {
		fillShieldBlock(&t.gens[worker].g, &t.seeds[block], t.dst, r0, min(r0+t.rows, t.k), t.d, t.target)
		return
	}
	d := t.d
	for i := r0; i < min(r0+t.rows, t.n); i++ {
		t.norms[i] = rowNorm(t.data[i*d : (i+1)*d])
	}
}

func checkShield(dst []float32, k, d int, data []float32, n int, energy float64, rng *RNG) error {
	switch {
	case k < 0 || d < 1 || n < 0:
		return fmt.Errorf("mask: shield shape k=%d d=%d n=%d invalid", k, d, n)
	case k > maxStack/d || n > maxStack/d:
		return fmt.Errorf("mask: shield shape k=%d n=%d d=%d too large", k, n, d)
	case len(dst) < k*d:
		return fmt.Errorf("mask: shield dst len %d < k*d = %d", len(dst), k*d)
	case len(data) < n*d:
		return fmt.Errorf("mask: shield data len %d < n*d = %d", len(data), n*d)
	case !(energy > 0) || math.IsInf(energy, 0):
		return fmt.Errorf("mask: shield energy %v must be positive and finite", energy)
	case !rng.Live():
		return errNoRNG
	}
	return nil
}

// shieldTarget turns the sum of the n data-row norms into the target
// shield row norm.
func shieldTarget(sum float64, n int, energy float64) (float64, error) {
	mean := sum
	if n > 0 {
		mean /= float64(n)
	}
	if math.IsNaN(mean) || math.IsInf(mean, 0) {
		return 0, fmt.Errorf("mask: shield: data rows contain NaN or Inf")
	}
	if mean == 0 {
		mean = 1
	}
	return energy * mean, nil
}

// drawSeed reads 32 bytes of the pass stream (four little-endian words).
func drawSeed(rng *RNG, seed *[32]byte) {
	for i := 0; i < 4; i++ {
		binary.LittleEndian.PutUint64(seed[8*i:], rng.Uint64())
	}
}

// fillShieldBlock fills rows [r0, r1) of dst (width d) from a ChaCha8
// keyed by seed: each row is filled with ziggurat normals and rescaled to
// norm target. A row whose normals are all zero (probability below
// 2^-20000 for d = 1024) is redrawn from the same stream.
func fillShieldBlock(g *cc8, seed *[32]byte, dst []float32, r0, r1, d int, target float64) {
	g.init(seed)
	for r := r0; r < r1; r++ {
		row := dst[r*d : (r+1)*d]
		for {
			zigFill(g, row)
			if nrm := rowNorm(row); nrm > 0 {
				f := target / nrm
				for i, v := range row {
					row[i] = float32(float64(v) * f)
				}
				break
			}
		}
	}
}

// wipeShieldGen zeroes a generator's whole state (key, buffered output)
// and, if non-nil, a seed. It is not inlined, so the stores cannot be
// dropped as dead.
//
//go:noinline
func wipeShieldGen(g *cc8, seed *[32]byte) {
	g.wipe()
	if seed != nil {
		*seed = [32]byte{}
	}
}

// rowNorm is the float64 Euclidean norm of a float32 row: squares are
// accumulated with fused multiply-adds (math.FMA, exact on every
// platform) into four interleaved partial sums (element i into sum
// i mod 4, the last len(x) mod 4 elements into s0), combined as
// (s0 + s1) + (s2 + s3). The order is fixed, so the result is too.
func rowNorm(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a, b, c, e := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 = math.FMA(a, a, s0)
		s1 = math.FMA(b, b, s1)
		s2 = math.FMA(c, c, s2)
		s3 = math.FMA(e, e, s3)
	}
	for ; i < len(x); i++ {
		f := float64(x[i])
		s0 = math.FMA(f, f, s0)
	}
	return math.Sqrt((s0 + s1) + (s2 + s3))
}

// zeroise wipes every buffer FillShield owns (they are already wiped at
// the end of each call) and drops the references to the caller's rows.
func (t *shieldTask) zeroise() {
	for i := range t.gens {
		wipeShieldGen(&t.gens[i].g, nil)
	}
	clear(t.seeds[:cap(t.seeds)])
	clear(t.norms[:cap(t.norms)])
	*t = shieldTask{gens: t.gens, seeds: t.seeds, norms: t.norms}
}
