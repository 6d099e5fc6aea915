package lwebreak

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"

	attacklwe "gelo/attack/lwe"
	"gelo/lwe"
)

// FplllCommand is the reducer the primal attack runs: Debian's fplll-tools
// (the `fplll` command reads a basis on stdin, one row per line in
// brackets, and prints the reduced basis in the same form).
const FplllCommand = "fplll"

// ErrNoReducer is the error of a primal attack where fplll is not on PATH.
var ErrNoReducer = errors.New("lwebreak: fplll not found (Debian: apt-get install fplll-tools)")

// PrimalOptions shape the embedding and the reduction.
type PrimalOptions struct {
	// Samples is how many of the row's d_in samples enter the lattice
	// (0: SamplesFor's choice). Fewer make a smaller lattice, which fplll
	// reduces much faster.
	Samples int
	// Block is the BKZ block size; 0 or below 3 runs LLL alone.
	Block int
	// Timeout bounds one reduction (0: one minute).
	Timeout time.Duration
}

// PrimalResult is what one run of the primal attack found and cost.
type PrimalResult struct {
	S       []int8 // the recovered secret (nil if none)
	Dim     int    // rank of the embedded lattice
	Scale   int64  // the secret coordinates' scale (Bai-Galbraith)
	Elapsed time.Duration
}

// Embedding returns the Kannan embedding, with Bai-Galbraith scaling, of
// the samples b = A s + e mod q (the first k rows of A and b): the rows of
//
//	[ w I_n   -A_k^T   0 ]   n rows: secret coordinate i, column a_i of A
//	[ 0        q I_k   0 ]   k rows: reduction mod q
//	[ 0        b_k^T   1 ]   1 row:  the target (Kannan, tau = 1)
//
// entries of A and b centred in [-q/2, q/2). The combination
// sum_i s_i row_i + row_last + sum_j k_j q-row_j is (w s, e, 1), of length
// sqrt(w^2 h + |e|^2 + 1), far below the Gaussian heuristic of the
// lattice's rank n + k + 1 and volume w^n q^k when q^(k/(n+k+1)) is large:
// lattice reduction finds it as a basis row. w = round(sigma_e / sigma_s)
// = round(sqrt(n / h)) balances the sparse secret against the error
// (sigma_e = 1 for CBD(2)), as the estimator's primal attack assumes [BG14].
func Embedding(a *lwe.Public, b []uint32, k int, h int) (rows [][]int64, w int64) {
	n := a.Lambda
	w = max(1, int64(math.Round(math.Sqrt(float64(n)/float64(h)))))
	d := n + k + 1
	rows = make([][]int64, d)
	for i := range n {
		r := make([]int64, d)
		r[i] = w
		col := a.Col(i)
		for j := range k {
			r[n+j] = -int64(int32(col[j]))
		}
		rows[i] = r
	}
	for j := range k {
		r := make([]int64, d)
		r[n+j] = 1 << 32
		rows[n+j] = r
	}
	last := make([]int64, d)
	for j := range k {
		last[n+j] = int64(int32(b[j]))
	}
	last[d-1] = 1
	rows[d-1] = last
	return rows, w
}

// Primal runs the primal attack on the samples b of one row: embed, reduce
// with fplll, and read s off every reduced row whose last coordinate is
// +-1; a candidate counts only if it solves all d_in samples (Solves).
// h is the secret's weight (public: a parameter of the level). It returns
// ErrNoReducer when fplll is missing and errNotFound (wrapped) when the
// reduction ran but no row gave the secret.
func Primal(ctx context.Context, a *lwe.Public, b []uint32, h int, opt PrimalOptions) (PrimalResult, error) {
	k := opt.Samples
	if k <= 0 {
		k = SamplesFor(a.Lambda, h, a.In, opt.Block)
	}
	k = min(k, a.In)
	if len(b) != a.In {
		return PrimalResult{}, fmt.Errorf("lwebreak: primal: %d samples for A with %d rows", len(b), a.In)
	}
	if _, err := exec.LookPath(FplllCommand); err != nil {
		return PrimalResult{}, ErrNoReducer
	}
	rows, w := Embedding(a, b, k, h)
	res := PrimalResult{Dim: len(rows), Scale: w}
	start := time.Now()
	red, err := reduce(ctx, rows, opt)
	res.Elapsed = time.Since(start)
	if err != nil {
		return res, err
	}
	n := a.Lambda
	for _, r := range red {
		sign := r[len(r)-1]
		if sign != 1 && sign != -1 {
			continue
		}
		s := make([]int8, n)
		ok := true
		for i := range n {
			v := sign * r[i]
			if v%w != 0 || v/w < -1 || v/w > 1 {
				ok = false
				break
			}
			s[i] = int8(v / w)
		}
		if ok && Solves(a, b, s) {
			res.S = s
			return res, nil
		}
	}
	return res, fmt.Errorf("lwebreak: primal: rank %d, block %d: %w", len(rows), opt.Block, errNotFound)
}

