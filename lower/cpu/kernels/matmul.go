package kernels

import "fmt"

// Work split of MatMulT (depends only on m, k, n, whether the AVX-512
// kernels run and, for one row, the worker count).
const (
	// gemvTaskFloats: weight floats per matvec task for 2 or 3 rows (128
	// KiB: a task's panel of w stays in L2 while the rows of x go through
	// it).
	gemvTaskFloats = 32 << 10
	// decodeTaskBytes: weight bytes per task of a one-row matvec, which
	// reuses nothing: long contiguous runs. On the AVX-512 VM's fast
	// phases a bare read in 128 KiB tasks ran 10-17 % below the same
	// bytes in 1 MiB tasks or in one half per worker (in the slow phases
	// all three ran the same).
	decodeTaskBytes = 1 << 20
	// gemmPanelFloats: weight floats per GEMM column panel (384 KiB, in L2).
	gemmPanelFloats = 96 << 10
	// gemmRowBlock: rows of x per GEMM task (whole 4x3 and 6x8 tiles).
	gemmRowBlock = 60
	// packedRowBlock: rows of x per GEMM task where the task packs its
	// weight panel (AVX-512, k%8 == 0; gemmBlockPacked): 30 row groups
	// share one packing. Against 60-row blocks, 2 cores, m = 512: f32
	// 13-24 % and bf16 5-10 % more GFLOP/s; 360 rows or a whole m were
	// no better.
	packedRowBlock = 180
	// packMinRows: the fewest rows a task packs its panel for. Below it
	// the packing costs more than it saves (m = 16: f32 -15 %, bf16
	// -25 %; m = 48 about even for f32, bf16 5 % slower; m = 96 both
	// ahead), and the tiles widen the weights in registers instead.
	packMinRows = 96
)

type matmulJob struct {
	y, x, w, bias []float32
	wb            []uint16 // bf16 weights (MatMulTBF16), in place of w
	k             int
	gemm          bool
	split
}

// split is a product's tasks: rowTasks x colTasks blocks of y, the last
// of each taking the rest.
type split struct {
	m, n     int // rows and columns of y
	colsPer  int // columns of y per task; 0: colTasks even shares of n/8 tiles
	colTasks int
	rowsPer  int // rows of y per task
	rowTasks int
}

// bounds returns task's block of y: rows i0..i1, columns j0..j1.
func (s *split) bounds(task int) (i0, i1, j0, j1 int) {
	ib, jb := task%s.rowTasks, task/s.rowTasks
	if s.colsPer == 0 {
		tiles := s.n / 8
		j0, j1 = tiles*jb/s.colTasks*8, tiles*(jb+1)/s.colTasks*8
	} else {
		j0, j1 = jb*s.colsPer, (jb+1)*s.colsPer
	}
	if jb == s.colTasks-1 {
		j1 = s.n
	}
	i0, i1 = ib*s.rowsPer, (ib+1)*s.rowsPer
	if ib == s.rowTasks-1 {
		i1 = s.m
	}
	return i0, i1, j0, j1
}

// MatMulT computes y[m,n] = x[m,k] · w[n,k]^T (+ bias[n] when bias is not
// nil). w has the HF Linear layout [out, in]. y must not overlap x, w or
// bias. Slices may be longer than needed; shorter ones panic (a programming
// error).
//
// Every y[i][j] is dot(x_i, w_j) + bias[j] evaluated in the canonical order
// described in the package documentation, whatever m, the tiling, the work
// split or the number of workers: row i of an m-row product is bit-identical
// to the m=1 product of row i alone.
//
// For m < 4 each row is a matvec: the weight rows are split into tasks of
// about 1 MiB for one row (decodeTasks), 128 KiB for two or three (the
// other rows reuse a task's weights from L2), and streamed once. For
// m >= 4 the product is tiled into tasks of (60 rows) x (a ~384 KiB panel of
// w) and computed with register-blocked micro-kernels: 6x8 tiles with
// AVX-512 (two dot products per zmm register, each in the 8-lane order),
// else 4x3 tiles with AVX2.
func (c *Ctx) MatMulT(y, x, w []float32, m, k, n int, bias []float32) {
	if m < 0 || k < 0 || n < 0 || len(x) < m*k || len(w) < n*k || len(y) < m*n || (bias != nil && len(bias) < n) {
		panic(fmt.Sprintf("kernels: MatMulT: bad shapes m=%d k=%d n=%d len(y)=%d len(x)=%d len(w)=%d len(bias)=%d",
			m, k, n, len(y), len(x), len(w), len(bias)))
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			if bias != nil {
				copy(y[i*n:(i+1)*n], bias[:n])
			} else {
				clear(y[i*n : (i+1)*n])
			}
		}
		return
	}
	c.matmul(y, x, w, nil, m, k, n, bias)
}

