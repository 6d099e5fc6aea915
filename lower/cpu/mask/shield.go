package mask

import (
	"fmt"
	"math"
	"math/bits"
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
	switch family {
	case FamilyHaar:
		return minK, nil
	case FamilyHD3:
		t := n + minK
		p := 1 << bits.Len(uint(t-1)) // next power of two >= t (t >= 8)
		return p - n, nil
	}
	return 0, fmt.Errorf("mask: unknown family %q (want %q or %q)", family, FamilyHaar, FamilyHD3)
}

// FillShield writes k shield rows of width d into dst[:k*d]: standard
// Gaussian rows (drawn row by row from rng), each rescaled so its
// Euclidean norm is energy * mean_i ||data_i|| over the n rows of data
// (row-major n x d). If n = 0 or every data row is zero the mean norm is
// taken as 1 (the rows still get norm `energy`), so a shield is never
// degenerate. Norms are computed in float64; the float32 rows match the
// target to float32 rounding.
//
// A typical stack: x := buf[:(n+k)*d]; copy(x, h); FillShield(x[n*d:], ...).
func FillShield(dst []float32, k, d int, data []float32, n int, energy float64, rng *RNG) error {
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
	mean := 0.0
	for i := 0; i < n; i++ {
		mean += rowNorm(data[i*d : (i+1)*d])
	}
	if n > 0 {
		mean /= float64(n)
	}
	if mean == 0 || math.IsNaN(mean) || math.IsInf(mean, 0) {
		if math.IsNaN(mean) || math.IsInf(mean, 0) {
			return fmt.Errorf("mask: shield: data rows contain NaN or Inf")
		}
		mean = 1
	}
	target := energy * mean
	for r := 0; r < k; r++ {
		row := dst[r*d : (r+1)*d]
		for {
			rng.FillNormal(row)
			nrm := rowNorm(row)
			if nrm > 0 {
				f := target / nrm
				for i, v := range row {
					row[i] = float32(float64(v) * f)
				}
				break
			}
			if !rng.Live() {
				return errNoRNG
			}
		}
	}
	return nil
}

// rowNorm is the float64 Euclidean norm of a float32 row.
func rowNorm(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		f := float64(v)
		s = math.FMA(f, f, s)
	}
	return math.Sqrt(s)
}
