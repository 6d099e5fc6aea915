package bench

import (
	"cmp"
	"fmt"
	"runtime/debug"

	"gelo/formats"
	"gelo/ir"
	"gelo/lower/cpu/cpuid"
	"gelo/lower/cpu/kernels"
	"gelo/lower/cpu/quant"
	"gelo/passes"
)

// Machine is what the probes measured on this machine: the figures every
// suite's bounds and shares are taken against.
type Machine struct {
	// Workers is the kernel worker count the probes ran with.
	Workers int
	// Samples are the bandwidth probe's passes per buffer size.
	Samples []kernels.BandwidthSample
	// Bandwidth is the read bandwidth bound in GB/s (the best pass of
	// Samples: a bound no engine exceeds).
	Bandwidth float64
	// Peak is the measured f32 FMA peak in GFLOP/s; DotPeak the bf16 dot
	// product's (0 where the CPU has none).
	Peak, DotPeak float64
}

// Probe measures the machine with workers kernel workers (0: GOMAXPROCS):
// read bandwidth over 256 and 512 MiB buffers, the FMA peak and the bf16
// dot product's peak. It takes seconds, and returns its buffers to the
// OS before it returns.
func Probe(workers int) Machine {
	probe := kernels.NewCtx(workers)
	samples := kernels.ProbeBandwidth(probe, []int{256 << 20, 512 << 20}, 15)
	m := Machine{
		Workers:   probe.Workers(),
		Samples:   samples,
		Bandwidth: kernels.BandwidthBound(samples),
		Peak:      kernels.MeasurePeakGFLOPS(probe),
		DotPeak:   kernels.MeasurePeakBF16DotGFLOPS(probe),
	}
	probe.Close()
	debug.FreeOSMemory() // the probe's buffers leave the resident set
	return m
}

// weightFormat is the weight format of Env's plans by name: f32 where
// none is named.
func (e *Env) weightFormat() string { return cmp.Or(e.Weights, formats.F32) }

// Bound is the plain decode bound at B = 1 in tok/s: the measured
// bandwidth over the bytes a decode step reads in Env.Weights's format.
func (e *Env) Bound() (float64, error) {
	b, err := WeightBytes(e.Model.Config, e.weightFormat())
	if err != nil {
		return 0, err
	}
	return e.Machine.Bandwidth * 1e9 / float64(b), nil
}

// Header prints what every run of gelo bench starts with: the model, the
// machine's probed figures, the CPU's kernel choices, the engine and the
// decode bound.
func Header(e *Env) error {
	cfg, m, out := e.Model.Config, e.Machine, e.Out
	fmt.Fprintf(out, "model      %s (%s, %d layers, hidden %d, intermediate %d, vocab %d)\n", e.Model.Spec, cfg.ModelType,
		cfg.NumHiddenLayers, cfg.HiddenSize, cfg.IntermediateSize, cfg.VocabSize)
	fmt.Fprintf(out, "machine    %d workers; read bandwidth %.1f GB/s (the best pass of the probe below), FMA peak %.1f GFLOP/s (measured)\n", m.Workers, m.Bandwidth, m.Peak)
	if m.DotPeak > 0 {
		fmt.Fprintf(out, "  bf16 dot product peak %.1f GFLOP/s (measured; VDPBF16PS, --weights bf16dot's GEMMs), %.2fx the FMA peak\n", m.DotPeak, m.DotPeak/m.Peak)
	}
	for _, x := range m.Samples {
		fmt.Fprintf(out, "  bandwidth probe %-10s %d worker(s): best %5.1f GB/s, median %5.1f GB/s (%d passes)\n",
			passes.HumanBytes(int64(x.Bytes)), x.Workers, x.Best, x.Median, x.Passes)
	}
	pf := "the hints tuned on the AMD EPYC kinds"
	if cpuid.L2Prefetch {
		pf = "into L2 (T1), as measured on the Intel Xeon kind"
	}
	pf += ", chosen " + cpuid.PrefetchChoice
	gemm := "the VNNI or AVX2 kernels (no AMX tiles here)"
	if quant.HasAMX() {
		gemm = "AMX tiles (the OS granted them), the same bits as VNNI"
	}
	fmt.Fprintf(out, "cpu        vendor %q; the streaming kernels prefetch with %s (same bits either way); q8_0/q4_0/q4_k GEMMs (16+ rows) on %s\n", cpuid.Vendor, pf, gemm)
	eo := e.Engine
	switch eo.Backend {
	case "gomlx":
		fmt.Fprintf(out, "engine     --backend gomlx (gomlx engine %s), --device %s; an unprotected plan runs as one gomlx graph and has no per-bucket split\n", eo.GomlxBackend, eo.Device)
	case "vulkan":
		fmt.Fprintf(out, "engine     --backend vulkan, --device %s; an unprotected plan runs as one Vulkan command buffer per step and has no per-bucket split\n", eo.Device)
	default:
		kv := ir.F32
		if e.KVDType != ir.InvalidDType {
			kv = e.KVDType
		}
		fmt.Fprintf(out, "engine     --backend %s, --device %s, --kv-dtype %s\n", eo.Backend, eo.Device, kv)
	}
	bytesPerTok, err := WeightBytes(cfg, e.weightFormat())
	if err != nil {
		return err
	}
	bound := m.Bandwidth * 1e9 / float64(bytesPerTok)
	fmt.Fprintf(out, "decode bound (B=1, plain) %.2f tok/s = %.1f GB/s / %s per token (%s device weights)\n\n",
		bound, m.Bandwidth, passes.HumanBytes(bytesPerTok), e.weightFormat())
	return nil
}

// Footer prints what every run of gelo bench ends with: the process's
// peak resident memory, against the plan weights a token reads.
func Footer(e *Env) error {
	bytesPerTok, err := WeightBytes(e.Model.Config, e.weightFormat())
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Out, "\npeak RSS %s (VmHWM of the whole run: every engine built, each holding its plan's weights, the f32 tensors an f32 plan made resident in the shared source, the bandwidth probe's buffers; plan weights %s a token)\n", HumanRSS(PeakResidentBytes()), passes.HumanBytes(bytesPerTok))
	return nil
}
