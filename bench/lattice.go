package bench

import (
	"fmt"
	"time"

	"gelo/formats"
	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/models"
	"gelo/passes"
	"gelo/runtime"
	goruntime "runtime"
)

// LatticeVocab is the vocabulary of the lwe suite's models: at two layers
// a full vocabulary's LM head (151936 rows) would be most of the model's
// work, where at full depth it is a few per cent; 8192 rows keep it at
// that share.
const LatticeVocab = 8192

// LatticeShare is one scenario of the lwe suite: per pass, the TEE-local
// plan's whole time (every linear op in the TEE, int8 weights) and the lwe
// plan's lwe work in the TEE, split into the online part (encode and
// decode, with any wait for a pad) and the pads (at prefill drawn with the
// encode, FillBatch over the prompt's rows; at decode drawn in bulk ahead
// of time by a pool per crossing: TEE work off the token's critical path,
// counted at its mean cost per pad), and its device time.
type LatticeShare struct {
	Scenario                             string
	Local                                time.Duration // TEE-local plan, the whole pass
	Online, Pads, Probes, Device, Others time.Duration // lwe plan: encode+decode, pads, integrity probes, device matmuls, every other TEE op
}

// Share is the lwe work's share of the TEE-local pass: encode, decode,
// pads and the probes of the device's products (issue 50's list).
func (s LatticeShare) Share() float64 { return float64(s.Online+s.Pads+s.Probes) / float64(s.Local) }

// OnlineShare is the share without the pads.
func (s LatticeShare) OnlineShare() float64 { return float64(s.Online) / float64(s.Local) }

// Lattice measures the TEE's lwe work (encode, decode, pads, probes) as a
// share of the TEE-local time of
// the same model (issue 50's gate), on the local device, for a model of
// the Env model's widths with layers layers and LatticeVocab tokens
// (synthetic bf16 weights, quantized to int8 by both plans), at prefill
// n, batched decode B and B = 1, the lwe plan checking each device
// product with verify probes (--verify, as a deployment would). Each figure
// is the per-bucket profile of one engine (the median pass of Env.Steps).
func Lattice(e *Env, layers, n, b, verify int) ([]LatticeShare, error) {
	cfg := *e.Model.Config
	cfg.NumHiddenLayers, cfg.VocabSize = layers, LatticeVocab
	cfg.BOSTokenID, cfg.EOSTokenIDs = 1, models.TokenIDs{2}
	w, err := models.SynthesizeAs(&cfg, 7, "bf16")
	if err != nil {
		return nil, err
	}
	le := *e
	le.Model = &models.Model{Weights: w}
	le.MaxContext = max(e.MaxContext, n+e.Steps+16)
	lv, _ := passes.LookupLevel(passes.LevelLWE)
	off := lv.Options(passes.ProtectOptions{Weights: formats.Int8}) // the TEE-local reference in the device's format
	off.OffloadAll = true
	off.Verify = verify
	local := off
	local.Verify = 0                                                // nothing crosses, nothing to check
	local.OffloadAll, local.OffloadOnly = false, []string{"(none)"} // every linear op in the TEE
	fmt.Fprintf(e.Out, "\nlwe: the TEE's lwe work against the TEE-local pass (hidden %d, intermediate %d, %d layers, vocabulary %d; int8 weights; local device)\n",
		cfg.HiddenSize, cfg.IntermediateSize, layers, LatticeVocab)
	fmt.Fprintf(e.Out, "%-14s %12s %12s %12s %12s %12s %12s %9s %9s\n", "scenario", "TEE-local", "lwe online", "lwe pads", "probes", "device", "other TEE", "share", "online")
	var out []LatticeShare
	for _, sc := range []struct {
		label string
		rows  int
		batch bool
	}{{fmt.Sprintf("prefill n=%d", n), n, false}, {fmt.Sprintf("decode B=%d", b), b, true}, {"decode B=1", 1, true}} {
		var lp, ep cpu.Profile
		for i, po := range []passes.ProtectOptions{local, off} {
			m, err := le.module(po, nil)
			if err != nil {
				return nil, err
			}
			p, err := le.profilePass(m, sc.rows, sc.batch)
			if err != nil {
				return nil, fmt.Errorf("lwe suite, %s: %w", sc.label, err)
			}
			if i == 0 {
				lp = p
			} else {
				ep = p
			}
		}
		s := LatticeShare{Scenario: sc.label, Local: lp.Total(), Online: ep[cpu.BucketLattice], Pads: ep[cpu.BucketPads],
			Probes: ep[cpu.BucketProbe], Device: ep[cpu.BucketDevice]}
		s.Others = ep.Total() - s.Online - s.Pads - s.Probes - s.Device
		out = append(out, s)
		fmt.Fprintf(e.Out, "%-14s %12s %12s %12s %12s %12s %12s %8.1f%% %8.1f%%\n", s.Scenario, Short(s.Local), Short(s.Online), Short(s.Pads),
			Short(s.Probes), Short(s.Device), Short(s.Others), 100*s.Share(), 100*s.OnlineShare())
	}
	fmt.Fprintf(e.Out, "share: (online + pads + probes) / TEE-local; online: encode + decode alone (what a token waits for when the pads are drawn ahead); probes: --verify's checks of the device's products\n")
	return out, nil
}

