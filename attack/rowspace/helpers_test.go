package rowspace

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// dict returns a synthetic dictionary: V unit rows of width d, Gaussian
// plus an optional common component of the given weight (real embedding
// tables share a mean direction).
func dict(V, d int, common float64, rng *rand.Rand) *mat.Dense {
	D := Gaussian(V, d, rng)
	if common != 0 {
		g := Gaussian(1, d, rng).RawRowView(0)
		ng := math.Sqrt(dot(g, g))
		for i := 0; i < V; i++ {
			row := D.RawRowView(i)
			for j := range row {
				row[j] = row[j]/math.Sqrt(float64(d)) + common*g[j]/ng
			}
		}
	}
	return NormalizeRows(D)
}

// tokens draws n distinct token ids.
func tokens(n, V int, rng *rand.Rand) []int {
	p := rng.Perm(V)
	return p[:n]
}

// secret returns the rows the device would carry for these tokens: the
// dictionary rows at RMSNorm scale (norm sqrt d).
func secret(D *mat.Dense, ids []int) *mat.Dense {
	h := Rows(D, ids)
	_, d := h.Dims()
	h.Scale(math.Sqrt(float64(d)), h)
	return h
}

// masked returns A [H; S] for a Haar A with a Gaussian shield of k rows at
// the given energy (k = 0: no shield).
func masked(H *mat.Dense, k int, energy float64, rng *rand.Rand) *mat.Dense {
	var S *mat.Dense
	if k > 0 {
		S = GaussianShield(H, k, energy, rng)
	}
	X := Stack(H, S)
	s, _ := X.Dims()
	return Mix(Haar(s, rng), X)
}

func whitened(t *testing.T, H *mat.Dense, rng *rand.Rand) *mat.Dense {
	t.Helper()
	X, err := WhitenedStack(H)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := X.Dims()
	return Mix(Haar(s, rng), X)
}

func chance(m, V int) float64 { return float64(m) / float64(V) }
