package plan

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"gelo/formats"
	"gelo/ir"
	"gelo/lwe"
	"gelo/models"
)

// Bounds on the count flags, far above any useful value, so that no size
// derived from them overflows and no loop over them runs for hours.
const (
	MaxWorkers = 1024
	MaxBatch   = 4096
)

// ErrPreflight marks a run refused before anything is allocated because
// a count is out of range (a usage error); ErrMemory one whose memory need
// is above the limit.
var (
	ErrPreflight = errors.New("preflight")
	ErrMemory    = errors.New("not enough memory")
)

// Run is what a run will allocate, from its config and flags.
type Run struct {
	Config *models.Config
	// Weights is the weight format's name (package formats; "" is f32).
	Weights string
	// KVDType is the KV cache's element type (f32, f16, bf16; "" is f32).
	KVDType string
	// Sequences is the batch size; 0 for a run that only loads the
	// weights (compile to a plan file).
	Sequences int
	// MaxContext is the KV-cache capacity in tokens; MaxTokens the new
	// tokens per sequence; PromptLen the longest prompt (0: unknown).
	MaxContext, MaxTokens, PromptLen int
	Workers                          int
	ShieldK                          int
	// LWE, for a plan at a lattice level, is its parameters: the hints,
	// public matrices, pads and probe vectors it holds are counted as if
	// every linear op were offloaded (an upper bound).
	LWE *lwe.Params
	// Limit is the memory the run may use, in bytes (0: the available
	// memory, when the system says).
	Limit int64
}

// Need is a run's memory, item by item (bytes).
type Need struct {
	Weights, DeviceWeights, KV, History, Arena, Shields, Lattice, Workers, Total int64
}

func (n Need) String() string {
	lat := ""
	if n.Lattice > 0 {
		lat = ", lwe hints, pads and probes " + Bytes(n.Lattice)
	}
	return fmt.Sprintf("%s (weights %s, device weights %s, KV cache %s, history %s, arenas ~%s, shields %s%s, workers %s)",
		Bytes(n.Total), Bytes(n.Weights), Bytes(n.DeviceWeights), Bytes(n.KV), Bytes(n.History), Bytes(n.Arena), Bytes(n.Shields), lat, Bytes(n.Workers))
}

// Preflight range-checks the counts of r and computes the memory the run
// needs; it refuses (ErrPreflight, with the figure and the flag to change)
// a count out of range or a need above the limit. Every product is
// checked, so no flag value can overflow it.
func Preflight(r Run) (Need, error) {
	fail := func(format string, args ...any) (Need, error) {
		return Need{}, fmt.Errorf("%w: %s", ErrPreflight, fmt.Sprintf(format, args...))
	}
	c := r.Config
	if c == nil {
		return fail("no model config")
	}
	if _, err := formats.LookupPlan("--weights", r.Weights); err != nil {
		return fail("%v", err)
	}
	if r.Workers < 0 || r.Workers > MaxWorkers {
		return fail("--workers %d is outside [0, %d]", r.Workers, MaxWorkers)
	}
	if r.ShieldK < 0 || r.ShieldK > ir.MaxShieldRows {
		return fail("--shield %d rows is outside [0, %d]", r.ShieldK, ir.MaxShieldRows)
	}
	if r.Sequences < 0 || r.Sequences > MaxBatch {
		return fail("%d prompts in one batch: at most %d", r.Sequences, MaxBatch)
	}
	if r.Sequences > 0 {
		if r.MaxContext <= 0 || r.MaxContext > c.MaxPositionEmbeddings {
			return fail("--max-context %d is outside [1, %d] (the model's max_position_embeddings)", r.MaxContext, c.MaxPositionEmbeddings)
		}
		if r.MaxTokens < 0 || r.MaxTokens > c.MaxPositionEmbeddings {
			return fail("--max-tokens %d can never be reached: the model's context is at most %d tokens (max_position_embeddings)", r.MaxTokens, c.MaxPositionEmbeddings)
		}
		if r.PromptLen > r.MaxContext {
			return fail("a prompt of %d tokens does not fit --max-context %d", r.PromptLen, r.MaxContext)
		}
	}
	n, err := need(r)
	if err != nil {
		return fail("the memory this run needs overflows int64 (%v)", err)
	}
	limit, from := r.Limit, "--max-memory"
	if limit == 0 {
		limit, from = AvailableMemory(), "available memory (MemAvailable in /proc/meminfo; set --max-memory to override)"
	}
	if limit > 0 && n.Total > limit {
		return n, fmt.Errorf("%w: this run needs about %s, above the %s of %s: lower --max-context, the batch, --shield or --workers, use a smaller model or --weights format, or raise --max-memory",
			ErrMemory, n, from, Bytes(limit))
	}
	return n, nil
}

