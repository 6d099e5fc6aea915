package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// int8Rows builds n weight rows of k int8 values in [-127, 127] and a
// float32 scale each (the wire.Int8 layout).
func int8Rows(r *rand.Rand, n, k int) []byte {
	w := make([]byte, n*(k+4))
	for j := range n {
		row := w[j*(k+4) : (j+1)*(k+4)]
		for i := range k {
			row[i] = byte(int8(r.IntN(255) - 127))
		}
		binary.LittleEndian.PutUint32(row[k:], math.Float32bits(float32(r.Float64()*0.01)))
	}
	return w
}

// MatMulTInt8 against a float64 reference. The bound, relative to
// s_w[j] * sum_i |q_i x_i| (+ |bias|): each product rounds once (unit
// roundoff u = 2^-24), a lane adds k/8 of them, the lane sum adds 3
// levels, the tail k%8 more, then the scale and the bias round once each:
// at most (k/8 + k%8 + 6) u, first order (doubled for the second-order
// terms). Shapes cover tails (k not a multiple of 8), one and many rows,
// and several workers.
func TestMatMulTInt8Reference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct{ m, k, n, workers int }{
		{1, 1, 1, 1}, {1, 7, 3, 2}, {1, 64, 17, 4}, {3, 100, 40, 3}, {5, 1024, 300, 4}, {1, 3072, 1024, 2},
	} {
		w := int8Rows(r, tc.n, tc.k)
		x := make([]float32, tc.m*tc.k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		bias := make([]float32, tc.n)
		for i := range bias {
			bias[i] = float32(r.NormFloat64())
		}
		c := NewCtx(tc.workers)
		y := make([]float32, tc.m*tc.n)
		c.MatMulTInt8(y, x, w, tc.m, tc.k, tc.n, bias)
		c.Close()
		u := math.Ldexp(1, -24)
		bound := 2 * float64(tc.k/8+tc.k%8+6) * u
		for i := range tc.m {
			for j := range tc.n {
				row := w[j*(tc.k+4) : (j+1)*(tc.k+4)]
				s := float64(math.Float32frombits(binary.LittleEndian.Uint32(row[tc.k:])))
				var ref, mag float64
				for l := range tc.k {
					p := float64(int8(row[l])) * float64(x[i*tc.k+l])
					ref += p
					mag += math.Abs(p)
				}
				ref, mag = s*ref+float64(bias[j]), s*mag+math.Abs(float64(bias[j]))
				if d := math.Abs(float64(y[i*tc.n+j]) - ref); d > bound*mag {
					t.Fatalf("m%d k%d n%d [%d,%d]: %v, reference %v (error %g > %g)", tc.m, tc.k, tc.n, i, j, y[i*tc.n+j], ref, d, bound*mag)
				}
			}
		}
	}
}

// Every element is one dot product in a fixed order: row r of an m-row
// product is bit-identical to the one-row product of row r alone, with
// any worker count, and to dotInt8's order written out here once more.
func TestMatMulTInt8Deterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const m, k, n = 6, 203, 70
	w := int8Rows(r, n, k)
	x := make([]float32, m*k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	full := make([]float32, m*n)
	c1 := NewCtx(1)
	defer c1.Close()
	c1.MatMulTInt8(full, x, w, m, k, n, nil)
	c4 := NewCtx(4)
	defer c4.Close()
	for i := range m {
		one := make([]float32, n)
		c4.MatMulTInt8(one, x[i*k:(i+1)*k], w, 1, k, n, nil)
		for j := range n {
			if math.Float32bits(one[j]) != math.Float32bits(full[i*n+j]) {
				t.Fatalf("[%d,%d]: one row %v, %d rows %v", i, j, one[j], m, full[i*n+j])
			}
			row := w[j*(k+4) : (j+1)*(k+4)]
			var lane [8]float32
			for l := 0; l < k&^7; l++ {
				lane[l%8] += float32(float32(int8(row[l])) * x[i*k+l])
			}
			want := float32(float32(lane[0]+lane[4])+float32(lane[2]+lane[6])) + float32(float32(lane[1]+lane[5])+float32(lane[3]+lane[7]))
			for l := k &^ 7; l < k; l++ {
				want += float32(float32(int8(row[l])) * x[i*k+l])
			}
			want *= math.Float32frombits(binary.LittleEndian.Uint32(row[k:]))
			if math.Float32bits(one[j]) != math.Float32bits(want) {
				t.Fatalf("[%d,%d]: %v, the stated order gives %v", i, j, one[j], want)
			}
		}
	}
}

// The AVX2 kernel (four rows' lanes at a time) and the portable Go one
// give the same bits: widths with and without a tail, below one group of
// 8, row counts that leave rows past the last group of four, one and
// several input rows, a bias.
func TestMatMulTInt8AsmMatchesGo(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX2 on this machine: only the portable kernel runs")
	}
	r := rand.New(rand.NewPCG(11, 12))
	c := NewCtx(3)
	defer c.Close()
	for _, tc := range []struct{ m, k, n int }{{1, 8, 4}, {1, 5, 7}, {2, 1027, 13}, {4, 1024, 64}, {1, 3072, 1030}} {
		w := int8Rows(r, tc.n, tc.k)
		x := make([]float32, tc.m*tc.k)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 3)
		}
		bias := make([]float32, tc.n)
		for i := range bias {
			bias[i] = float32(r.NormFloat64())
		}
		asm := make([]float32, tc.m*tc.n)
		c.MatMulTInt8(asm, x, w, tc.m, tc.k, tc.n, bias)
		useAsm = false
		portable := make([]float32, tc.m*tc.n)
		c.MatMulTInt8(portable, x, w, tc.m, tc.k, tc.n, bias)
		useAsm = true
		for i := range asm {
			if math.Float32bits(asm[i]) != math.Float32bits(portable[i]) {
				t.Fatalf("m%d k%d n%d: y[%d] is %v in AVX2, %v in Go", tc.m, tc.k, tc.n, i, asm[i], portable[i])
			}
		}
	}
}
