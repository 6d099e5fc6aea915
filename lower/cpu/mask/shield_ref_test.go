package mask

import "math"

// fillShieldPolarRef is the previous FillShield, kept only as the
// baseline of BenchmarkFillShield: k*d float64 Marsaglia-polar normals
// drawn one pair at a time from the pass ChaCha20 stream (rng.FillNormal)
// and a single-accumulator float64 norm. Its output is not comparable with
// FillShield's (different generator), only its cost.
func fillShieldPolarRef(dst []float32, k, d int, data []float32, n int, energy float64, rng *RNG) error {
	if err := checkShield(dst, k, d, data, n, energy, rng); err != nil {
		return err
	}
	mean := 0.0
	for i := 0; i < n; i++ {
		mean += rowNormSerialRef(data[i*d : (i+1)*d])
	}
	target, err := shieldTarget(mean, n, energy)
	if err != nil {
		return err
	}
	for r := 0; r < k; r++ {
		row := dst[r*d : (r+1)*d]
		for {
			rng.FillNormal(row)
			nrm := rowNormSerialRef(row)
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

// rowNormSerialRef is the previous rowNorm (one FMA chain).
func rowNormSerialRef(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		f := float64(v)
		s = math.FMA(f, f, s)
	}
	return math.Sqrt(s)
}