// need computes r's memory with checked arithmetic.
func need(r Run) (Need, error) {
	c := r.Config
	var n Need
	var err error
	params := c.ParamCount()
	if n.Weights, err = models.Mul(int(params), 4); err != nil {
		return n, err
	}
	// The device keeps its own copy of every matrix in its format (f32
	// shares the TEE's), each matrix in the format's fallback where its
	// rows are not whole blocks (the format record's rule, as quantize
	// applies it).
	if n.DeviceWeights, err = deviceWeightBytes(c, r.Weights); err != nil {
		return n, err
	}
	if r.Workers > 0 {
		n.Workers, _ = models.Mul(r.Workers, 256<<10) // stack and scratch, an estimate
	}
	if r.LWE != nil {
		rows := max(r.Sequences, r.PromptLen, min(r.MaxContext, 512))
		if n.Lattice, err = latticeBytes(c, *r.LWE, rows, max(r.Sequences, 1)); err != nil {
			return n, err
		}
	}
	if r.Sequences == 0 {
		n.Total, err = models.Add(n.Weights, n.DeviceWeights, n.Lattice, n.Workers)
		return n, err
	}
	b, t := r.Sequences, r.MaxContext
	hd := c.HeadDimension()
	kvBytes := 4
	if r.KVDType == "f16" || r.KVDType == "bf16" {
		kvBytes = 2
	}
	if n.KV, err = models.Mul(c.NumHiddenLayers, 2, b, t, c.NumKeyValueHeads, hd, kvBytes); err != nil {
		return n, err
	}
	if n.History, err = models.Mul(b, t+1, 8); err != nil {
		return n, err
	}
	// Arenas: the decode step (B rows) and the prefill (prompt rows, with
	// a score row per head over the context), each with the logits.
	rows := r.PromptLen
	if rows == 0 {
		rows = min(t, 512)
	}
	width := 4*c.HiddenSize + c.NumAttentionHeads*hd + 2*c.NumKeyValueHeads*hd + 3*c.IntermediateSize
	dec, err := models.Mul(b, width+c.NumAttentionHeads*t+c.VocabSize, 4)
	if err != nil {
		return n, err
	}
	pre, err := models.Mul(rows, width+c.NumAttentionHeads*t, 4)
	if err != nil {
		return n, err
	}
	logits, _ := models.Mul(b, c.VocabSize, 4)
	if n.Arena, err = models.Add(dec, pre, logits); err != nil {
		return n, err
	}
	// Shields: a K-row block per crossing of the widest activation, per
	// sequence, with its mask workspace.
	if n.Shields, err = models.Mul(b, r.ShieldK+rows, max(c.HiddenSize, c.IntermediateSize), 4, 4); err != nil {
		return n, err
	}
	n.Total, err = models.Add(n.Weights, n.DeviceWeights, n.KV, n.History, n.Arena, n.Shields, n.Lattice, n.Workers)
	return n, err
}

// latticeBytes is what an lwe plan holds beyond its weights, every linear
// op offloaded: each matrix's hint (d_out x lambda words) and its integers
// in the TEE (d_out x d_in bytes, read by decode's norms and the probes),
// A for each input width (d_in x lambda words), the probe vectors
// (DefaultProbePool of d_in + d_out words a matrix), and the pads of rows
// rows for each crossing shape (q|k|v, o, gate|up, down, the LM head:
// d_in + the outputs' words a row; a program's crossings of one shape
// share them), and each decode crossing's pool of lwe.PoolSize pads
// (filled in bulk ahead of the steps).
func latticeBytes(c *models.Config, p lwe.Params, rows, batch int) (int64, error) {
	hd := c.HeadDimension()
	d, q, kv, ff, v := c.HiddenSize, c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd, c.IntermediateSize, c.VocabSize
	L, lam := c.NumHiddenLayers, p.Lambda
	type mat struct{ out, in, count int }
	mats := []mat{{q + 2*kv, d, L}, {d, q, L}, {2 * ff, d, L}, {d, ff, L}, {v, d, 1}}
	var total int64
	add := func(f ...int) error {
		b, err := models.Mul(f...)
		if err == nil {
			total, err = models.Add(total, b)
		}
		return err
	}
	for _, m := range mats {
		if err := add(m.count, m.out, lam, 4); err != nil { // hint
			return 0, err
		}
		if err := add(m.count, m.out, m.in); err != nil { // integers
			return 0, err
		}
		if err := add(m.count, 8, m.in+m.out, 4); err != nil { // probe vectors (the default pool)
			return 0, err
		}
		if err := add(rows, m.in+m.out, 4); err != nil { // pads of this shape
			return 0, err
		}
		if err := add(m.count, lwe.PoolSize(p, batch), m.in+m.out, 4); err != nil { // decode pools
			return 0, err
		}
	}
	widths := map[int]bool{d: true, q: true, ff: true}
	for w := range widths {
		if err := add(w, lam, 4); err != nil { // A
			return 0, err
		}
	}
	return total, nil
}

// AvailableMemory is MemAvailable from /proc/meminfo in bytes, or 0 when
// the system does not say.
func AvailableMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != "MemAvailable" {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb < 0 || kb > 1<<53 {
			return 0
		}
		return kb << 10
	}
	return 0
}

// Bytes prints a byte count in binary units.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i])
}

// ParseBytes reads a size such as 512M, 8G, 1.5T or a plain byte count
// (binary units), at least one byte.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	mult := int64(1)
	if t != "" {
		if i := strings.IndexByte("KMGTP", t[len(t)-1]); i >= 0 {
			mult = int64(1) << (10 * (i + 1))
			t = t[:len(t)-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v*float64(mult) >= 1) || v*float64(mult) >= 1<<62 {
		return 0, fmt.Errorf("%q is not a size (a positive number of bytes, or with K, M, G, T, P)", s)
	}
	return int64(v * float64(mult)), nil
}

// deviceWeightBytes is the device's copy of c's matrices in the weight
// format called name: none for f32 (the device shares the TEE's).
func deviceWeightBytes(c *models.Config, name string) (int64, error) {
	f, err := formats.LookupPlan("--weights", name)
	if err != nil || f.DType == ir.F32 {
		return 0, err
	}
	var total int64
	for _, t := range c.TensorSpecs() {
		if len(t.Shape) != 2 {
			continue
		}
		b, err := f.MatrixBytes(t.Shape[0], t.Shape[1])
		if err != nil {
			return 0, fmt.Errorf("%w: tensor %s: %w", ErrPreflight, t.Name, err)
		}
		if total, err = models.Add(total, b); err != nil {
			return 0, err
		}
	}
	return total, nil
}
