package bench

import (
	"fmt"
	"slices"
	"time"

	"gelo/lower/cpu"
	"gelo/lower/cpu/mask"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/runtime"
)

// Entry is one column of the masks suite: a name (the --masks entry) and
// the plan options it compiles.
type Entry struct {
	Name    string
	Options plan.Options
}

// Masks prints TTFT at each prompt length of lengths (the median of reps
// prefills after a warm-up) and TPOT (B = 1, the median of Env.Steps
// replayed steps) per entry, the decode step against a bare read of its
// TEE matmuls' weights, and the per-bucket split of a decode step and of
// the longest prefill.
func Masks(e *Env, entries []Entry, lengths []int, reps int) error {
	cfg, stdout, decodeSteps, peak := e.Model.Config, e.Out, e.Steps, e.Machine.Peak
	bound, err := e.Bound()
	if err != nil {
		return err
	}
	maxN := slices.Max(lengths)
	type result struct {
		family string
		ttft   []time.Duration
		tpot   time.Duration
		prefBk cpu.Profile // per-bucket time of the longest prefill
		decBk  cpu.Profile // per-bucket time per decode step
		devGF  float64     // device GFLOP/s in decode
		devGFp float64     // device GFLOP/s in the longest prefill
		// the TEE matmuls' weights read bare after each decode step
		// (cpu.Backend.ReadMatVecWeights): bytes and median time
		readBytes int
		read      time.Duration
	}
	var results []result
	for _, en := range entries {
		po := en.Options.ProtectOptions
		m, err := plan.Compile(e.Model.Source, cfg, en.Options, nil)
		if err != nil {
			return err
		}
		eng, err := e.engine(m)
		if err != nil {
			return err
		}
		done := eng.Close
		s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: e.MaxContext})
		if err != nil {
			done()
			return err
		}
		r := result{family: en.Name}
		for _, n := range lengths {
			prompt := make([]int32, n)
			for i := range prompt {
				prompt[i] = int32((i*7919 + 13) % cfg.VocabSize)
			}
			var times []time.Duration
			for rep := 0; rep <= reps; rep++ { // the first run compiles and warms up
				s.Reset()
				eng.SetProfiling(rep > 0 && n == maxN)
				t0 := time.Now()
				if _, err := s.Prefill(prompt); err != nil {
					done()
					return err
				}
				if rep > 0 {
					times = append(times, time.Since(t0))
				}
			}
			eng.SetProfiling(false)
			if n == maxN {
				r.prefBk = scaleProfile(eng.TakeProfile(), reps)
				r.devGFp = gflops(deviceFlops(cfg, po, n, 1), r.prefBk[cpu.BucketDevice])
			}
			r.ttft = append(r.ttft, median(times))
		}
		tok := int32(1)
		if _, err := s.Decode(tok); err != nil { // warm-up step
			done()
			return err
		}
		steps := make([]time.Duration, decodeSteps)
		var reads []time.Duration
		eng.SetProfiling(true)
		for i := range steps {
			t0 := time.Now()
			logits, err := s.Decode(tok)
			if err != nil {
				done()
				return err
			}
			steps[i] = time.Since(t0)
			tok = int32(runtime.Argmax(logits))
			// The same weight bytes read bare right after: a bound taken
			// in the step's own bandwidth phase. Its last buffer is the
			// LM head's, as the step's, so the next step finds the cache
			// as a step leaves it.
			if eng.CPU != nil {
				if n, d := eng.CPU.ReadMatVecWeights(models.PhaseDecode); n > 0 {
					r.readBytes, reads = n, append(reads, d)
				}
			}
		}
		eng.SetProfiling(false)
		r.decBk = scaleProfile(eng.TakeProfile(), decodeSteps)
		r.tpot = median(steps)
		if len(reads) > 0 {
			r.read = median(reads)
		}
		r.devGF = gflops(deviceFlops(cfg, po, 1, 1), r.decBk[cpu.BucketDevice])
		done()
		results = append(results, r)
	}

	fmt.Fprintf(stdout, "%-6s", "mask")
	for _, n := range lengths {
		fmt.Fprintf(stdout, " %14s", fmt.Sprintf("TTFT n=%d", n))
	}
	fmt.Fprintf(stdout, " %12s %9s %8s\n", "TPOT (B=1)", "tok/s", "vs none")
	var noneTPOT time.Duration
	for _, r := range results {
		if r.family == passes.MaskNone {
			noneTPOT = r.tpot
		}
	}
	for _, r := range results {
		fmt.Fprintf(stdout, "%-6s", r.family)
		for _, d := range r.ttft {
			fmt.Fprintf(stdout, " %14s", Short(d))
		}
		rel := "-"
		if noneTPOT > 0 {
			rel = fmt.Sprintf("%+.0f%%", 100*(r.tpot.Seconds()/noneTPOT.Seconds()-1))
		}
		fmt.Fprintf(stdout, " %12s %9.2f %8s\n", Short(r.tpot), 1/r.tpot.Seconds(), rel)
	}
	if slices.ContainsFunc(results, func(r result) bool { return r.readBytes > 0 }) {
		fmt.Fprintf(stdout, "\ndecode against a bare read of its weights (the TEE matmuls' weight bytes read with no arithmetic and no wait between matrices, after each step; medians):\n")
		fmt.Fprintf(stdout, "%-6s %10s %10s %8s %14s %17s\n", "mask", "bytes", "read", "GB/s", "step (of read)", "matmuls (of read)")
		for _, r := range results {
			if r.readBytes == 0 {
				continue
			}
			mm := "-"
			if d := r.decBk[cpu.BucketLocal]; d > 0 {
				mm = fmt.Sprintf("%.0f %%", 100*r.read.Seconds()/d.Seconds())
			}
			fmt.Fprintf(stdout, "%-6s %10s %10s %8.1f %14s %17s\n", r.family, passes.HumanBytes(int64(r.readBytes)), Short(r.read),
				float64(r.readBytes)/r.read.Seconds()/1e9, fmt.Sprintf("%.0f %%", 100*r.read.Seconds()/r.tpot.Seconds()), mm)
		}
	}
	for _, phase := range []string{"decode step (B=1)", fmt.Sprintf("prefill n=%d", maxN)} {
		fmt.Fprintf(stdout, "\nper-bucket split, %s:\n%-20s", phase, "bucket")
		for _, r := range results {
			fmt.Fprintf(stdout, " %18s", r.family)
		}
		fmt.Fprintln(stdout)
		for b := cpu.Bucket(0); b < cpu.NumBuckets; b++ {
			fmt.Fprintf(stdout, "%-20s", b)
			for _, r := range results {
				p := r.decBk
				if phase != "decode step (B=1)" {
					p = r.prefBk
				}
				if p.Total() == 0 {
					fmt.Fprintf(stdout, " %10s %6s", "-", "")
					continue
				}
				fmt.Fprintf(stdout, " %10s %5.1f%%", Short(p[b]), 100*p[b].Seconds()/p.Total().Seconds())
			}
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "%-20s", "device GFLOP/s")
		for _, r := range results {
			gf := r.devGF
			if phase != "decode step (B=1)" {
				gf = r.devGFp
			}
			fmt.Fprintf(stdout, " %11.1f %5.0f%%", gf, 100*gf/peak)
		}
		fmt.Fprintf(stdout, "  (of the %.0f GFLOP/s f32 FMA peak)\n", peak)
		if phase == "decode step (B=1)" {
			// The weights a step streams over the time its TEE-local
			// matmuls took: how near the bound the kernels run in place.
			bytesPerTok, _ := WeightBytes(cfg, e.weightFormat()) // checked by Bound
			bw := bound * float64(bytesPerTok) / 1e9
			fmt.Fprintf(stdout, "%-20s", "TEE matmul GB/s")
			for _, r := range results {
				if d := r.decBk[cpu.BucketLocal]; d > 0 {
					gbs := float64(bytesPerTok) / d.Seconds() / 1e9
					fmt.Fprintf(stdout, " %11.1f %5.0f%%", gbs, 100*gbs/bw)
				} else {
					fmt.Fprintf(stdout, " %11s %6s", "-", "")
				}
			}
			fmt.Fprintf(stdout, "  (the plan's weight bytes per step over the TEE matmuls' time; of the %.1f GB/s bound)\n", bw)
		}
	}
	for _, r := range results {
		if r.family == passes.MaskNone {
			fmt.Fprintf(stdout, "\nplain decode reaches %.0f %% of the bandwidth bound (%.2f of %.2f tok/s)\n",
				100/r.tpot.Seconds()/bound, 1/r.tpot.Seconds(), bound)
		}
	}
	return nil
}

