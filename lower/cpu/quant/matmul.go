package quant

import (
	"fmt"

	"gelo/device/wire"
)

// Work split of MatMulQ (depends only on m, n and the row size of w).
const (
	// mvTaskBytes: weight bytes per matvec (m = 1) task: long contiguous
	// runs (on the AVX-512 VM's fast phases a bare read in 128 KiB tasks
	// ran 10-17 % below 1 MiB ones), the count a multiple of the workers
	// to balance them.
	mvTaskBytes = 1 << 20
	// gemmPanelBytes: weight bytes per GEMM column panel (kept in L2 while
	// a block of activation rows goes through it).
	gemmPanelBytes = 192 << 10
	// gemmRowBlock: activation rows per GEMM task.
	gemmRowBlock = 64
	// mm16Rows: most activation rows per AVX-512 kernel call (their
	// quants stay in L1 while the 16 weight rows go through).
	mm16Rows = 16
)

type matmulJob struct {
	y, bias  []float32
	q        []int8    // activation quants, scales and block sums
	dx       []float32 // (views of the wire.Activations)
	sx       []int32
	w        *wire.Matrix
	m, n, nb int
	ldw      int // bytes per weight row
	gemm     bool
	colUnit  int // tasks split the weight rows (columns of y) in whole units of this many rows,
	colTasks int // evenly (the last task also takes the rows past the last whole unit)
	rowsPer  int // activation rows per task (GEMM); the last takes the rest
	rowTasks int
	amxTab   []float32 // the Q4_K AMX kernel's per-chunk dx and sx (amxTable)
}

// MatMulQ computes y[m,n] = x[m,k] · w[n,k]^T (+ bias[n] when bias is not
// nil), where x is the quantized activation xq (m = xq.Rows(), k =
// xq.Cols() = w.Cols) and n = w.Rows. y is row-major m x n and must not
// overlap bias. Slices may be longer than needed.
//
// Every y[i][j] follows the canonical order of the package documentation
// whatever m, the tiling, the work split or the number of workers: row i
// of an m-row product is bit-identical to the m = 1 product of row i alone,
// and the assembly is bit-identical to the portable code.
//
// m = 1 (decode) streams w once, split evenly into ~1 MiB tasks of
// weight rows (a multiple of the worker count), eight rows per kernel call. m >= 2 tiles the product into tasks of (64
// activation rows) x (a ~192 KiB panel of w) computed with 2x4 micro-tiles
// (an interleaved w: tiles of whole groups, 2x8 for wire.Interleaved8 and
// up to 16x16 for wire.Interleaved16, and the rows past the last whole
// group one at a time).
// It returns an error (computing nothing) on a shape mismatch.
func (c *Ctx) MatMulQ(y []float32, xq *wire.Activations, w *wire.Matrix, bias []float32) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("quant: MatMulQ: %w", err)
	}
	if xq == nil || xq.Rows() <= 0 {
		return fmt.Errorf("quant: MatMulQ: empty activations")
	}
	m, k, n := xq.Rows(), xq.Cols(), w.Rows
	if k != w.Cols {
		return fmt.Errorf("quant: MatMulQ: activation cols %d != weight cols %d", k, w.Cols)
	}
	if len(y) < m*n {
		return fmt.Errorf("quant: MatMulQ: len(y) = %d < m*n = %d", len(y), m*n)
	}
	if bias != nil && len(bias) < n {
		return fmt.Errorf("quant: MatMulQ: len(bias) = %d < n = %d", len(bias), n)
	}
	c.warm.Reset(c.pool, nil) // a later Warm of w starts over
	j := &c.mm
	j.y, j.bias, j.w = y, bias, w
	j.q, j.dx, j.sx = xq.Quants(), xq.Scales(), xq.Sums()
	j.m, j.n, j.nb = m, n, k/wire.QK
	j.ldw = w.RowBytes()
	// unit: the rows a kernel call takes (an interleaved group, 8 for
	// the matvec, 4 or 16 for a GEMM tile); per: the rows a task should
	// take (a panel kept in L2 for a GEMM).
	var unit, per int
	switch {
	case w.Layout != wire.RowMajor:
		unit = w.Layout.GroupRows()
		per = max(unit, gemmPanelBytes/j.ldw/unit*unit)
	case m == 1:
		unit = mvUnit(w)
	case useAVX512 && (w.Format == wire.Q8_0 || w.Format == wire.Q4_0):
		unit = 16 // whole 16-column tiles
		per = max(unit, (gemmPanelBytes/j.ldw)&^15)
	default:
		unit = 4
		per = max(unit, (gemmPanelBytes/j.ldw)&^3)
	}
	j.gemm = m > 1
	j.colUnit, j.rowsPer, j.rowTasks = unit, 1, 1
	units := max(1, n/unit)
	if m == 1 {
		j.colTasks = mvTasks(n, j.ldw, units, c.Workers())
	} else {
		j.colTasks = max(1, n/per)
		j.rowsPer, j.rowTasks = gemmRowBlock, max(1, m/gemmRowBlock)
	}
	if useAMX && w.Format == wire.Q4_K && w.Layout == wire.Interleaved16 && m >= mm16Rows {
		c.amxTab = amxTable(c.amxTab, j.dx, j.sx, m/mm16Rows, j.nb)
		j.amxTab = c.amxTab
	}
	c.run(j, j.colTasks*j.rowTasks)
	j.y, j.bias, j.w = nil, nil, nil
	j.q, j.dx, j.sx, j.amxTab = nil, nil, nil, nil
	return nil
}

