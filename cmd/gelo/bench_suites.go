package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// benchEnv is what every bench suite shares: the model, the key, and the
// machine's measured figures.
type benchEnv struct {
	mf      *modelFlags
	l       *models.Model
	key     []byte
	workers int
	bw      float64 // GB/s
	steps   int
	maxCtx  int
	out     io.Writer
	rss     int64 // resident bytes at the end of the last B = 1 decodeTPOT (0: unknown)
}

// module compiles the suite's plan: po (its weight format, where the suite
// sets none, the --weights flag's) and the --kv-dtype flag's cache, so that
// every suite measures the weights and cache the command line names.
func (e *benchEnv) module(po passes.ProtectOptions, noFuse []string) (*ir.Module, error) {
	o := plan.Options{ProtectOptions: po, NoFuse: noFuse}
	if o.Weights == "" {
		o.Weights = e.mf.weights
	}
	if err := e.mf.setKVDType(&o); err != nil {
		return nil, err
	}
	return plan.Compile(models.Source{}, e.l.Config, o, nil)
}

// decodeTPOT measures the median decode step of a B-sequence batch after
// a short prompt per sequence (B = 1 uses a Session; eager lowers every
// step anew).
func (e *benchEnv) decodeTPOT(m *ir.Module, b int, eager bool) (time.Duration, error) {
	eng, err := e.mf.engine(e.l.Weights, e.key, m)
	if err != nil {
		return 0, err
	}
	defer eng.Close()
	backend := eng.Runtime
	opt := runtime.Options{MaxContext: e.maxCtx, Eager: eager}
	prompt := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	times := make([]time.Duration, e.steps)
	if b == 1 {
		s, err := runtime.NewSession(m, backend, opt)
		if err != nil {
			return 0, err
		}
		if _, err := s.Prefill(prompt); err != nil {
			return 0, err
		}
		if _, err := s.Decode(3); err != nil { // capture
			return 0, err
		}
		for i := range times {
			t0 := time.Now()
			if _, err := s.Decode(3); err != nil {
				return 0, err
			}
			times[i] = time.Since(t0)
		}
		debug.FreeOSMemory() // earlier engines' garbage leaves the resident set
		e.rss = residentBytes()
		return median(times), nil
	}
	bt, err := runtime.NewBatch(m, backend, b, opt)
	if err != nil {
		return 0, err
	}
	toks := make([]int32, b)
	for i := 0; i < b; i++ {
		if _, err := bt.Prefill(i, prompt); err != nil {
			return 0, err
		}
		toks[i] = 3
	}
	if _, err := bt.Decode(toks); err != nil {
		return 0, err
	}
	for i := range times {
		t0 := time.Now()
		if _, err := bt.Decode(toks); err != nil {
			return 0, err
		}
		times[i] = time.Since(t0)
	}
	return median(times), nil
}

func protectWith(mask string) passes.ProtectOptions {
	if l, ok := passes.LookupLevel(mask); ok {
		return l.Options(passes.DefaultProtect())
	}
	po := passes.DefaultProtect()
	po.Mask = mask
	return po
}

// benchFusion: fused vs unfused TPOT.
func (e *benchEnv) benchFusion(masks []string) error {
	fmt.Fprintf(e.out, "\nfusion: TPOT (B=1), fused vs unfused\n%-6s %12s %12s %8s\n", "mask", "unfused", "fused", "speedup")
	for _, mk := range masks {
		po := protectWith(mk)
		mu, err := e.module(po, passes.Unfused())
		if err != nil {
			return err
		}
		mf, err := e.module(po, nil)
		if err != nil {
			return err
		}
		tu, err := e.decodeTPOT(mu, 1, false)
		if err != nil {
			return err
		}
		tf, err := e.decodeTPOT(mf, 1, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.out, "%-6s %12s %12s %7.2fx\n", mk, short(tu), short(tf), tu.Seconds()/tf.Seconds())
	}
	return nil
}

