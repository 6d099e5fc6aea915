package bench

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"gelo/ir"
	"gelo/lower/cpu"
	"gelo/lower/vulkan"
	"gelo/plan"
	"gelo/runtime"
)

// ErrNoDevice is Device's refusal of an Env whose engine names no device
// to compare with the local one.
var ErrNoDevice = errors.New("the device suite compares the local device with another: name one (vulkan), or the vulkan backend")

// Device compiles o and runs the plan on the local device and on
// Env.Engine.Device in one run and compares what a crossing costs: TTFT,
// TPOT, crossings, submits and dispatches per token, bytes crossing per
// token, and (on Vulkan) the fixed cost of one replayed crossing. Under
// the vulkan backend it compares the cpu backend with the whole-forward
// Vulkan engine instead: the same columns, the step one submit. prefill
// is the prompt's length.
func Device(e *Env, o plan.Options, prefill int) error {
	whole := e.Engine.Backend == "vulkan"
	if !whole && (e.Engine.Device == "" || e.Engine.Device == "local") {
		return ErrNoDevice
	}
	m, err := plan.Compile(e.Model.Source, e.Model.Config, o, nil)
	if err != nil {
		return err
	}
	prompt := make([]int32, prefill)
	for i := range prompt {
		prompt[i] = int32((i*131 + 7) % e.Model.Config.VocabSize)
	}
	fmt.Fprintf(e.Out, "device suite: security %s, weights %s; prefill %d tokens, %d decode steps (B = 1, captured and replayed)\n",
		m.Meta["security"], cmp.Or(m.Meta["weights"], "f32"), prefill, e.Steps)
	fmt.Fprintf(e.Out, "%-10s %10s %10s %9s %9s %11s %11s %12s %12s\n", "device", "TTFT", "TPOT", "cross/tok", "submit/tok", "dispatch/tok", "record/tok", "to dev/tok", "to TEE/tok")
	var tpots []time.Duration
	runs := []string{"local", e.Engine.Device}
	if whole {
		runs = []string{"cpu", "vulkan"}
	}
	for _, dev := range runs {
		eo := e.Engine
		eo.Device, eo.Traffic = dev, new(cpu.Traffic)
		if whole {
			eo.Backend, eo.Device = dev, e.Engine.Device
		}
		eng, err := plan.NewEngine(eo, e.Model.Weights, e.Key, m)
		if err != nil {
			return fmt.Errorf("--device %s: %w", dev, err)
		}
		r, err := e.deviceRun(eng, eo.Traffic, m, prompt)
		if err != nil {
			eng.Close()
			return fmt.Errorf("--device %s: %w", dev, err)
		}
		tpots = append(tpots, r.tpot)
		sub, dis, rec := "-", "-", "-"
		if eng.Vulkan != nil || eng.VulkanForward != nil {
			sub = fmt.Sprintf("%.1f", r.submits)
			dis = fmt.Sprintf("%.1f", r.dispatches)
			rec = fmt.Sprintf("%.1f", r.recordings)
		}
		fmt.Fprintf(e.Out, "%-10s %10s %10s %9.1f %9s %11s %11s %12s %12s\n", dev, r.ttft.Round(time.Microsecond), r.tpot.Round(time.Microsecond),
			r.crossings, sub, dis, rec, human(r.toDev), human(r.toTEE))
		if fw := eng.VulkanForward; fw != nil {
			i := fw.Info()
			fmt.Fprintf(e.Out, "vulkan     whole forward on %s (%s, Vulkan %s, subgroup %d): each step one recorded command buffer, replayed\n",
				i.Name, i.Type, i.API(), i.SubgroupSize)
		}
		if eng.Vulkan != nil {
			probe, err := crossingCost(eng)
			if err != nil {
				eng.Close()
				return err
			}
			i := eng.Vulkan.Info()
			fmt.Fprintf(e.Out, "vulkan     %s (%s, Vulkan %s, subgroup %d): one replayed 1-row 32x32 crossing (params write, copies, submit, wait) %s median\n",
				i.Name, i.Type, i.API(), i.SubgroupSize, probe.Round(time.Microsecond))
			if r.crossings > 0 {
				fmt.Fprintf(e.Out, "vulkan     TPOT over local: %s a crossing (%.1f crossings a token)\n",
					((r.tpot - tpots[0]) / time.Duration(max(1, int(r.crossings+0.5)))).Round(time.Microsecond), r.crossings)
			}
		}
		eng.Close()
	}
	fmt.Fprintln(e.Out, "(timings under whatever else the machine runs: upper bounds)")
	fmt.Fprintln(e.Out)
	return nil
}

