package models

import "fmt"

// TensorSpec is one weight tensor a config implies: its HF name and shape.
type TensorSpec struct {
	Name  string
	Shape []int
	// Kind says how synthetic weights fill it: "norm" (near 1), "linear"
	// (N(0, 1/sqrt(fan_in))), "bias" (small), "embed" (N(0, 1)-scaled rows).
	Kind string
}

// Elems is the element count.
func (t TensorSpec) Elems() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// LayerPrefix is the HF name prefix of decoder layer i.
func LayerPrefix(i int) string { return fmt.Sprintf("model.layers.%d.", i) }

// Tensor names used by the tracer and the loaders.
const (
	EmbedName     = "model.embed_tokens.weight"
	FinalNormName = "model.norm.weight"
	LMHeadName    = "lm_head.weight"
)

// TensorSpecs lists every tensor of the config in canonical order: the
// embedding, each layer in order, the final norm, then the LM head when it
// is untied. This order is the one model identity hashes in.
func (c *Config) TensorSpecs() []TensorSpec {
	d, hd, ff := c.HiddenSize, c.HeadDimension(), c.IntermediateSize
	q, kv := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd
	specs := []TensorSpec{{EmbedName, []int{c.VocabSize, d}, "embed"}}
	for i := 0; i < c.NumHiddenLayers; i++ {
		p := LayerPrefix(i)
		specs = append(specs, TensorSpec{p + "input_layernorm.weight", []int{d}, "norm"})
		specs = append(specs, TensorSpec{p + "self_attn.q_proj.weight", []int{q, d}, "linear"})
		if c.QKVBias() {
			specs = append(specs, TensorSpec{p + "self_attn.q_proj.bias", []int{q}, "bias"})
		}
		specs = append(specs, TensorSpec{p + "self_attn.k_proj.weight", []int{kv, d}, "linear"})
		if c.QKVBias() {
			specs = append(specs, TensorSpec{p + "self_attn.k_proj.bias", []int{kv}, "bias"})
		}
		specs = append(specs, TensorSpec{p + "self_attn.v_proj.weight", []int{kv, d}, "linear"})
		if c.QKVBias() {
			specs = append(specs, TensorSpec{p + "self_attn.v_proj.bias", []int{kv}, "bias"})
		}
		specs = append(specs, TensorSpec{p + "self_attn.o_proj.weight", []int{d, q}, "linear"})
		if c.OBias() {
			specs = append(specs, TensorSpec{p + "self_attn.o_proj.bias", []int{d}, "bias"})
		}
		if c.QKNorm() {
			specs = append(specs, TensorSpec{p + "self_attn.q_norm.weight", []int{hd}, "norm"})
			specs = append(specs, TensorSpec{p + "self_attn.k_norm.weight", []int{hd}, "norm"})
		}
		specs = append(specs, TensorSpec{p + "post_attention_layernorm.weight", []int{d}, "norm"})
		specs = append(specs, TensorSpec{p + "mlp.gate_proj.weight", []int{ff, d}, "linear"})
		specs = append(specs, TensorSpec{p + "mlp.up_proj.weight", []int{ff, d}, "linear"})
		specs = append(specs, TensorSpec{p + "mlp.down_proj.weight", []int{d, ff}, "linear"})
	}
	specs = append(specs, TensorSpec{FinalNormName, []int{d}, "norm"})
	if !c.TieWordEmbeddings {
		specs = append(specs, TensorSpec{LMHeadName, []int{c.VocabSize, d}, "linear"})
	}
	return specs
}