// MatMul quantizes the row-major m x k float32 input x (k = w.Cols) into
// the Ctx's scratch activations and computes MatMulQ. The scratch grows on
// demand (allocating only when a larger shape is first seen).
func (c *Ctx) MatMul(y, x []float32, m int, w *wire.Matrix, bias []float32) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("quant: MatMul: %w", err)
	}
	if err := c.QuantizeActivations(&c.act, x, m, w.Cols); err != nil {
		return err
	}
	return c.MatMulQ(y, &c.act, w, bias)
}

// mvUnit is the rows a matvec's kernel call takes: an interleaved group, or
// eight row-major rows.
func mvUnit(w *wire.Matrix) int {
	if w.Layout != wire.RowMajor {
		return w.Layout.GroupRows()
	}
	return 8
}

// mvTasks is the task count of a matvec (m = 1) on n weight rows of ldw
// bytes in units kernel units: ~mvTaskBytes of weights per task, the count
// a multiple of the workers and the units split evenly (taskRows), so that
// no worker is left a task more than the others at the end.
func mvTasks(n, ldw, units, workers int) int {
	t := max(1, (n*ldw+mvTaskBytes-1)/mvTaskBytes)
	t = (t + workers - 1) / workers * workers
	return min(t, units)
}

// taskRows returns the weight rows [j0, j1) of column task jb of tasks,
// the n rows split evenly in whole units of unit rows (the last task also
// takes the rows past the last whole unit).
func taskRows(n, unit, tasks, jb int) (j0, j1 int) {
	units := max(1, n/unit)
	j0 = units * jb / tasks * unit
	j1 = units * (jb + 1) / tasks * unit
	if jb == tasks-1 {
		j1 = n
	}
	return j0, j1
}

