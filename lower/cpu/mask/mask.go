package mask

import (
	"errors"
	"fmt"
	"strconv"

	"gelo/ir"
)

// Mask is one sampled orthogonal mask A (s x s) of a forward pass.
//
// Both methods act on the ROW index of an s x d row-major matrix, in place:
// Apply computes X <- A X (TEE -> device) and Unapply computes Y <- A^T Y
// (device -> TEE), so Unapply(Apply(X)) = X up to rounding. They allocate
// nothing once the mask is sampled, and their results are bit-identical
// whatever GOMAXPROCS or the worker count (see Workspace).
//
// On a shape error (len(x) != s*d, d < 1) or after Zeroise, Apply returns
// an error and clears x, so a caller that ignores the error still cannot
// ship unmasked rows to the device; Unapply returns an error and leaves y
// untouched.
//
// A Mask is not safe for concurrent use.
type Mask interface {
	Size() int
	Apply(x []float32, d int) error
	Unapply(y []float32, d int) error
	Zeroise()
}

// Family names accepted by ShieldRows and Workspace.Sample: the families
// of ir's registry, which names them and states their shield rule.
const (
	FamilyHaar = ir.FamilyHaar
	FamilyHD3  = ir.FamilyHD3
)

// sampler samples a mask of one family into a workspace.
type sampler func(w *Workspace, s int, rng *RNG) (Mask, error)

// samplers are this package's samplers by family name; a test checks that
// every family ir registers has one.
var samplers = map[string]sampler{
	FamilyHaar: func(w *Workspace, s int, rng *RNG) (Mask, error) {
		h, err := w.Haar(s, rng)
		if err != nil {
			return nil, err
		}
		return h, nil
	},
	FamilyHD3: func(w *Workspace, s int, rng *RNG) (Mask, error) {
		h, err := w.HD3(s, rng)
		if err != nil {
			return nil, err
		}
		return h, nil
	},
}

// HasSampler reports whether family is a registered family this package
// can sample.
func HasSampler(family string) bool {
	_, registered := ir.LookupMaskFamily(family)
	return registered && samplers[family] != nil
}

// unknownFamily is the error for a family without a sampler.
func unknownFamily(family string) error {
	var want []string
	for _, n := range ir.MaskFamilyNames() {
		want = append(want, strconv.Quote(n))
	}
	return fmt.Errorf("mask: unknown family %q (want %s)", family, ir.OrList(want))
}

func checkShape(kind string, s, n, d int) error {
	if d < 1 {
		return fmt.Errorf("mask: %s: column count d = %d, want >= 1", kind, d)
	}
	if n/d != s || n%d != 0 {
		return fmt.Errorf("mask: %s: len = %d, want s*d = %d*%d", kind, n, s, d)
	}
	return nil
}

// Workspace owns the buffers and the worker team that masks sample into
// and run on, so a protected forward pass allocates nothing once warm:
// sampling a mask of a size seen before reuses the storage.
//
// A Workspace holds at most one live mask of each family: sampling a new
// Haar (HD3) mask zeroises and replaces the previous Haar (HD3) mask of the
// same workspace, and the old pointer then refers to the new mask. This is
// the per-forward-pass lifecycle of the protocol: sample at the start of
// the pass, use for every crossing, Zeroise at the end.
//
// A Workspace (and its masks) must be used from one goroutine at a time.
type Workspace struct {
	team   *team
	haar   Haar
	hd3    HD3
	shield shieldTask
}

// NewWorkspace returns a workspace whose masks run on `workers`
// goroutines (workers < 1: runtime.GOMAXPROCS(0) at the time of the call).
// The worker count changes speed only, never results.
func NewWorkspace(workers int) *Workspace {
	w := &Workspace{team: newTeam(workers)}
	w.haar.team = w.team
	w.hd3.team = w.team
	return w
}

// Workers reports the number of worker goroutines.
func (w *Workspace) Workers() int { return w.team.workers }

// Haar samples a Haar-distributed mask of size s into the workspace.
func (w *Workspace) Haar(s int, rng *RNG) (*Haar, error) {
	if err := w.haar.sample(s, rng); err != nil {
		return nil, err
	}
	return &w.haar, nil
}

// HD3 samples an HD3 mask of size s (a power of two >= 2) into the
// workspace.
func (w *Workspace) HD3(s int, rng *RNG) (*HD3, error) {
	if err := w.hd3.sample(s, rng); err != nil {
		return nil, err
	}
	return &w.hd3, nil
}

// Sample samples a mask of the named family ("haar" or "hd3"). On error
// the previous mask of that family in w has been zeroised.
func (w *Workspace) Sample(family string, s int, rng *RNG) (Mask, error) {
	if !HasSampler(family) {
		return nil, unknownFamily(family)
	}
	return samplers[family](w, s, rng) // a nil interface on error, never a typed nil
}

// Zeroise wipes both masks and every scratch buffer of the workspace,
// including FillShield's seeds, generator states and data-row norms.
func (w *Workspace) Zeroise() {
	w.haar.Zeroise()
	w.hd3.Zeroise()
	w.shield.zeroise()
}

var errNoRNG = errors.New("mask: RNG is nil or zeroised")

// grow32 returns buf resized to n, reusing its storage when possible; a
// buffer that is outgrown is wiped before it is dropped.
func grow32(buf []float32, n int) []float32 {
	if cap(buf) >= n {
		return buf[:n]
	}
	clear(buf[:cap(buf)])
	return make([]float32, n)
}

func grow64(buf []float64, n int) []float64 {
	if cap(buf) >= n {
		return buf[:n]
	}
	clear(buf[:cap(buf)])
	return make([]float64, n)
}