// gapMargin is how far below the reduction's reach the target must lie
// for SamplesFor: the GSA is an average-case shape and LLL does better than
// its worst-case factor, so 4 leaves room on both sides.
const gapMargin = 4

// SamplesFor returns the fewest samples k (at most m) for which the
// embedded target (w s, e, 1) is short enough for a reduction of block
// size block (LLL below 3) to expose it, by the usual uniqueness-gap rule:
// the Gaussian heuristic sqrt(d / (2 pi e)) vol^(1/d) of the rank
// d = n + k + 1 lattice of volume w^n q^k exceeds gapMargin delta^d times
// the target's expected length sqrt(w^2 h + k + 1), delta the block size's
// root-Hermite factor (attack/lwe.Delta, the estimator's table). Where no k
// qualifies it returns m: the attack then runs on every sample and is
// expected to fail, which is what a secure parameter set shows.
func SamplesFor(n, h, m, block int) int {
	w := max(1, math.Round(math.Sqrt(float64(n)/float64(h))))
	ld := math.Log(attacklwe.Delta(max(block, 2)))
	for k := 1; k <= m; k++ {
		d := float64(n + k + 1)
		lnVol := float64(n)*math.Log(w) + float64(k)*32*math.Ln2
		lnGH := 0.5*math.Log(d/(2*math.Pi*math.E)) + lnVol/d
		lnT := 0.5 * math.Log(w*w*float64(h)+float64(k)+1)
		if lnGH-lnT >= math.Log(gapMargin)+d*ld {
			return k
		}
	}
	return m
}

// reduce runs fplll on the basis rows and parses the reduced basis.
func reduce(ctx context.Context, rows [][]int64, opt PrimalOptions) ([][]int64, error) {
	timeout := opt.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"-a", "lll"}
	if opt.Block >= 3 {
		args = []string{"-a", "bkz", "-b", strconv.Itoa(opt.Block)}
	}
	cmd := exec.CommandContext(ctx, FplllCommand, args...)
	cmd.Stdin = strings.NewReader(formatBasis(rows))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("lwebreak: fplll %s on rank %d: stopped after %v: %w", strings.Join(args, " "), len(rows), timeout, ctx.Err())
		}
		return nil, fmt.Errorf("lwebreak: fplll %s on rank %d: %w (%s)", strings.Join(args, " "), len(rows), err, strings.TrimSpace(errb.String()))
	}
	red, err := parseBasis(out.Bytes(), len(rows[0]))
	if err != nil {
		return nil, fmt.Errorf("lwebreak: fplll %s output: %w", strings.Join(args, " "), err)
	}
	return red, nil
}

// formatBasis writes rows in fplll's input form: [[a b c]\n[d e f]\n].
func formatBasis(rows [][]int64) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for _, r := range rows {
		sb.WriteByte('[')
		for j, v := range r {
			if j > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(strconv.FormatInt(v, 10))
		}
		sb.WriteString("]\n")
	}
	sb.WriteString("]\n")
	return sb.String()
}

// parseBasis reads fplll's output form, rows of width d. An entry beyond
// int64 (fplll works in arbitrary precision) marks its row unusable: such a
// row is not short. Zero rows (fplll keeps them for a dependent input)
// are dropped.
func parseBasis(out []byte, d int) ([][]int64, error) {
	var rows [][]int64
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		t = strings.TrimLeft(t, "[")
		t = strings.TrimRight(t, "]")
		if strings.TrimSpace(t) == "" {
			continue
		}
		f := strings.Fields(t)
		if len(f) != d {
			return nil, fmt.Errorf("line %d: %d entries, want %d", line, len(f), d)
		}
		r := make([]int64, d)
		ok := true
		for j, s := range f {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				var ne *strconv.NumError
				if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
					ok = false
					break
				}
				return nil, fmt.Errorf("line %d entry %d: %w", line, j, err)
			}
			r[j] = v
		}
		if ok {
			rows = append(rows, r)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errors.New("no basis rows")
	}
	return rows, nil
}
