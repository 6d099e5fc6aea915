package models

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"gelo/fanout"
	"gelo/models/safetensors"
)

// Synthetic weights.
//
// Every tensor is filled from random streams derived from (seed, tensor
// name) alone: the tensor is cut into blocks of synthBlock elements and
// block b draws from a SplitMix64 stream keyed by a hash of (seed, name,
// b). Blocks are generated in parallel (up to GOMAXPROCS goroutines) and
// the bits never depend on the worker count, the platform or the CPU:
// Gaussians come from a ziggurat with literal tables whose rare slow path
// uses a log and exp built from explicitly rounded IEEE operations (no
// platform math routines, no fused multiply-add).
//
// Values by kind (TensorSpec.Kind), g ~ N(0, 1):
//
//	norm    1 + 0.05 g
//	linear  g / sqrt(in_features)           (in_features = last dim)
//	bias    0.02 g
//	embed   g / sqrt(hidden_size)
//
// The embedding scale is chosen for the tied LM head: the final RMSNorm
// leaves hidden states with per-element RMS near 1, so a logit is a sum of
// hidden_size products of std 1/sqrt(hidden_size) and has std near 1 at
// every model size: logits spread over a few units, and greedy argmax is
// neither flat nor dominated by one token. Small embeddings also keep the
// token's own row a minor part of the residual stream (each layer adds
// O(1) per element), so tied logits do not simply echo the input token
// back; a tiny model should therefore not repeat one token forever.
// (Reasoned, not yet measured: the forward pass lands elsewhere.)
//
// The same seed gives the same values in memory (SynthesizeAs) and on disk
// (WriteSynthetic): f32 files hold them bit for bit, bf16 and f16 files hold
// them rounded to nearest even, which SynthesizeAs reproduces.

// SyntheticVersion names the generator; it is recorded in the metadata of
// written files and changes whenever the values would.
const SyntheticVersion = "gelo-synth-v1"

const synthBlock = 1 << 16

// synthShardBytes is the shard size above which WriteSynthetic writes a
// sharded checkpoint (a variable so tests can shard small models).
var synthShardBytes int64 = 4 << 30

// Synthesize is SynthesizeAs(cfg, seed, "f32"). It is meant for configs
// already validated (Variant, ReadConfig); for an invalid one it returns
// empty weights whose Err and Get report why, never a panic.
func Synthesize(cfg *Config, seed uint64) *Weights {
	w, err := SynthesizeAs(cfg, seed, "f32")
	if err != nil {
		return &Weights{err: err}
	}
	return w
}

