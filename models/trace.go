package models

import (
	"fmt"
	"math"

	"gelo/ir"
)

// Phase names of the traced graphs.
const (
	PhasePrefill = "prefill"
	PhaseDecode  = "decode"
)

// Names of graph inputs and outputs shared by the tracer and the runtime.
const (
	InputTokens = "tokens" // i32[rows]: token id of each row
	InputPos    = "pos"    // i32[rows]: absolute position of each row
	InputSeq    = "seq"    // i32[rows]: which cache sequence a row belongs to
	OutLogits   = "logits" // f32[rows or 1, vocab]
)

// CacheName names the K or V cache of layer i, both as a graph input and
// as the output that carries the updated cache.
func CacheName(kind byte, layer int) string { return fmt.Sprintf("%c.%d", kind, layer) }

// TraceOptions change what a traced graph computes.
type TraceOptions struct {
	// AllLogits makes prefill return logits for every row instead of only
	// the last one (tests compare every position; generation needs one).
	AllLogits bool
	// KVDType is the element type of the KV caches: F32 (the zero value
	// means F32), F16 or BF16. K and V are computed in f32 either way; a
	// 16-bit cache stores them rounded and attention reads them widened.
	KVDType ir.DType
}

// KVDTypes are the KV-cache element types a trace accepts.
var KVDTypes = []ir.DType{ir.F32, ir.F16, ir.BF16}

// kvDType is o's cache dtype, F32 for the zero value; an error names a
// dtype no cache may have.
func (o TraceOptions) kvDType() (ir.DType, error) {
	switch o.KVDType {
	case ir.InvalidDType, ir.F32:
		return ir.F32, nil
	case ir.F16, ir.BF16:
		return o.KVDType, nil
	}
	return ir.InvalidDType, fmt.Errorf("KV cache dtype %v: want f32, f16 or bf16", o.KVDType)
}

// Trace emits the IR of both phases of cfg: prefill(n, T) over one
// sequence of n rows, and decode(B, T) over B sequences of one row each.
// T is the cache capacity. The graphs are identical in structure; they
// differ in the row and sequence dims and in the prefill's last-row
// selection.
func Trace(cfg *Config, opt TraceOptions) (*ir.Module, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	kvdt, err := opt.kvDType()
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if kvdt != ir.F32 && cfg.HeadDimension()%2 != 0 {
		return nil, fmt.Errorf("trace: a %v KV cache packs two values a word, head_dim %d is odd", kvdt, cfg.HeadDimension())
	}
	opt.KVDType = kvdt
	pre, err := traceGraph(cfg, PhasePrefill, opt)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", PhasePrefill, err)
	}
	dec, err := traceGraph(cfg, PhaseDecode, opt)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", PhaseDecode, err)
	}
	meta := map[string]string{"model_type": cfg.ModelType, "format": "gelo-ir"}
	if kvdt != ir.F32 { // f32 plans read as before
		meta["kv_dtype"] = kvdt.String()
	}
	return &ir.Module{Meta: meta, Graphs: []*ir.Graph{pre, dec}}, nil
}

// tracer is a tiny builder that remembers the first error, so the trace
// reads like the model's forward pass.
type tracer struct {
	g   *ir.Graph
	cfg *Config
	err error
}

func (t *tracer) add(op string, attrs ir.Attrs, in ...ir.ValueID) ir.ValueID {
	if t.err != nil {
		return -1
	}
	v, err := t.g.Add(op, attrs, in...)
	if err != nil {
		t.err = err
	}
	return v
}

func (t *tracer) declared(op, name string, typ ir.Type) ir.ValueID {
	if t.err != nil {
		return -1
	}
	v, err := t.g.AddDeclared(op, ir.Attrs{"name": name}, typ)
	if err != nil {
		t.err = err
	}
	return v
}

func (t *tracer) weight(name string, shape ...any) ir.ValueID {
	return t.declared(ir.OpWeight, name, ir.T(ir.F32, shape...))
}

// linear is a projection with an optional bias.
func (t *tracer) linear(x ir.ValueID, prefix string, out, in int, bias bool) ir.ValueID {
	w := t.weight(prefix+".weight", out, in)
	if bias {
		b := t.weight(prefix+".bias", out)
		return t.add(ir.OpMatMul, nil, x, w, b)
	}
	return t.add(ir.OpMatMul, nil, x, w)
}