// matmul runs the product with f32 weights w or, when wb is not nil,
// bf16 weights wb; the work split depends only on m, k, n, the kernels
// (AVX-512) and (one row) the worker count.
func (c *Ctx) matmul(y, x, w []float32, wb []uint16, m, k, n int, bias []float32) {
	j := &c.mm
	j.y, j.x, j.w, j.wb, j.bias = y, x, w, wb, bias
	j.m, j.k, j.n = m, k, n
	if m == 1 && (wb == nil || (k%8 == 0 && useAsm)) {
		// (bf16 weights the assembly cannot take are widened a task's
		// panel at a time into scratch: those keep 128 KiB tasks.)
		c.warm.Reset(c.pool, nil) // a later warming of w starts over
		j.gemm = false
		esize := 4
		if wb != nil {
			esize = 2
		}
		j.colsPer, j.colTasks = 0, decodeTasks(n, k*esize, c.workers)
		j.rowsPer, j.rowTasks = 1, 1
	} else if m < 4 {
		j.gemm = false
		task := gemvTaskFloats
		if wb != nil {
			task *= 2 // the same 128 KiB of weights a task
		}
		per := (task / k) &^ 7
		if per < 8 {
			per = 8
		}
		j.colsPer, j.colTasks = per, max(1, n/per)
		j.rowsPer, j.rowTasks = m, 1
	} else {
		j.gemm = true
		per := (gemmPanelFloats / k) / 24 * 24 // whole 4x3 and 6x8 tiles
		if per < 24 {
			per = 24
		}
		j.colsPer, j.colTasks = per, max(1, n/per)
		rb := gemmRowBlock
		if useAVX512 && k%8 == 0 {
			rb = packedRowBlock
		}
		j.rowsPer, j.rowTasks = rb, max(1, m/rb)
	}
	c.run(j, j.colTasks*j.rowTasks)
	j.y, j.x, j.w, j.wb, j.bias = nil, nil, nil, nil, nil
}

// decodeTasks is the task count of a one-row product of n weight rows
// of rowBytes each: about decodeTaskBytes a task, a multiple of workers
// (so that no worker is left a task more than the others at the end), at
// most one 8-row tile a task.
func decodeTasks(n, rowBytes, workers int) int {
	t := max(1, (n*rowBytes+decodeTaskBytes-1)/decodeTaskBytes)
	t = (t + workers - 1) / workers * workers
	return max(1, min(t, n/8))
}

func (j *matmulJob) do(c *Ctx, task, worker int) {
	i0, i1, j0, j1 := j.split.bounds(task)
	k, n := j.k, j.n
	// w holds weight rows from wBase on: all of them, or the task's panel
	// of bf16 rows widened into this worker's scratch.
	w, wBase := j.w, 0
	if j.gemm && useAVX512 && k%8 == 0 && i1-i0 >= packMinRows && j1-j0 >= 8 {
		c.gemmBlockPacked(worker, j, i0, i1, j0, j1)
		return
	}
	if j.wb != nil {
		if !j.gemm && k%8 == 0 && useAsm && j1-j0 >= 8 {
			for i := i0; i < i1; i++ {
				matvecRangeBF16(j.y[i*n:(i+1)*n], j.x[i*k:(i+1)*k], j.wb, k, j0, j1, j.bias)
			}
			return
		}
		if j.gemm && useAVX512 && k%8 == 0 && i1-i0 >= 6 && j1-j0 >= 8 {
			gemmBlockBF16(j, i0, i1, j0, j1)
			return
		}
		w, wBase = c.widenPanel(worker, j.wb[j0*k:j1*k]), j0
	}
	if !j.gemm {
		for i := i0; i < i1; i++ {
			matvecRange(j.y[i*n:(i+1)*n], j.x[i*k:(i+1)*k], w, wBase, k, j0, j1, j.bias)
		}
		return
	}
	gemmBlock(j, w, wBase, i0, i1, j0, j1)
}

// matvecRange sets y[j] = dot(x, w_j) (+ bias[j]) for j0 <= j < j1, row j
// of the weights being w[(j-wBase)*k:].
func matvecRange(y, x, w []float32, wBase, k, j0, j1 int, bias []float32) {
	if j1-j0 < 8 {
		for jj := j0; jj < j1; jj++ {
			y[jj] = dot(x, w[(jj-wBase)*k:], k)
		}
	} else {
		full := (j1 - j0) / 8
		gemv1x8(x, w[(j0-wBase)*k:], k, k, full, y[j0:])
		if j0+8*full < j1 {
			// The tail tile is shifted back to end at j1; it recomputes
			// some columns bit-identically.
			gemv1x8(x, w[(j1-8-wBase)*k:], k, k, 1, y[j1-8:])
		}
	}
	if bias != nil {
		addBias(y[j0:j1], bias[j0:j1])
	}
}