// gflops is flops / time, or 0 when no time was profiled (the
// whole-forward gomlx engine has no per-bucket split).
func gflops(flops float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return flops / d.Seconds() / 1e9
}

func scaleProfile(p cpu.Profile, n int) cpu.Profile {
	for i := range p {
		p[i] /= time.Duration(n)
	}
	return p
}

// deviceFlops is the work the device does in one pass over rows data
// rows (headRows reach the LM head): every crossing carries the shielded
// row count the protection gives.
func deviceFlops(cfg *models.Config, po passes.ProtectOptions, rows, headRows int) float64 {
	sent := func(n int) float64 {
		if po.Mask == passes.MaskNone {
			return float64(n)
		}
		// Prefill centres in the TEE (no extra row); decode at B = 1 is
		// one row: either way the data rows are n.
		data := n
		k, err := mask.ShieldRows(po.Mask, data, po.ShieldK)
		if err != nil {
			return float64(n)
		}
		return float64(data + k)
	}
	var layer, head float64
	for _, t := range cfg.TensorSpecs() {
		switch {
		case t.Kind == "linear" && t.Name != models.LMHeadName:
			layer += float64(t.Elems())
		case t.Name == models.LMHeadName || (t.Name == models.EmbedName && cfg.TieWordEmbeddings):
			head += float64(t.Elems())
		}
	}
	return 2*sent(rows)*layer + 2*sent(headRows)*head
}