// SynthesizeAs generates the synthetic weights of cfg in memory as f32,
// rounded through dtype ("f32", "bf16" or "f16"; the HF names float32,
// bfloat16 and float16 work too), so that it equals Load of
// WriteSynthetic(dir, cfg, seed, dtype, nil).
func SynthesizeAs(cfg *Config, seed uint64, dtype string) (*Weights, error) {
	if cfg == nil {
		return nil, fmt.Errorf("synthesize: nil config")
	}
	st, _, err := synthDType(dtype)
	if err != nil {
		return nil, fmt.Errorf("synthesize: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("synthesize: config: %w", err)
	}
	specs := cfg.TensorSpecs()
	gens := make([]generator, len(specs))
	for i, s := range specs {
		if gens[i], err = newGenerator(s, seed); err != nil {
			return nil, fmt.Errorf("synthesize: %w", err)
		}
	}
	// Lazy: a tensor is generated on its first Get, or a range at a time
	// by ReadRows, so a plan that converts every matrix never holds the
	// model in f32.
	w := newWeights(cfg, specs, nil, nil)
	for i, s := range specs {
		g := gens[i]
		t := w.tensors[s.Name]
		t.fill = func(lo, hi int, dst []float32) error {
			synthRange(g, st, lo, hi, dst)
			return nil
		}
		w.tensors[s.Name] = t
	}
	return w, nil
}

// synthRange writes elements [lo, hi) of g's tensor, rounded through
// dtype st, into dst: the blocks that cover them, in parallel, each the
// same bits whichever range asked for it.
func synthRange(g generator, st string, lo, hi int, dst []float32) {
	if hi <= lo {
		return
	}
	first, last := lo/synthBlock, (hi-1)/synthBlock
	parallelBlocks((last-first+1)*synthBlock, func(_ int, b, _, _ int) {
		blk := first + b
		s, e := blk*synthBlock, (blk+1)*synthBlock
		if s >= lo && e <= hi {
			out := dst[s-lo : e-lo]
			g.block(blk, out)
			roundTo(st, out)
			return
		}
		// A block cut by the range: generated whole (a block's stream
		// starts at its first element), the part inside copied.
		full := make([]float32, synthBlock)
		g.block(blk, full)
		cs, ce := max(s, lo), min(e, hi)
		roundTo(st, full[cs-s:ce-s])
		copy(dst[cs-lo:ce-lo], full[cs-s:ce-s])
	})
}

// WriteSynthetic writes a Hugging Face checkpoint directory holding the
// synthetic weights of cfg: config.json (torch_dtype set to match dtype)
// and model.safetensors, or shards plus model.safetensors.index.json when
// the weights exceed 4 GiB. The same arguments give byte-identical files.
// progress, if not nil, is called after each tensor with the data bytes
// written so far and the total, from one goroutine. Files appear only
// complete (written under temporary names, then renamed); the config is
// written last.
func WriteSynthetic(dir string, cfg *Config, seed uint64, dtype string, progress func(done, total int64)) (err error) {
	if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
		// A directory this call creates does not outlive its failure.
		defer func() {
			if err != nil {
				os.Remove(dir) // only when empty
			}
		}()
	}
	if cfg == nil {
		return fmt.Errorf("write synthetic %s: nil config", dir)
	}
	st, torch, err := synthDType(dtype)
	if err != nil {
		return fmt.Errorf("write synthetic %s: %w", dir, err)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("write synthetic %s: config: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write synthetic: %w", err)
	}
	specs := cfg.TensorSpecs()
	esize, _ := safetensors.DTypeSize(st)
	infos := make([]safetensors.TensorInfo, len(specs))
	gens := make([]generator, len(specs))
	var total int64
	for i, s := range specs {
		infos[i] = safetensors.TensorInfo{Name: s.Name, DType: st, Shape: s.Shape}
		if gens[i], err = newGenerator(s, seed); err != nil {
			return fmt.Errorf("write synthetic %s: %w", dir, err)
		}
		total += int64(s.Elems()) * int64(esize)
	}
	scratch := make([][]float32, runtime.GOMAXPROCS(0))
	var done int64
	fill := func(i int, dst []byte) error {
		g := gens[i]
		var ferr atomic.Pointer[error]
		parallelBlocks(specs[i].Elems(), func(w, b, lo, hi int) {
			var buf []float32
			if w < len(scratch) {
				if scratch[w] == nil {
					scratch[w] = make([]float32, synthBlock)
				}
				buf = scratch[w][:hi-lo]
			} else {
				buf = make([]float32, hi-lo)
			}
			g.block(b, buf)
			if err := safetensors.EncodeFloat32(st, buf, dst[lo*esize:hi*esize]); err != nil {
				ferr.CompareAndSwap(nil, &err)
			}
		})
		if e := ferr.Load(); e != nil {
			return *e
		}
		done += int64(len(dst))
		if progress != nil {
			progress(done, total)
		}
		return nil
	}
	meta := map[string]string{
		"format":         "pt",
		"gelo.generator": SyntheticVersion,
		"gelo.seed":      strconv.FormatUint(seed, 10),
	}
	if total > synthShardBytes {
		if _, err := safetensors.WriteSharded(dir, infos, meta, synthShardBytes, fill); err != nil {
			return fmt.Errorf("write synthetic: %w", err)
		}
	} else {
		if err := safetensors.WriteFunc(filepath.Join(dir, safetensors.SingleFile), infos, meta, fill); err != nil {
			return fmt.Errorf("write synthetic: %w", err)
		}
		// A stale index next to the new single file would only confuse.
		if err := os.Remove(filepath.Join(dir, safetensors.IndexFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write synthetic: %w", err)
		}
	}
	c := *cfg
	c.TorchDType = torch
	if err := safetensors.WriteFileAtomic(filepath.Join(dir, "config.json"), c.JSON()); err != nil {
		return fmt.Errorf("write synthetic: %w", err)
	}
	return nil
}

// synthDType maps a user dtype name to the safetensors dtype and the HF
// torch_dtype.
func synthDType(s string) (st, torch string, err error) {
	switch strings.ToLower(s) {
	case "f32", "float32", "fp32":
		return safetensors.F32, "float32", nil
	case "bf16", "bfloat16":
		return safetensors.BF16, "bfloat16", nil
	case "f16", "float16", "fp16":
		return safetensors.F16, "float16", nil
	}
	return "", "", fmt.Errorf("dtype %q is not supported (want f32, bf16 or f16)", s)
}

// roundTo rounds f32 values in place to what dtype can hold.
func roundTo(dtype string, v []float32) {
	switch dtype {
	case safetensors.BF16:
		for i, x := range v {
			v[i] = safetensors.BF16ToF32(safetensors.F32ToBF16(x))
		}
	case safetensors.F16:
		for i, x := range v {
			v[i] = safetensors.F16ToF32(safetensors.F32ToF16(x))
		}
	}
}

// parallelBlocks calls fn(worker, block, lo, hi) for every synthBlock-sized
// block of n elements, on up to GOMAXPROCS goroutines.
func parallelBlocks(n int, fn func(worker, block, lo, hi int)) {
	blocks := (n + synthBlock - 1) / synthBlock
	fanout.Each(blocks, 0, func(w, b int) {
		lo := b * synthBlock
		fn(w, b, lo, min(lo+synthBlock, n))
	})
}

// generator fills the blocks of one tensor.
type generator struct {
	key         uint64
	center, std float64
	centered    bool
}

func newGenerator(s TensorSpec, seed uint64) (generator, error) {
	g := generator{key: tensorKey(seed, s.Name)}
	last := 0
	if len(s.Shape) > 0 {
		last = s.Shape[len(s.Shape)-1]
	}
	switch s.Kind {
	case "norm":
		g.center, g.std, g.centered = 1, 0.05, true
	case "bias":
		g.std = 0.02
	case "linear", "embed":
		if last <= 0 {
			return g, fmt.Errorf("tensor %q: kind %s needs a positive last dimension, shape %v", s.Name, s.Kind, s.Shape)
		}
		g.std = 1 / math.Sqrt(float64(last))
	default:
		return g, fmt.Errorf("tensor %q: unknown kind %q", s.Name, s.Kind)
	}
	return g, nil
}

// block fills out with the values of block b.
func (g generator) block(b int, out []float32) {
	r := rng{mix64(g.key + uint64(b)*0xd1b54a32d192ed03)}
	std := g.std
	for k := range out {
		u := r.next()
		j := int32(uint32(u))
		i := (u >> 32) & 0x7f
		a := uint32(j)
		if j < 0 {
			a = uint32(-j)
		}
		var x float64
		if a < zigK[i] {
			x = float64(j) * float64(zigW[i])
		} else {
			x = r.normalSlow(j, i)
		}
		if g.centered {
			out[k] = float32(g.center + float64(std*x))
		} else {
			out[k] = float32(std * x)
		}
	}
}

// tensorKey hashes (seed, name) into a stream key: FNV-1a of the name,
// mixed with the mixed seed.
func tensorKey(seed uint64, name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return mix64(mix64(seed^0x67656c6f2d73796e) ^ h)
}

// mix64 is the SplitMix64 finaliser.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// rng is a SplitMix64 stream.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// uniform is in (0, 1].
func (r *rng) uniform() float64 { return float64(r.next()>>11+1) * 0x1p-53 }

// normal draws N(0, 1) by the ziggurat.
func (r *rng) normal() float64 {
	for {
		u := r.next()
		j := int32(uint32(u))
		i := (u >> 32) & 0x7f
		a := uint32(j)
		if j < 0 {
			a = uint32(-j)
		}
		if a < zigK[i] {
			return float64(j) * float64(zigW[i])
		}
		if x, ok := r.edge(j, i); ok {
			return x
		}
	}
}

// normalSlow finishes a ziggurat draw whose fast test failed, drawing
// afresh when the edge test rejects.
func (r *rng) normalSlow(j int32, i uint64) float64 {
	if x, ok := r.edge(j, i); ok {
		return x
	}
	return r.normal()
}

// edge handles the base strip's tail and the wedges of the ziggurat.
func (r *rng) edge(j int32, i uint64) (float64, bool) {
	if i == 0 {
		var x float64
		for {
			x = float64(-detLog(r.uniform()) * (1 / zigR))
			y := -detLog(r.uniform())
			if y+y >= float64(x*x) {
				break
			}
		}
		if j > 0 {
			return zigR + x, true
		}
		return -zigR - x, true
	}
	x := float64(j) * float64(zigW[i])
	f0, f1 := float64(zigF[i]), float64(zigF[i-1])
	if f0+float64(r.uniform()*(f1-f0)) < detExp(float64(-0.5*x)*x) {
		return x, true
	}
	return 0, false
}

// detLog is ln x for x in (0, 1], from exactly rounded operations only, so
// it gives the same bits everywhere (math.Log may use assembly and FMA).
func detLog(x float64) float64 {
	f, e := math.Frexp(x) // exact: x = f * 2^e, f in [0.5, 1)
	if f < math.Sqrt2/2 {
		f *= 2
		e--
	}
	s := (f - 1) / (f + 1)
	s2 := float64(s * s)
	// ln f = 2 atanh(s) = 2 s (1 + s2/3 + s2^2/5 + ...), |s| < 0.172.
	p := 1.0 / 19
	for _, c := range [...]float64{1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3, 1} {
		p = float64(p*s2) + c
	}
	return float64(float64(e)*math.Ln2) + float64(2*s*p)
}

// detExp is e^x for x <= 0 (down to about -700), from exactly rounded
// operations only.
func detExp(x float64) float64 {
	k := math.Floor(x/math.Ln2 + 0.5)
	// Cody-Waite: k*ln2Hi is exact, so r is accurate to a few ulps.
	const ln2Hi, ln2Lo = 6.93147180369123816490e-01, 1.90821492927058770002e-10
	r := float64(x-float64(k*ln2Hi)) - float64(k*ln2Lo) // |r| <= ln2/2
	// Taylor series to r^14/14!: error below 1e-16 relative.
	p := 1.0 / 87178291200
	for _, c := range [...]float64{1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800,
		1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1, 1} {
		p = float64(p*r) + c
	}
	return math.Ldexp(p, int(k))
}