// gemmBlockPacked is gemmBlock's AVX-512 case for k%8 == 0 (i1-i0 >=
// packMinRows, j1-j0 >= 8), on f32 or bf16 weights: the task's weight
// rows are packed once into the worker's scratch (packTiles: bf16
// widened exactly), the column tail tile shifted back to end at j1 packed
// after the full ones, and every 6-row group of the block (the last
// shifted back inside it) goes through them with gemm6x8Packed. The packing takes the inserts and
// the widening out of the FMA loop, which the row groups of the block
// would otherwise each repeat; the bits are gemm6x8's on the unpacked rows
// (the same products, added in the same order).
func (c *Ctx) gemmBlockPacked(worker int, j *matmulJob, i0, i1, j0, j1 int) {
	y, x, bias, k, n := j.y, j.x, j.bias, j.k, j.n
	full := (j1 - j0) / 8
	tiles := full
	if j0+8*full < j1 {
		tiles++
	}
	if cap(c.wide[worker]) < 8*tiles*k {
		c.wide[worker] = make([]float32, 8*tiles*k)
	}
	wp := c.wide[worker][:8*tiles*k]
	var w32 []float32
	var wb []uint16
	if j.wb != nil {
		wb = j.wb
	} else {
		w32 = j.w
	}
	pack := func(dst []float32, row, ntiles int) {
		if wb != nil {
			packTiles(dst, nil, wb[row*k:], k, k, ntiles)
		} else {
			packTiles(dst, w32[row*k:], nil, k, k, ntiles)
		}
	}
	pack(wp, j0, full)
	if tiles > full {
		pack(wp[8*full*k:], j1-8, 1)
	}
	for g := i0; g < i1; g += 6 {
		r := min(g, i1-6)
		gemm6x8Packed(x[r*k:], k, wp, k, full, y[r*n+j0:], n)
		if tiles > full {
			gemm6x8Packed(x[r*k:], k, wp[8*full*k:], k, 1, y[r*n+j1-8:], n)
		}
		if bias != nil {
			for i := r; i < r+6; i++ {
				addBias(y[i*n+j0:i*n+j1], bias[j0:j1])
			}
		}
	}
}

// gemmBlock computes the rows [i0,i1) x columns [j0,j1) of y (i1-i0 >= 4)
// with register tiles: 6x8 (AVX-512) or 4x3. A row group or tile that would
// run past the block is shifted back inside it and recomputes some elements
// bit-identically, so no element is written by two tasks. Weight row j is
// w[(j-wBase)*k:].
func gemmBlock(j *matmulJob, w []float32, wBase, i0, i1, j0, j1 int) {
	y, x, bias, k, n := j.y, j.x, j.bias, j.k, j.n
	w = w[(j0-wBase)*k:]
	j1 -= j0
	y = y[j0:]
	if bias != nil {
		bias = bias[j0:]
	}
	j0 = 0
	switch {
	case useAVX512 && i1-i0 >= 6 && j1-j0 >= 8:
		full := (j1 - j0) / 8
		for g := i0; g < i1; g += 6 {
			r := min(g, i1-6)
			gemm6x8(x[r*k:], k, w[j0*k:], k, k, full, y[r*n+j0:], n)
			if j0+8*full < j1 {
				jt := j1 - 8
				gemm6x8(x[r*k:], k, w[jt*k:], k, k, 1, y[r*n+jt:], n)
			}
			if bias != nil {
				for i := r; i < r+6; i++ {
					addBias(y[i*n+j0:i*n+j1], bias[j0:j1])
				}
			}
		}
	case j1-j0 >= 3:
		full := (j1 - j0) / 3
		for g := i0; g < i1; g += 4 {
			r := min(g, i1-4)
			x0, x1, x2, x3 := x[r*k:], x[(r+1)*k:], x[(r+2)*k:], x[(r+3)*k:]
			y0, y1, y2, y3 := y[r*n:], y[(r+1)*n:], y[(r+2)*n:], y[(r+3)*n:]
			gemm4x3(x0, x1, x2, x3, w[j0*k:], k, k, full, y0[j0:], y1[j0:], y2[j0:], y3[j0:])
			if j0+3*full < j1 {
				jt := j1 - 3
				gemm4x3(x0, x1, x2, x3, w[jt*k:], k, k, 1, y0[jt:], y1[jt:], y2[jt:], y3[jt:])
			}
			if bias != nil {
				for i := r; i < r+4; i++ {
					addBias(y[i*n+j0:i*n+j1], bias[j0:j1])
				}
			}
		}
	default:
		for i := i0; i < i1; i++ {
			for jj := j0; jj < j1; jj++ {
				y[i*n+jj] = dot(x[i*k:], w[jj*k:], k)
			}
			if bias != nil {
				addBias(y[i*n+j0:i*n+j1], bias[j0:j1])
			}
		}
	}
}

func addBias(y, b []float32) {
	b = b[:len(y)]
	for i := range y {
		y[i] += b[i]
	}
}
