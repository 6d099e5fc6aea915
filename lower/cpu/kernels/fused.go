package kernels

import "fmt"

// Fused TEE kernels. Each does in one pass over a row what two or three
// unfused kernels do in separate passes over memory, with the same
// arithmetic in the same order, so fused and unfused results are
// bit-identical (the gate tests check it).

const (
	fzAddNorm = iota
	fzNormRope
	fzNormRopeAppend
	fzNormRopeAppendKV
)

type fusedJob struct {
	mode            int
	sum, y, a, b, w []float32
	kc, vc          KV // the appends: K and V caches
	rows, d, per    int
	heads, hd, maxT int
	eps             float32
	r               *Rope
	seq, pos        []int32
	v               []float32 // fzNormRopeAppendKV: V rows
}

func (j *fusedJob) do(c *Ctx, task, worker int) {
	r0 := task * j.per
	r1 := min(r0+j.per, j.rows)
	switch j.mode {
	case fzAddNorm:
		d := j.d
		// The task's sums first (in L2), then their norms four rows at a
		// time (rmsRows): per row the same arithmetic as Add then RMSNorm.
		for r := r0; r < r1; r++ {
			s, a, b := j.sum[r*d:(r+1)*d], j.a[r*d:(r+1)*d], j.b[r*d:(r+1)*d]
			for i := range s {
				s[i] = a[i] + b[i]
			}
		}
		rmsRows(j.y[r0*d:r1*d], j.sum[r0*d:r1*d], j.w, r1-r0, d, j.eps)
	case fzNormRope, fzNormRopeAppend, fzNormRopeAppendKV:
		width := j.heads * j.hd
		for r := r0; r < r1; r++ {
			// An append computes the row in scratch, then stores it head by
			// head into the (head-major, maybe 16-bit) cache.
			var dst []float32
			if j.mode == fzNormRope {
				dst = j.y[r*width : (r+1)*width]
			} else {
				dst = c.kvRow[worker][:width]
			}
			copy(dst, j.a[r*width:(r+1)*width])
			rmsRows(dst, dst, j.w, j.heads, j.hd, j.eps)
			j.r.rows(dst, 0, 1, j.heads, j.pos[r:r+1])
			if j.mode == fzNormRope {
				continue
			}
			s, t := int(j.seq[r]), int(j.pos[r])
			j.kc.storeRow(dst, s, t, j.heads, j.hd, j.maxT)
			if j.mode == fzNormRopeAppendKV {
				j.vc.storeRow(j.v[r*width:(r+1)*width], s, t, j.heads, j.hd, j.maxT)
			}
		}
	}
}

func (c *Ctx) runFused(j *fusedJob, rowLen int) {
	j.per = normRowsPerTask(rowLen)
	tasks := (j.rows + j.per - 1) / j.per
	if tasks <= 1 {
		j.do(c, 0, 0)
	} else {
		c.run(j, tasks)
	}
	*j = fusedJob{}
}

// AddRMSNorm sets sum = a + b (the residual) and y = RMSNorm(sum) * w for
// rows rows of length d, one pass per row: bit-identical to Add then
// RMSNorm.
func (c *Ctx) AddRMSNorm(sum, y, a, b, w []float32, rows, d int, eps float32) {
	if rows < 0 || d <= 0 || len(sum) < rows*d || len(y) < rows*d || len(a) < rows*d || len(b) < rows*d || len(w) < d {
		panic(fmt.Sprintf("kernels: AddRMSNorm: bad shapes rows=%d d=%d", rows, d))
	}
	j := &c.fz
	*j = fusedJob{mode: fzAddNorm, sum: sum, y: y, a: a, b: b, w: w, rows: rows, d: d, eps: eps}
	c.runFused(j, d)
}

