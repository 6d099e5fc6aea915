// Package plan is the one way in to gelo for the CLI, the server and the
// tests: typed compile options, Compile (trace, then the pass pipeline),
// Seal (a plan file bound to the model identity), OpenSealed (load the
// weights a sealed plan names and refuse them unless they hash to its
// identity), and the engine that runs a compiled module. Nothing here
// parses flags: callers hand in values.
package plan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gelo/formats"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan/planfile"
)

// Options are the compile options: everything that changes the compiled
// program. The zero value is not valid; start from Defaults.
type Options struct {
	passes.ProtectOptions
	// NoFuse lists the fusions switched off (passes.FusionNames), or
	// holds "all" to switch every one off.
	NoFuse []string
	// Trace are the tracer's options (AllLogits: the tests' prefill that
	// returns every row's logits). The IR records their effect.
	Trace models.TraceOptions
}

// Defaults are the options of `gelo compile` without flags: the default
// security level (passes.DefaultLevel).
func Defaults() Options { return Level(passes.DefaultLevel) }

// Level is the options of `gelo compile --security name` (the default
// level for an unknown name, which Check then refuses).
func Level(name string) Options {
	l, ok := passes.LookupLevel(name)
	if !ok {
		o := Defaults()
		o.Security = name
		return o
	}
	o := Options{ProtectOptions: l.Options(passes.DefaultProtect())}
	o.Verify = passes.DefaultVerify
	return o
}

// Knobs are the seed protocol's settings (gelo-8x4's) with no level
// named: the base that the expert knobs (--mask, --shield, --cadence,
// --center) and tests modify; the level is then whatever they match.
func Knobs() Options { return Options{ProtectOptions: passes.DefaultProtect()} }

// Check validates the options and names the bad one.
func (o Options) Check() error {
	if err := o.ProtectOptions.Check(); err != nil {
		return err
	}
	for _, f := range o.NoFuse {
		if f != "all" && !slices.Contains(passes.FusionNames(), f) {
			return fmt.Errorf("--no-fuse=%s: no such fusion (fusions: %s, or all)", f, strings.Join(passes.FusionNames(), ", "))
		}
	}
	return nil
}

// FusionsOff lists the fusions the options switch off, "all" expanded.
func (o Options) FusionsOff() []string {
	if slices.Contains(o.NoFuse, "all") {
		return passes.Unfused()
	}
	return o.NoFuse
}

// ParseShield reads "K,ENERGY" (shield rows, energy multiple).
func ParseShield(s string) (k int, energy float64, err error) {
	ks, es, ok := strings.Cut(s, ",")
	kv, err1 := strconv.Atoi(strings.TrimSpace(ks))
	ev, err2 := strconv.ParseFloat(strings.TrimSpace(es), 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("--shield %q: want K,ENERGY such as 8,4.0", s)
	}
	// A negative row count or a non-finite or negative energy is no shield
	// any pass could build; refuse it here, not deep in a pass.
	if kv < 0 || ev < 0 || math.IsNaN(ev) || math.IsInf(ev, 0) {
		return 0, 0, fmt.Errorf("--shield %q: K must be >= 0 and ENERGY finite and >= 0", s)
	}
	return kv, ev, nil
}

// passesOf is the pass configuration a plan file records for a module
// compiled with o: the pipeline, fusions, weight format and topology as the
// passes applied them (IR meta), the rest from o.
func passesOf(o Options, meta map[string]string) planfile.Passes {
	topology := o.Topology
	if t := meta["topology"]; t != "" {
		topology = t // the effective topology ("" means the default)
	}
	return planfile.Passes{
		Pipeline: splitList(meta["passes"]),
		Security: o.SecurityLevel(),
		Mask:     o.Mask, Cadence: o.Cadence, Topology: topology,
		ShieldK: o.ShieldK, ShieldEnergy: o.ShieldEnergy, Center: o.Center,
		Fusions:      fusionsOf(meta),
		WeightFormat: weightFormatOf(meta),
		Verify:       metaInt(meta, "verify"),
		VerifyPool:   metaInt(meta, "verify_pool"),
		KVDType:      meta["kv_dtype"],
	}
}

// KVDTypeName is the KV cache dtype a plan records, f32 when it says none.
func KVDTypeName(ps planfile.Passes) string {
	if ps.KVDType != "" {
		return ps.KVDType
	}
	return "f32"
}

// ParseKVDType reads the --kv-dtype flag: f32, f16 or bf16.
func ParseKVDType(s string) (ir.DType, error) {
	for _, d := range models.KVDTypes {
		if s == d.String() {
			return d, nil
		}
	}
	return ir.InvalidDType, fmt.Errorf("--kv-dtype %q: want f32, f16 or bf16", s)
}

// metaInt reads an integer meta entry the passes wrote (0 when absent).
func metaInt(meta map[string]string, key string) int {
	v, _ := strconv.Atoi(meta[key])
	return v
}

// weightFormatOf is the device weight format the quantize pass chose (IR
// meta "weights"), f32 when the IR does not say.
func weightFormatOf(meta map[string]string) string {
	if w := meta["weights"]; w != "" {
		return w
	}
	return formats.F32
}

// fusionsOf lists the fusions the fuse pass applied (IR meta "fusions").
func fusionsOf(meta map[string]string) []string {
	f := meta["fusions"]
	if f == "none" {
		return []string{}
	}
	return append([]string{}, splitList(f)...)
}

// IdentityFlags are the settings that change numerics, as the model
// identity binds them: the architecture switches the config implies and
// the plan's backend, weight format, KV cache dtype and protection
// (masking is exact only up to rounding). Every one of them is attested.
func IdentityFlags(cfg *models.Config, backend string, ps planfile.Passes) map[string]string {
	flags := map[string]string{
		"backend":             backend,
		"weights":             ps.WeightFormat,
		"qk_norm":             strconv.FormatBool(cfg.QKNorm()),
		"qkv_bias":            strconv.FormatBool(cfg.QKVBias()),
		"o_bias":              strconv.FormatBool(cfg.OBias()),
		"tie_word_embeddings": strconv.FormatBool(cfg.TieWordEmbeddings),
		"security":            ps.Security,
		"mask":                ps.Mask,
		"cadence":             ps.Cadence,
		"topology":            ps.Topology,
		"shield":              strconv.Itoa(ps.ShieldK) + "," + strconv.FormatFloat(ps.ShieldEnergy, 'g', -1, 64),
		"center":              strconv.FormatBool(ps.Center),
		"fusions":             strings.Join(ps.Fusions, ","),
		"verify":              strconv.Itoa(ps.Verify) + "/" + strconv.Itoa(ps.VerifyPool),
	}
	if ps.KVDType != "" {
		// Only a 16-bit cache is named: an f32 plan's identity keeps the
		// flags it had before the cache dtype existed, so plans sealed then
		// still verify.
		flags["kv_dtype"] = ps.KVDType
	}
	return flags
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
