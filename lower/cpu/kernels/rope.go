package kernels

import (
	"fmt"

	"gelo/models/rope"
)

// Rope holds the rotary-embedding tables for one head_dim/theta
// (rope.Tables: the one builder, shared with the other backends).
type Rope struct {
	hd, maxPos int
	cos, sin   []float32 // [maxPos][hd/2]
}

// NewRope precomputes tables for positions 0..maxPos-1. headDim must be even
// and positive, maxPos positive and theta > 0 (it panics otherwise: these
// come from a validated model config).
func NewRope(headDim int, theta float64, maxPos int) *Rope {
	cos, sin, err := rope.Tables(headDim, theta, maxPos)
	if err != nil {
		panic(fmt.Sprintf("kernels: NewRope: %v", err))
	}
	return &Rope{hd: headDim, maxPos: maxPos, cos: cos, sin: sin}
}

// HeadDim returns the head dimension of the tables.
func (r *Rope) HeadDim() int { return r.hd }

// MaxPos returns the number of positions in the tables.
func (r *Rope) MaxPos() int { return r.maxPos }

func (r *Rope) check(x []float32, rows, heads, hd int, pos []int32) error {
	if hd != r.hd {
		return fmt.Errorf("kernels: RoPE: head dim %d, tables are for %d", hd, r.hd)
	}
	if rows < 0 || heads <= 0 || len(x) < rows*heads*hd {
		return fmt.Errorf("kernels: RoPE: bad shapes rows=%d heads=%d hd=%d len(x)=%d", rows, heads, hd, len(x))
	}
	if len(pos) < rows {
		return fmt.Errorf("kernels: RoPE: %d positions for %d rows", len(pos), rows)
	}
	for i, p := range pos[:rows] {
		if p < 0 || int(p) >= r.maxPos {
			return fmt.Errorf("kernels: RoPE: position %d of row %d out of range [0,%d)", p, i, r.maxPos)
		}
	}
	return nil
}

// Apply rotates x, laid out [rows][heads][hd], in place: row i uses
// position pos[i]. HF rotate_half convention, in float32 without fusion:
//
//	out[i]      = x[i]*cos[p,i] - x[i+hd/2]*sin[p,i]
//	out[i+hd/2] = x[i+hd/2]*cos[p,i] + x[i]*sin[p,i]
//
// It returns an error, leaving x untouched, if a position is outside
// [0, maxPos) or the shapes do not match. Apply runs on the calling
// goroutine; Ctx.RoPE is the parallel form.
func (r *Rope) Apply(x []float32, rows, heads, hd int, pos []int32) error {
	if err := r.check(x, rows, heads, hd, pos); err != nil {
		return err
	}
	r.rows(x, 0, rows, heads, pos)
	return nil
}

func (r *Rope) rows(x []float32, r0, r1, heads int, pos []int32) {
	hd := r.hd
	h := hd / 2
	for row := r0; row < r1; row++ {
		p := int(pos[row])
		cs, sn := r.cos[p*h:(p+1)*h], r.sin[p*h:(p+1)*h]
		for hh := 0; hh < heads; hh++ {
			v := x[(row*heads+hh)*hd : (row*heads+hh+1)*hd]
			a, b := v[:h], v[h:hd]
			for i := range a {
				x1, x2 := a[i], b[i]
				a[i] = float32(x1*cs[i]) - float32(x2*sn[i])
				b[i] = float32(x2*cs[i]) + float32(x1*sn[i])
			}
		}
	}
}

type ropeJob struct {
	r          *Rope
	x          []float32
	pos        []int32
	heads, per int
	rows       int
}

func (j *ropeJob) do(_ *Ctx, task, _ int) {
	r0 := task * j.per
	j.r.rows(j.x, r0, min(r0+j.per, j.rows), j.heads, j.pos)
}

// RoPE is Rope.Apply parallelised over rows on the pool (identical results).
func (c *Ctx) RoPE(r *Rope, x []float32, rows, heads, hd int, pos []int32) error {
	if err := r.check(x, rows, heads, hd, pos); err != nil {
		return err
	}
	per := max(1, (32<<10)/(heads*hd))
	tasks := (rows + per - 1) / per
	if tasks <= 1 {
		r.rows(x, 0, rows, heads, pos)
		return nil
	}
	j := &c.rope
	j.r, j.x, j.pos, j.heads, j.per, j.rows = r, x, pos, heads, per, rows
	c.run(j, tasks)
	j.r, j.x, j.pos = nil, nil, nil
	return nil
}
