package bench

import (
	"fmt"
	"time"

	"gelo/formats"
	"gelo/models"
	"gelo/passes"
)

// Fusion prints fused against unfused TPOT (B = 1) for each entry of
// masks (a level or a mask family).
func Fusion(e *Env, masks []string) error {
	fmt.Fprintf(e.Out, "\nfusion: TPOT (B=1), fused vs unfused\n%-6s %12s %12s %8s\n", "mask", "unfused", "fused", "speedup")
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
		fmt.Fprintf(e.Out, "%-6s %12s %12s %7.2fx\n", mk, Short(tu), Short(tf), tu.Seconds()/tf.Seconds())
	}
	return nil
}

// WeightBytes is what a decode step reads for a weight format: the
// device weights in that format (each matrix in the format's fallback
// where its rows are not whole blocks), the TEE's norms in f32 and one
// embedding row. An unknown format is an error naming --weights.
func WeightBytes(cfg *models.Config, format string) (int64, error) {
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

// Weights prints decode tok/s (B = 1) per weight format against its
// bandwidth bound, with the resident memory of each engine.
func Weights(e *Env, masks []string) error {
	fmt.Fprintf(e.Out, "\nweights: decode (B=1) per weight format (RSS: the process's resident memory with the engine loaded, the f32 source weights included)\n%-6s %-6s %10s %9s %12s %9s %8s %10s\n",
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
			bytes, err := WeightBytes(e.Model.Config, w)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.Out, "%-6s %-6s %10s %9.2f %12s %9.2f %7.2fx %10s\n", mk, w, Short(t), 1/t.Seconds(),
				passes.HumanBytes(bytes), e.Machine.Bandwidth*1e9/float64(bytes), f32.Seconds()/t.Seconds(), HumanRSS(e.rss))
		}
	}
	return nil
}

// Replay prints eager against captured TPOT (B = 1) and the share of an
// eager step that is dispatch overhead.
func Replay(e *Env, masks []string) error {
	fmt.Fprintf(e.Out, "\nreplay: TPOT (B=1), eager (lowered every step) vs captured replay\n%-6s %12s %12s %10s\n",
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
		fmt.Fprintf(e.Out, "%-6s %12s %12s %9.1f%%\n", mk, Short(te), Short(tr), 100*(te.Seconds()-tr.Seconds())/te.Seconds())
	}
	return nil
}

// Batch prints b sequences decoded together against the same b decoded
// one stream after another (aggregate tok/s), per mask and, for a
// protected one, per topology it takes (a full-span level the shared one
// alone).
func Batch(e *Env, masks []string, b int) error {
	fmt.Fprintf(e.Out, "\nbatch: B=%d batched vs %d serial streams (aggregate decode tok/s)\n%-22s %12s %12s %12s %8s\n",
		b, b, "protection", "serial TPOT", "batch step", "batched", "ratio")
	for _, mk := range masks {
		topologies := []string{passes.PerSequence}
		if l, ok := passes.LookupLevel(mk); ok && l.FullSpan {
			// A full-span level batches under the shared topology only
			// (one full-span crossing for the batch): its plan refuses
			// per-sequence.
			topologies = []string{passes.Shared}
		} else if mk != passes.MaskNone {
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
			fmt.Fprintf(e.Out, "%-22s %12s %12s %9.2f t/s %7.2fx\n", label, Short(t1), Short(tb), batched, batched/serial)
		}
	}
	return nil
}