// NormRope writes y = RoPE(HeadRMSNorm(x)) for rows rows of heads heads:
// Qwen3's QK-norm and the rotary embedding in one pass, bit-identical to
// HeadRMSNorm then Rope.Apply.
func (c *Ctx) NormRope(y, x, w []float32, r *Rope, rows, heads, hd int, pos []int32, eps float32) error {
	if err := r.check(y, rows, heads, hd, pos); err != nil {
		return err
	}
	if len(x) < rows*heads*hd || len(w) < hd {
		return fmt.Errorf("kernels: NormRope: x holds %d values for %d rows of %d heads x %d", len(x), rows, heads, hd)
	}
	j := &c.fz
	*j = fusedJob{mode: fzNormRope, y: y, a: x, w: w, r: r, rows: rows, heads: heads, hd: hd, pos: pos, eps: eps}
	c.runFused(j, heads*hd)
	return nil
}

// NormRopeAppend is NormRope writing each row straight into its KV-cache
// slot (sequence seq[r], position pos[r]; head-major, see KV): QK-norm,
// RoPE and the cache append of K in one pass, bit-identical to the three
// unfused kernels.
func (c *Ctx) NormRopeAppend(cache KV, x, w []float32, r *Rope, rows, heads, hd, maxT int, seq, pos []int32, eps float32) error {
	if err := c.checkAppend(cache, x, w, r, rows, heads, hd, maxT, seq, pos); err != nil {
		return err
	}
	j := &c.fz
	*j = fusedJob{mode: fzNormRopeAppend, kc: cache, a: x, w: w, r: r, rows: rows, heads: heads, hd: hd,
		maxT: maxT, seq: seq, pos: pos, eps: eps}
	c.runFused(j, heads*hd)
	return nil
}

// checkAppend validates the shapes and slots of a fused cache append and
// sizes the row scratch.
func (c *Ctx) checkAppend(cache KV, x, w []float32, r *Rope, rows, heads, hd, maxT int, seq, pos []int32) error {
	width := heads * hd
	if hd != r.hd {
		return fmt.Errorf("kernels: NormRopeAppend: head dim %d, tables are for %d", hd, r.hd)
	}
	if err := cache.check("NormRopeAppend"); err != nil {
		return err
	}
	if len(seq) < rows || len(pos) < rows || len(x) < rows*width || len(w) < hd {
		return fmt.Errorf("kernels: NormRopeAppend: bad shapes rows=%d heads=%d hd=%d", rows, heads, hd)
	}
	slots := cache.Len() / max(maxT*width, 1)
	for i := 0; i < rows; i++ {
		if int(seq[i]) < 0 || int(seq[i]) >= slots || pos[i] < 0 || int(pos[i]) >= maxT || int(pos[i]) >= r.maxPos {
			return fmt.Errorf("kernels: NormRopeAppend: row %d at sequence %d position %d is outside the cache (%d x %d)", i, seq[i], pos[i], slots, maxT)
		}
	}
	for i, s := range c.kvRow {
		if len(s) < width {
			c.kvRow[i] = make([]float32, width)
		}
	}
	return nil
}

// NormRopeAppendKV is NormRopeAppend for K that also writes each row of v
// into the V cache at the same slot: the K and V cache writes of a layer
// in one pass, bit-identical to NormRopeAppend then KVAppend.
func (c *Ctx) NormRopeAppendKV(kcache, vcache KV, k, v, w []float32, r *Rope, rows, heads, hd, maxT int, seq, pos []int32, eps float32) error {
	width := heads * hd
	if err := vcache.check("NormRopeAppendKV"); err != nil {
		return err
	}
	if vcache.Len() != kcache.Len() || vcache.Format != kcache.Format || len(v) < rows*width {
		return fmt.Errorf("kernels: NormRopeAppendKV: v cache holds %d %v values and k cache %d %v; v %d for %d rows of %d", vcache.Len(), vcache.Format, kcache.Len(), kcache.Format, len(v), rows, width)
	}
	if err := c.checkAppend(kcache, k, w, r, rows, heads, hd, maxT, seq, pos); err != nil {
		return err
	}
	j := &c.fz
	*j = fusedJob{mode: fzNormRopeAppendKV, kc: kcache, a: k, w: w, r: r, rows: rows, heads: heads, hd: hd,
		maxT: maxT, seq: seq, pos: pos, eps: eps, vc: vcache, v: v}
	c.runFused(j, width)
	return nil
}