type deviceResult struct {
	ttft, tpot                                 time.Duration
	crossings, submits, dispatches, recordings float64
	toDev, toTEE                               float64
}

// deviceRun times a prefill and e.Steps replayed decode steps (after one
// that captures) and counts per-token traffic over the timed steps.
func (e *Env) deviceRun(eng *plan.Engine, tr *cpu.Traffic, m *ir.Module, prompt []int32) (deviceResult, error) {
	var r deviceResult
	s, err := runtime.NewSession(m, eng.Runtime, runtime.Options{MaxContext: e.MaxContext})
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	logits, err := s.Prefill(prompt)
	if err != nil {
		return r, err
	}
	r.ttft = time.Since(t0)
	tok := int32(runtime.Argmax(logits))
	if logits, err = s.Decode(tok); err != nil { // capture
		return r, err
	}
	var before vulkan.Stats
	if eng.Vulkan != nil {
		before = eng.Vulkan.Stats()
	}
	var fbefore vulkan.ForwardStats
	if eng.VulkanForward != nil {
		fbefore = eng.VulkanForward.Stats()
	}
	p0, d0, t0b := tr.Payloads.Load(), tr.ToDevice.Load(), tr.ToTEE.Load()
	times := make([]time.Duration, e.Steps)
	for i := range times {
		tok = int32(runtime.Argmax(logits))
		t := time.Now()
		if logits, err = s.Decode(tok); err != nil {
			return r, err
		}
		times[i] = time.Since(t)
	}
	slices.Sort(times)
	r.tpot = times[len(times)/2]
	n := float64(e.Steps)
	r.crossings = float64(tr.Payloads.Load()-p0) / n
	r.toDev, r.toTEE = float64(tr.ToDevice.Load()-d0)/n, float64(tr.ToTEE.Load()-t0b)/n
	if eng.Vulkan != nil {
		after := eng.Vulkan.Stats()
		r.submits = float64(after.Submits-before.Submits) / n
		r.dispatches = float64(after.Dispatches-before.Dispatches) / n
		r.recordings = float64(after.Recordings-before.Recordings) / n
	}
	if eng.VulkanForward != nil {
		after := eng.VulkanForward.Stats()
		r.submits = float64(after.Submits-fbefore.Submits) / n
		r.dispatches = float64(after.Dispatches-fbefore.Dispatches) / n
		r.recordings = float64(after.Recordings-fbefore.Recordings) / n
	}
	return r, nil
}

// crossingCost is the median wall time of a replayed 1-row crossing of a
// 32x32 weight: the fixed cost every crossing pays.
func crossingCost(eng *plan.Engine) (time.Duration, error) {
	const n = 32
	if err := eng.Vulkan.Upload("bench:probe", make([]float32, n*n), n, n); err != nil {
		return 0, err
	}
	x, y := make([]float32, n), make([]float32, n)
	times := make([]time.Duration, 200)
	for i := range times {
		t0 := time.Now()
		if err := eng.Vulkan.MatMul("probe", "bench:probe", x, 1, y); err != nil {
			return 0, err
		}
		times[i] = time.Since(t0)
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}
