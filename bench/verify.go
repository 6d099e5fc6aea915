package bench

import (
	"fmt"
	"time"

	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// verifyKs are the probe counts the verify suite compares.
var verifyKs = []int{0, 1, 2, 4}

// Verify measures what the integrity probes cost: TPOT (B = 1) and
// TTFT at n with K = 0, 1, 2, 4 probes per crossing, per level, the K
// variants interleaved over reps rounds (medians reported). The default
// level keeps every linear op in the TEE at B = 1, so nothing crosses and
// probes cost nothing there. Load is the engine's start and first short
// prefill, which builds the pools (W r for every checked weight);
// honest/tol the largest honest statistic seen, against its tolerance.
func Verify(e *Env, n, reps int) error {
	type variant struct {
		name string
		o    plan.Options
	}
	var vs []variant
	for _, lv := range []struct {
		name string
		all  bool
	}{{passes.LevelNone, false}, {passes.Level8x4, false}, {passes.DefaultLevel, false}} {
		o := plan.Level(lv.name)
		o.Weights = e.Weights
		o.OffloadAll = lv.all
		name := lv.name
		if lv.all {
			name += " --offload all"
		}
		vs = append(vs, variant{name, o})
	}
	fmt.Fprintf(e.Out, "== integrity probes: TPOT (B = 1) and TTFT (n = %d) by probes per crossing K, medians of %d interleaved rounds (fresh engines: their spread is the machine's buffer placement);\n", n, reps)
	fmt.Fprintf(e.Out, "   probes/TPOT and probes/TTFT: the probes' share of a decode step and of a prefill within one engine (the backend's profile)\n")
	fmt.Fprintf(e.Out, "%-12s %3s %7s %12s %9s %12s %8s %9s %9s %11s %10s %12s\n", "level", "K", "probes", "TPOT", "+TPOT", "TTFT", "+TTFT", "probes/TPOT", "probes/TTFT", "load", "pool", "honest/tol")
	for _, v := range vs {
		mods := make([]*ir.Module, len(verifyKs))
		for i, k := range verifyKs {
			o := v.o
			o.Verify = k
			m, err := e.module(o.ProtectOptions, o.NoFuse)
			if err != nil {
				return fmt.Errorf("%s K=%d: %w", v.name, k, err)
			}
			mods[i] = m
		}
		tpot := make([][]time.Duration, len(verifyKs))
		ttft := make([][]time.Duration, len(verifyKs))
		load := make([][]time.Duration, len(verifyKs))
		honest := make([]float64, len(verifyKs))
		shares := make([][2]float64, len(verifyKs))
		for i, m := range mods {
			p, d, err := e.probeShare(m, n)
			if err != nil {
				return fmt.Errorf("%s K=%d: %w", v.name, verifyKs[i], err)
			}
			shares[i] = [2]float64{p, d}
		}
		for range reps {
			for i, m := range mods {
				l, w, err := e.loadTime(m)
				if err != nil {
					return fmt.Errorf("%s K=%d: %w", v.name, verifyKs[i], err)
				}
				load[i] = append(load[i], l)
				honest[i] = max(honest[i], w)
				d, err := e.decodeTPOT(m, 1, false)
				if err != nil {
					return fmt.Errorf("%s K=%d: %w", v.name, verifyKs[i], err)
				}
				tpot[i] = append(tpot[i], d)
				p, err := e.prefillTime(m, n)
				if err != nil {
					return fmt.Errorf("%s K=%d: %w", v.name, verifyKs[i], err)
				}
				ttft[i] = append(ttft[i], p)
			}
		}
		t0, f0 := median(tpot[0]), median(ttft[0])
		for i, k := range verifyKs {
			t, f := median(tpot[i]), median(ttft[i])
			fmt.Fprintf(e.Out, "%-12s %3d %7d %12v %+8.1f%% %12v %+7.1f%% %10.2f%% %10.2f%% %11v %10s %12.2e\n", v.name, k, probesIn(mods[i]),
				t.Round(time.Microsecond), pct(t, t0), f.Round(time.Microsecond), pct(f, f0), 100*shares[i][1], 100*shares[i][0],
				median(load[i]).Round(time.Millisecond), passes.HumanBytes(poolBytes(mods[i])), honest[i])
		}
	}
	fmt.Fprintln(e.Out)
	return nil
}

// probeShare is the probes' share of a prefill of n tokens and of a
// decode step (B = 1) within one engine, from the backend's per-bucket
// profile: unlike TPOT across fresh engines (whose buffers land where the
// machine puts them: +-25 % here between identical plans), it does not
// depend on where the weights were placed.
func (e *Env) probeShare(m *ir.Module, n int) (prefill, decode float64, err error) {
	eng, err := e.engine(m)
	if err != nil {
		return 0, 0, err
	}
	defer eng.Close()
	if eng.CPU == nil {
		return 0, 0, nil
	}
	s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: e.MaxContext})
	if err != nil {
		return 0, 0, err
	}
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = int32(1 + i%(e.Model.Config.VocabSize-1))
	}
	if _, err := s.Prefill(prompt); err != nil { // warm-up: pools built, buffers sized
		return 0, 0, err
	}
	s.Reset()
	eng.SetProfiling(true)
	eng.TakeProfile()
	if _, err := s.Prefill(prompt); err != nil {
		return 0, 0, err
	}
	p := eng.TakeProfile()
	if _, err := s.Decode(3); err != nil { // capture
		return 0, 0, err
	}
	eng.TakeProfile()
	for range e.Steps {
		if _, err := s.Decode(3); err != nil {
			return 0, 0, err
		}
	}
	d := eng.TakeProfile()
	share := func(p cpu.Profile) float64 {
		if p.Total() == 0 {
			return 0
		}
		return float64(p[cpu.BucketProbe]) / float64(p.Total())
	}
	return share(p), share(d), nil
}

