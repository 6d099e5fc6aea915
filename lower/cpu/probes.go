package cpu

import (
	"fmt"
	"strconv"

	"gelo/ir"
	"gelo/lower/cpu/probe"
	"gelo/models/safetensors"
)

// ErrIntegrity is what every run gives once a probe failed: see
// probe.ErrFailed.
var ErrIntegrity = probe.ErrFailed

// probePool returns the pool of the probe's weight (made once per weight
// and pool size, from the session key: W r is precomputed from the same
// resident weight the device was given).
func (b *Backend) probePool(p *Program, n *ir.Node) (*probe.Pool, error) {
	w := n.Inputs[2]
	name, ok := WeightName(p.g, w)
	if !ok {
		return nil, fmt.Errorf("probe: operand 3 is not a named weight")
	}
	size, _ := n.Attrs.Int("pool")
	dims := p.dims[w]
	out, in := dims[0], dims[1]
	key := p.g.Node(w).Type.DType.String() + ":" + name + "#" + strconv.FormatInt(size, 10)
	var row probe.RowFunc
	switch {
	case p.q[w] != nil:
		qm := p.q[w]
		row = func(j int, s []float32) ([]float32, error) { return s, qm.DequantizeRow(s, j) }
	case p.b16[w] != nil:
		data := p.b16[w]
		row = func(j int, s []float32) ([]float32, error) {
			for k, h := range data[j*in : (j+1)*in] {
				s[k] = safetensors.BF16ToF32(h)
			}
			return s, nil
		}
	case p.f32[w] != nil:
		data := p.f32[w]
		row = func(j int, _ []float32) ([]float32, error) { return data[j*in : (j+1)*in], nil }
	default:
		return nil, fmt.Errorf("probe: weight %q has no resident data", name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if pl := b.pools[key]; pl != nil {
		return pl, nil
	}
	if len(b.key) == 0 {
		return nil, fmt.Errorf("probe: the graph checks device results but the backend has no session key")
	}
	pl, err := probe.NewPool(b.key, key, int(size), out, in, row, b.ctx.Workers())
	if err != nil {
		return nil, err
	}
	b.pools[key] = pl
	return pl, nil
}

// lowerProbe checks the device's product before anything reads it: the
// probes of the pass drawn from the pool, the payload as the device
// received it (q8_0 blocks dequantized). A failure aborts the backend.
func lowerProbe(l *lowering) (func() error, error) {
	if l.p.g.Node(l.in[0]).Type.DType == ir.U32 {
		return lowerLatticeProbe(l)
	}
	p, n, in, rows := l.p, l.n, l.in, l.rows
	pl, err := l.b.probePool(p, n)
	if err != nil {
		return nil, err
	}
	k, _ := n.Attrs.Int("k")
	size := pl.Size()
	y, u := in[0], in[1]
	var deq []float32
	if p.qa[u] != nil {
		deq = make([]float32, p.dims[u][0]*p.dims[u][1])
	}
	p.probes = true
	sc := &probe.Scratch{}
	b := l.b
	return func() error {
		pay := l.f(u)
		if deq != nil {
			if err := p.qa[u].Dequantize(deq); err != nil {
				return err
			}
			pay = deq
		}
		idx := p.picker.Pick(int(k), size)
		worst := pl.Check(l.f(y), pay, rows, idx, sc)
		b.probeStats.record(worst)
		if !(worst <= 1) {
			b.abort()
			return ErrIntegrity
		}
		return nil
	}, nil
}

// ProbeStats summarise the checks a backend ran: how many, and the
// largest honest statistic as a fraction of its tolerance (the
// calibration: how far below the bound honest rounding stays).
type ProbeStats struct {
	Checks int64
	Worst  float64
}

type probeStats struct {
	checks int64
	worst  float64
}

func (s *probeStats) record(w float64) {
	s.checks++
	if !(w <= s.worst) {
		s.worst = w
	}
}

// ProbeStats returns the checks since the backend was made.
func (b *Backend) ProbeStats() ProbeStats {
	return ProbeStats{Checks: b.probeStats.checks, Worst: b.probeStats.worst}
}

// ProbeBytes is the memory the probe pools hold.
func (b *Backend) ProbeBytes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, pl := range b.pools {
		n += pl.Bytes()
	}
	return n
}

// abort ends the session after a failed probe: the key, the mask and
// probe material are wiped and every later run fails with ErrIntegrity;
// a new session (a new key) is the only way on.
func (b *Backend) abort() {
	b.failed.Store(true)
	b.wipeSecrets()
}
