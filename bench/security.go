package bench

import (
	"fmt"

	"gelo/lower/cpu"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
)

// linearShape is one linear op of the model: rows of width d in, dOut out.
type linearShape struct {
	op      string
	d, dOut int
	perPass int // how many per forward pass (layers)
	lmHead  bool
}

// linearShapes lists the device-bound linear ops of one forward pass as
// the compiler fuses them (concat_proj: QKV as one, gate|up as one).
func linearShapes(cfg *models.Config) []linearShape {
	hd := cfg.HeadDim
	q, kv := cfg.NumAttentionHeads*hd, cfg.NumKeyValueHeads*hd
	L := cfg.NumHiddenLayers
	return []linearShape{
		{"qkv", cfg.HiddenSize, q + 2*kv, L, false},
		{"o", q, cfg.HiddenSize, L, false},
		{"gate_up", cfg.HiddenSize, 2 * cfg.IntermediateSize, L, false},
		{"down", cfg.IntermediateSize, cfg.HiddenSize, L, false},
		{"lm_head", cfg.HiddenSize, cfg.VocabSize, 1, true},
	}
}

// frontierRow is one level in one scenario: what the cost model says the
// TEE and the device do and what crosses, per token.
type frontierRow struct {
	teeFrac          float64 // TEE multiply-adds / TEE-local inference's (linear ops)
	devPerTok        float64 // device multiply-adds per token
	bytesPerTok      float64 // f32 bytes crossing per token, both ways
	offloaded, total int     // linear ops offloaded / all, per pass
}

// frontier prices one forward pass of rows tokens (the LM head reads one
// row at prefill, every row at decode) under level l with the compiler's
// offload decision (every op offloaded for levels that are neither
// full-span nor lattice: the levels whose offload is costed).
func frontier(cfg *models.Config, l passes.Level, rows int, prefill bool, perSequence bool) frontierRow {
	var tee, local, dev, bytes float64
	var r frontierRow
	for _, sh := range linearShapes(cfg) {
		n := rows
		if sh.lmHead && prefill {
			n = 1
		}
		c := passes.CostOfBatch(l, sh.op, n, sh.d, sh.dOut, perSequence && !prefill)
		off := (!l.FullSpan && !l.Lattice()) || c.Offload
		k := float64(sh.perPass)
		local += k * c.Local
		r.total += sh.perPass
		if off {
			r.offloaded += sh.perPass
			tee += k * c.Protect
			dev += k * c.Device * passes.DeviceSpeedup
			bytes += k * 4 * float64(c.S) * float64(sh.d+sh.dOut)
		} else {
			tee += k * c.Local
		}
	}
	r.teeFrac = tee / local
	r.devPerTok = dev / float64(rows)
	r.bytesPerTok = bytes / float64(rows)
	return r
}

// whitenFloor is the least TEE share any whitened level can reach (the
// Gram of a crossing must be whitened, X^T X = I, or U^T U = X^T X shows
// the data's Gram whatever the mixing): per linear op, the TEE pays at
// least the symmetric Gram of the crossing's smaller side,
// min(n,d)^2 max(n,d) / 2 multiply-adds, or the matmul itself when that
// is cheaper, with mixing, unmixing, shield rows and the device all free.
// For an op with n >= 2 d_out (or d >= 2 d_out) the Gram alone costs as
// much as the matmul, so no whitening scheme can offload it profitably.
func whitenFloor(cfg *models.Config, rows int, prefill bool) float64 {
	var tee, local float64
	for _, sh := range linearShapes(cfg) {
		n := rows
		if sh.lmHead && prefill {
			n = 1
		}
		lo, hi := float64(min(n, sh.d)), float64(max(n, sh.d))
		l := float64(n) * float64(sh.d) * float64(sh.dOut)
		k := float64(sh.perPass)
		tee += k * min(lo*lo*hi/2, l)
		local += k * l
	}
	return tee / local
}

// Security prints the security frontier: for each level of
// passes.Levels() at prefill n, batched decode B and B = 1, the cost
// model's TEE share, device work and bytes per token (on the full model),
// then, when measure is set, the measured TTFT, TPOT and batched tok/s on
// Env.Engine's device and what crossed per prefill token.
func Security(e *Env, n, b int, measure bool) error {
	cfg := e.Model.Config
	levels := passes.Levels()
	fmt.Fprintf(e.Out, "\nsecurity: the cost model's frontier (%d layers; device speed %gx the TEE's; linear ops only)\n", cfg.NumHiddenLayers, passes.DeviceSpeedup)
	fmt.Fprintf(e.Out, "%-9s %-14s %10s %14s %14s %10s\n", "level", "scenario", "TEE share", "device MAC/tok", "bytes/tok", "offloaded")
	for _, l := range levels {
		for _, sc := range []struct {
			label   string
			rows    int
			prefill bool
		}{{fmt.Sprintf("prefill n=%d", n), n, true}, {fmt.Sprintf("decode B=%d", b), b, false}, {"decode B=1", 1, false}} {
			r := frontier(cfg, l, sc.rows, sc.prefill, true)
			fmt.Fprintf(e.Out, "%-9s %-14s %9.1f%% %14.3g %14s %5d/%-4d\n", l.Name, sc.label, 100*r.teeFrac, r.devPerTok,
				passes.HumanBytes(int64(r.bytesPerTok)), r.offloaded, r.total)
		}
	}
	fmt.Fprintf(e.Out, "floor of any whitened level (the Gram of each crossing alone; mixing, shields and device free): TEE share >= %.1f%% at prefill n=%d, %.1f%% at decode B=%d\n",
		100*whitenFloor(cfg, n, true), n, 100*whitenFloor(cfg, b, false), b)
	if !measure {
		return nil
	}
	fmt.Fprintf(e.Out, "\nsecurity: measured on the local device (TTFT at n=%d, TPOT at B=1, batched decode at B=%d)\n%-9s %12s %12s %14s %16s\n",
		n, b, "level", "TTFT", "TPOT", "B tok/s", "crossed/token")
	// The crossings of every engine below are counted here (the caller's
	// Traffic, if any, sees none of them).
	tr := new(cpu.Traffic)
	se := *e
	se.Engine.Traffic = tr
	for _, l := range levels {
		name := l.Name
		o := plan.Level(name)
		o.PlanRows, o.PlanBatch = n, b
		if !l.FullSpan {
			o.Topology = passes.PerSequence
		}
		m, err := plan.Compile(models.Source{}, cfg, o, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		before := tr.ToDevice.Load() + tr.ToTEE.Load()
		ttft, err := se.prefillTime(m, n)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		crossed := tr.ToDevice.Load() + tr.ToTEE.Load() - before
		// TPOT at B = 1 needs the plan costed at B = 1.
		o1 := o
		o1.PlanBatch = 1
		m1, err := plan.Compile(models.Source{}, cfg, o1, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		tpot, err := se.decodeTPOT(m1, 1, false)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		tb, err := se.decodeTPOT(m, b, false)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(e.Out, "%-9s %12s %12s %14.2f %16s\n", name, Short(ttft), Short(tpot), float64(b)/tb.Seconds(),
			passes.HumanBytes(crossed/int64(4*n))) // four prefills: warm-up + three
	}
	return nil
}