// loadTime is an engine's start and its first prefill of 8 tokens, and
// the largest honest probe statistic of that prefill and 8 decode steps
// (as a fraction of its tolerance).
func (e *Env) loadTime(m *ir.Module) (time.Duration, float64, error) {
	t0 := time.Now()
	eng, err := e.engine(m)
	if err != nil {
		return 0, 0, err
	}
	defer eng.Close()
	s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: e.MaxContext})
	if err != nil {
		return 0, 0, err
	}
	if _, err := s.Prefill([]int32{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		return 0, 0, err
	}
	d := time.Since(t0)
	for range 8 {
		if _, err := s.Decode(3); err != nil {
			return 0, 0, err
		}
	}
	worst := 0.0
	if eng.CPU != nil {
		worst = eng.CPU.ProbeStats().Worst
	}
	return d, worst, nil
}

// probesIn counts the probe nodes of a module's decode graph.
func probesIn(m *ir.Module) int {
	n := 0
	if g := m.Graph("decode"); g != nil {
		for _, nd := range g.Nodes {
			if nd.Op == ir.OpProbe {
				n++
			}
		}
	}
	return n
}

// poolBytes is the memory of the module's probe pools: per checked weight
// P vectors of out and P of in float64, and in column sums.
func poolBytes(m *ir.Module) int64 {
	seen := map[string]bool{}
	var total int64
	for _, g := range m.Graphs {
		for _, n := range g.Nodes {
			if n.Op != ir.OpProbe {
				continue
			}
			w := g.Node(n.Inputs[2])
			name := fmt.Sprint(w.Attrs["name"], "/", len(w.Inputs), "/", w.Type)
			for _, in := range w.Inputs {
				name += fmt.Sprint(g.Node(in).Attrs["name"])
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			p, _ := n.Attrs.Int("pool")
			out, in := int64(w.Type.Shape[0].Size), int64(w.Type.Shape[1].Size)
			total += 8 * (p*(out+in) + in)
		}
	}
	return total
}