// weightBytes is what a decode step reads for a weight format: the
// device weights in that format (each matrix in the format's fallback
// where its rows are not whole blocks), the TEE's norms in f32 and one
// embedding row.
func weightBytes(cfg *models.Config, format string) (int64, error) {
	f, err := formats.LookupPlan("--weights", format)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range cfg.TensorSpecs() {
		switch {
		case t.Kind == "linear" || (t.Name == models.EmbedName && cfg.TieWordEmbeddings):
			b, err := f.MatrixBytes(t.Shape[0], t.Shape[1])
			if err != nil {
				return 0, fmt.Errorf("tensor %s: %w", t.Name, err)
			}
			n += b
		case t.Name == models.EmbedName:
			n += int64(t.Shape[1]) * 4
		default:
			n += int64(t.Elems()) * 4
		}
	}
	return n, nil
}

// benchWeights: decode tok/s per weight format against its bound.
func (e *benchEnv) benchWeights(masks []string) error {
	fmt.Fprintf(e.out, "\nweights: decode (B=1) per weight format (RSS: the process's resident memory with the engine loaded, the f32 source weights included)\n%-6s %-6s %10s %9s %12s %9s %8s %10s\n",
		"mask", "format", "TPOT", "tok/s", "bytes/token", "bound", "vs f32", "RSS")
	for _, mk := range masks {
		var f32 time.Duration
		for _, w := range formats.PlanNames() {
			po := protectWith(mk)
			po.Weights = w
			m, err := e.module(po, nil)
			if err != nil {
				return err
			}
			t, err := e.decodeTPOT(m, 1, false)
			if err != nil {
				return err
			}
			if w == formats.F32 {
				f32 = t
			}
			bytes, err := weightBytes(e.l.Config, w)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.out, "%-6s %-6s %10s %9.2f %12s %9.2f %7.2fx %10s\n", mk, w, short(t), 1/t.Seconds(),
				passes.HumanBytes(bytes), e.bw*1e9/float64(bytes), f32.Seconds()/t.Seconds(), humanRSS(e.rss))
		}
	}
	return nil
}

// benchReplay: eager vs captured TPOT and the dispatch overhead share.
func (e *benchEnv) benchReplay(masks []string) error {
	fmt.Fprintf(e.out, "\nreplay: TPOT (B=1), eager (lowered every step) vs captured replay\n%-6s %12s %12s %10s\n",
		"mask", "eager", "replay", "dispatch")
	for _, mk := range masks {
		m, err := e.module(protectWith(mk), nil)
		if err != nil {
			return err
		}
		te, err := e.decodeTPOT(m, 1, true)
		if err != nil {
			return err
		}
		tr, err := e.decodeTPOT(m, 1, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.out, "%-6s %12s %12s %9.1f%%\n", mk, short(te), short(tr), 100*(te.Seconds()-tr.Seconds())/te.Seconds())
	}
	return nil
}

// benchBatch: B sequences decoded together vs the same B decoded one
// stream after another.
func (e *benchEnv) benchBatch(masks []string, b int) error {
	fmt.Fprintf(e.out, "\nbatch: B=%d batched vs %d serial streams (aggregate decode tok/s)\n%-22s %12s %12s %12s %8s\n",
		b, b, "protection", "serial TPOT", "batch step", "batched", "ratio")
	for _, mk := range masks {
		topologies := []string{passes.PerSequence}
		if mk != passes.MaskNone {
			topologies = append(topologies, passes.Shared)
		}
		for _, topo := range topologies {
			po := protectWith(mk)
			po.Topology = topo
			m, err := e.module(po, nil)
			if err != nil {
				return err
			}
			t1, err := e.decodeTPOT(m, 1, false)
			if err != nil {
				return err
			}
			tb, err := e.decodeTPOT(m, b, false)
			if err != nil {
				return err
			}
			label := mk
			if mk != passes.MaskNone {
				label += " " + topo
			}
			serial, batched := 1/t1.Seconds(), float64(b)/tb.Seconds()
			fmt.Fprintf(e.out, "%-22s %12s %12s %9.2f t/s %7.2fx\n", label, short(t1), short(tb), batched, batched/serial)
		}
	}
	return nil
}