func (j *matmulJob) do(task int) {
	ib, jb := task%j.rowTasks, task/j.rowTasks
	j0, j1 := taskRows(j.n, j.colUnit, j.colTasks, jb)
	i0 := ib * j.rowsPer
	i1 := i0 + j.rowsPer
	if ib == j.rowTasks-1 {
		i1 = j.m
	}
	if j.w.Layout != wire.RowMajor {
		j.doInterleaved(i0, i1, j0, j1)
		return
	}
	f, n, nb, ldw := j.w.Format, j.n, j.nb, j.ldw
	k := nb * wire.QK
	wd := j.w.Data
	if f == wire.Q4_K && j.gemm && j1-j0 >= 8 {
		// GEMM block, Q4_K: 2 activation rows by 8 weight rows per call
		// (the super-block headers unpacked once for both rows), the
		// tail tiles shifted back (i1-i0 >= 2 since m >= 2).
		for jg := j0; jg < j1; jg += 8 {
			jc := min(jg, j1-8)
			for ig := i0; ig < i1; ig += 2 {
				ic := min(ig, i1-2)
				mm28(j.q[ic*k:], j.dx[ic*nb:], j.sx[ic*nb:], wd[jc*ldw:], ldw, nb, j.y[ic*n+jc:], n)
			}
		}
		if j.bias != nil {
			for i := i0; i < i1; i++ {
				addBias(j.y[i*n+j0:i*n+j1], j.bias[j0:j1])
			}
		}
		return
	}
	if !j.gemm || j1-j0 < 4 || f == wire.Q4_K {
		// Matvec rows (m = 1), a panel narrower than a micro-tile
		// (n < 4), or a Q4_K panel narrower than its 8-row tile: eight
		// weight rows per call, the tail tile shifted back
		// to end at j1 (it recomputes some outputs bit-identically).
		for i := i0; i < i1; i++ {
			x, dx, sx := j.q[i*k:(i+1)*k], j.dx[i*nb:(i+1)*nb], j.sx[i*nb:(i+1)*nb]
			yr := j.y[i*n : (i+1)*n]
			if j1-j0 < 8 {
				for jj := j0; jj < j1; jj++ {
					yr[jj] = dotGo(f, x, dx, sx, wd[jj*ldw:], nb)
				}
			} else {
				for jg := j0; jg < j1; jg += 8 {
					jc := min(jg, j1-8)
					mv8(f, x, dx, sx, wd[jc*ldw:], ldw, nb, yr[jc:])
				}
			}
			if j.bias != nil {
				addBias(yr[j0:j1], j.bias[j0:j1])
			}
		}
		return
	}
	if useAVX512 && (f == wire.Q8_0 || f == wire.Q4_0) && j1-j0 >= 16 {
		// GEMM block, AVX-512: 16 weight rows by up to mm16Rows
		// activation rows per call, the tail tile shifted back to end at
		// j1 (it recomputes some outputs bit-identically).
		for jg := j0; jg < j1; jg += 16 {
			jc := min(jg, j1-16)
			for ig := i0; ig < i1; ig += mm16Rows {
				r := min(mm16Rows, i1-ig)
				mm16(f, j.q[ig*k:], j.dx[ig*nb:], j.sx[ig*nb:], wd[jc*ldw:], ldw, nb, r, j.y[ig*n+jc:], n)
			}
		}
		if j.bias != nil {
			for i := i0; i < i1; i++ {
				addBias(j.y[i*n+j0:i*n+j1], j.bias[j0:j1])
			}
		}
		return
	}
	// GEMM block: 2x4 micro-tiles, tails shifted back inside the block
	// (i1-i0 >= 2 since m >= 2; j1-j0 >= 4).
	for jg := j0; jg < j1; jg += 4 {
		jc := min(jg, j1-4)
		wt := wd[jc*ldw:]
		for ig := i0; ig < i1; ig += 2 {
			ic := min(ig, i1-2)
			mm24(f, j.q[ic*k:], j.dx[ic*nb:], j.sx[ic*nb:], wt, ldw, nb, j.y[ic*n+jc:], n)
		}
	}
	if j.bias != nil {
		for i := i0; i < i1; i++ {
			addBias(j.y[i*n+j0:i*n+j1], j.bias[j0:j1])
		}
	}
}

func addBias(y, b []float32) {
	b = b[:len(y)]
	for i := range y {
		y[i] += b[i]
	}
}