func traceGraph(cfg *Config, phase string, opt TraceOptions) (*ir.Graph, error) {
	rows, seqs := "n", ir.D(1)
	if phase == PhaseDecode {
		rows, seqs = "B", ir.S("B")
	}
	t := &tracer{g: &ir.Graph{Name: phase, Params: []string{rows, "T"}}, cfg: cfg}
	d, hd, ff := cfg.HiddenSize, cfg.HeadDimension(), cfg.IntermediateSize
	hq, hkv := cfg.NumAttentionHeads, cfg.NumKeyValueHeads
	q, kv := hq*hd, hkv*hd
	eps := cfg.RMSNormEps

	tokens := t.declared(ir.OpInput, InputTokens, ir.T(ir.I32, rows))
	pos := t.declared(ir.OpInput, InputPos, ir.T(ir.I32, rows))
	seq := t.declared(ir.OpInput, InputSeq, ir.T(ir.I32, rows))
	embed := t.weight(EmbedName, cfg.VocabSize, d)
	x := t.add(ir.OpEmbed, nil, tokens, embed)

	var outputs []ir.Output
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := LayerPrefix(l)
		cacheT := ir.Type{DType: opt.KVDType, Shape: ir.Shape{seqs, ir.S("T"), ir.D(kv)}}
		kc := t.declared(ir.OpInput, CacheName('k', l), cacheT)
		vc := t.declared(ir.OpInput, CacheName('v', l), cacheT)

		h := t.add(ir.OpRMSNorm, ir.Attrs{"eps": eps}, x, t.weight(p+"input_layernorm.weight", d))
		qv := t.linear(h, p+"self_attn.q_proj", q, d, cfg.QKVBias())
		kv1 := t.linear(h, p+"self_attn.k_proj", kv, d, cfg.QKVBias())
		vv := t.linear(h, p+"self_attn.v_proj", kv, d, cfg.QKVBias())
		if cfg.QKNorm() {
			qv = t.add(ir.OpQKNorm, ir.Attrs{"heads": int64(hq), "head_dim": int64(hd), "eps": eps},
				qv, t.weight(p+"self_attn.q_norm.weight", hd))
			kv1 = t.add(ir.OpQKNorm, ir.Attrs{"heads": int64(hkv), "head_dim": int64(hd), "eps": eps},
				kv1, t.weight(p+"self_attn.k_norm.weight", hd))
		}
		qv = t.add(ir.OpRope, ir.Attrs{"heads": int64(hq), "head_dim": int64(hd), "theta": cfg.RopeTheta}, qv, pos)
		kv1 = t.add(ir.OpRope, ir.Attrs{"heads": int64(hkv), "head_dim": int64(hd), "theta": cfg.RopeTheta}, kv1, pos)
		kc = t.add(ir.OpKVAppend, nil, kc, kv1, seq, pos)
		vc = t.add(ir.OpKVAppend, nil, vc, vv, seq, pos)
		att := t.add(ir.OpAttention, ir.Attrs{"heads": int64(hq), "kv_heads": int64(hkv), "head_dim": int64(hd),
			"scale": 1 / math.Sqrt(float64(hd))}, qv, kc, vc, seq, pos)
		o := t.linear(att, p+"self_attn.o_proj", d, q, cfg.OBias())
		x = t.add(ir.OpAdd, nil, x, o)

		h = t.add(ir.OpRMSNorm, ir.Attrs{"eps": eps}, x, t.weight(p+"post_attention_layernorm.weight", d))
		gate := t.linear(h, p+"mlp.gate_proj", ff, d, false)
		up := t.linear(h, p+"mlp.up_proj", ff, d, false)
		act := t.add(ir.OpMul, nil, t.add(ir.OpSiLU, nil, gate), up)
		x = t.add(ir.OpAdd, nil, x, t.linear(act, p+"mlp.down_proj", d, ff, false))
		outputs = append(outputs, ir.Output{Name: CacheName('k', l), Value: kc}, ir.Output{Name: CacheName('v', l), Value: vc})
	}
	if phase == PhasePrefill && !opt.AllLogits {
		x = t.add(ir.OpLastRow, nil, x)
	}
	x = t.add(ir.OpRMSNorm, ir.Attrs{"eps": eps}, x, t.weight(FinalNormName, d))
	head := embed
	if !cfg.TieWordEmbeddings {
		head = t.weight(LMHeadName, cfg.VocabSize, d)
	}
	logits := t.add(ir.OpLMHead, nil, x, head)
	if t.err != nil {
		return nil, t.err
	}
	t.g.Outputs = append([]ir.Output{{Name: OutLogits, Value: logits}}, outputs...)
	return t.g, nil
}