// profilePass is one engine's per-bucket profile of a pass: a prefill of
// rows tokens, or (batch) a decode step of rows sequences, the median of
// Env.Steps steps by total time, after a warm-up.
func (e *Env) profilePass(m *ir.Module, rows int, batch bool) (cpu.Profile, error) {
	eng, err := e.engine(m)
	if err != nil {
		return cpu.Profile{}, err
	}
	defer eng.Close()
	if eng.CPU == nil {
		return cpu.Profile{}, fmt.Errorf("the lwe suite profiles the cpu backend's engine")
	}
	opt := runtime.Options{MaxContext: e.MaxContext}
	var profs []cpu.Profile
	if !batch {
		prompt := make([]int32, rows)
		for i := range prompt {
			prompt[i] = int32(1 + i%(e.Model.Config.VocabSize-1))
		}
		s, err := runtime.NewSession(m, eng.Runtime, opt)
		if err != nil {
			return cpu.Profile{}, err
		}
		if _, err := s.Prefill(prompt); err != nil { // warm-up
			return cpu.Profile{}, err
		}
		goruntime.GC() // the engines built before leave gigabytes of hints to collect
		eng.SetProfiling(true)
		for range 3 {
			s.Reset()
			eng.TakeProfile()
			if _, err := s.Prefill(prompt); err != nil {
				return cpu.Profile{}, err
			}
			profs = append(profs, eng.TakeProfile())
		}
		return medianProfile(profs), nil
	}
	bt, err := runtime.NewBatch(m, eng.Runtime, rows, opt)
	if err != nil {
		return cpu.Profile{}, err
	}
	toks := make([]int32, rows)
	for i := range rows {
		if _, err := bt.Prefill(i, []int32{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
			return cpu.Profile{}, err
		}
		toks[i] = 3
	}
	if _, err := bt.Decode(toks); err != nil { // capture
		return cpu.Profile{}, err
	}
	// Time the steps on quiet cores: the garbage of the engines built
	// before collected, and the pad pools done with their first fill
	// (their work is counted apart, below; a fill beside a timed step
	// would count it twice, once in the step's other buckets).
	goruntime.GC()
	for deadline := time.Now().Add(2 * time.Minute); !eng.CPU.LatticePoolsIdle() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	eng.SetProfiling(true)
	for range e.Steps {
		eng.TakeProfile()
		if _, err := bt.Decode(toks); err != nil {
			return cpu.Profile{}, err
		}
		profs = append(profs, eng.TakeProfile())
	}
	p := medianProfile(profs)
	// Decode pads come from pools that fill hundreds at once: a step's
	// window holds a whole batch or none, and their workers' wall time
	// counts the waits for a core the decode holds. Count each pass its
	// pads at their cost measured apart (steady-state batches, on the
	// workers the pass runs on).
	pads, err := eng.CPU.LatticePadsCalibrated()
	if err != nil {
		return cpu.Profile{}, err
	}
	p[cpu.BucketPads] = pads
	return p, nil
}

// medianProfile is the profile of median total time.
func medianProfile(ps []cpu.Profile) cpu.Profile {
	if len(ps) == 0 {
		return cpu.Profile{}
	}
	best := append([]cpu.Profile(nil), ps...)
	for i := 1; i < len(best); i++ {
		for j := i; j > 0 && best[j].Total() < best[j-1].Total(); j-- {
			best[j], best[j-1] = best[j-1], best[j]
		}
	}
	return best[len(best)/2]
}
