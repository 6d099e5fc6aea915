package kernels

import "fmt"

// MatMulU32Int8 is the lwe level's device product (lwe.MulRef) over the
// per-output-channel int8 layout (wire.Int8): weight row j is k int8
// values W_q[j, i] followed by a 4-byte scale, which is ignored. It sets
//
//	y[r, j] = sum_i int32(W_q[j, i]) * x[r, i]  mod 2^32
//
// for the m ciphertext rows x [m, k] of uint32 words, every weight
// sign-extended and every multiply-add wrapping in uint32. The sum is
// exact in Z_2^32, so any order, split, worker count or kernel gives the
// same bits: the AVX2 kernel and the portable Go one agree word for word.
// Bad shapes are a programmer error and panic, as in MatMulTInt8: the
// device checks its caller's lengths before it gets here.
func (c *Ctx) MatMulU32Int8(y, x []uint32, w []byte, m, k, n int) {
	if m < 0 || k <= 0 || n < 0 || len(x) < m*k || len(w) < n*(k+int8RowScale) || len(y) < m*n {
		panic(fmt.Sprintf("kernels: MatMulU32Int8: bad shapes m=%d k=%d n=%d len(y)=%d len(x)=%d len(w)=%d",
			m, k, n, len(y), len(x), len(w)))
	}
	if m == 0 || n == 0 {
		return
	}
	j := &c.u32
	j.y, j.x, j.w, j.m, j.k, j.n = y, x, w, m, k, n
	// The split of MatMulTInt8: one row streams the weights once
	// (decodeTasks by their bytes); more rows get tasks of at most
	// int8TaskRows weight rows, which stay in L2 while every input row
	// passes over them.
	tasks := decodeTasks(n, k+int8RowScale, c.workers)
	if m > 1 {
		tasks = max(4*c.workers, (n+int8TaskRows-1)/int8TaskRows)
	}
	j.per = (n + tasks - 1) / tasks
	c.run(j, (n+j.per-1)/j.per)
	j.y, j.x, j.w = nil, nil, nil
}

// u32Job is one MatMulU32Int8: task t computes weight rows [t*per,
// (t+1)*per) for every input row.
type u32Job struct {
	y, x    []uint32
	w       []byte
	m, k, n int
	per     int
}

func (j *u32Job) do(_ *Ctx, task, _ int) {
	k, n, rb := j.k, j.n, j.k+int8RowScale
	j0, j1 := task*j.per, min(n, (task+1)*j.per)
	k8 := k &^ 7
	var acc [32]uint32
	for r := range j.m {
		x, y := j.x[r*k:(r+1)*k:(r+1)*k], j.y[r*n:(r+1)*n]
		c := j0
		if useAsm && k8 > 0 {
			// Four weight rows at a time in AVX2: eight wrapping lanes
			// each, summed here with the tail.
			for ; c+4 <= j1; c += 4 {
				u32Lanes4(x, j.w[c*rb:], rb, k8, &acc)
				for q := range 4 {
					row := j.w[(c+q)*rb : (c+q)*rb+k : (c+q)*rb+k]
					y[c+q] = tailU32(sumLanesU32((*[8]uint32)(acc[8*q:8*q+8])), x, row, k8)
				}
			}
		}
		for ; c < j1; c++ {
			y[c] = dotU32Int8(x, j.w[c*rb:c*rb+k:c*rb+k])
		}
	}
}

// dotU32Int8 returns sum_i int32(int8(q[i])) * x[i] mod 2^32
// (len(x) >= len(q)), the portable form: four wrapping accumulators, then
// the tail (any order gives the same word).
func dotU32Int8(x []uint32, q []byte) uint32 {
	k := len(q)
	x = x[:k:k]
	var a0, a1, a2, a3 uint32
	k4 := k &^ 3
	for i := 0; i < k4; i += 4 {
		qq, xx := q[i:i+4:i+4], x[i:i+4:i+4]
		a0 += uint32(int32(int8(qq[0]))) * xx[0]
		a1 += uint32(int32(int8(qq[1]))) * xx[1]
		a2 += uint32(int32(int8(qq[2]))) * xx[2]
		a3 += uint32(int32(int8(qq[3]))) * xx[3]
	}
	return tailU32((a0+a1)+(a2+a3), x, q, k4)
}

// sumLanesU32 adds the eight lanes of one row of u32Lanes4 (mod 2^32).
func sumLanesU32(a *[8]uint32) uint32 {
	return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
}

// tailU32 adds the products of i >= from to s.
func tailU32(s uint32, x []uint32, q []byte, from int) uint32 {
	for i := from; i < len(q); i++ {
		s += uint32(int32(int8(q[i]))) * x[i]
	}
	return s
}
