// Package models holds what gelo knows of a model before it is traced:
// pinned variant constants, the Hugging Face config.json reader, weight
// loading (safetensors), deterministic synthetic weights, and the tracer
// that turns a Config into IR.
package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
)

// Config is the architecture of a decoder-only model, read from or written
// as a Hugging Face config.json. Qwen3 is the first family; Qwen2, Llama
// and Mistral run through the same decoder (no QK-norm; Qwen2 adds q/k/v
// biases; untied LM heads are supported).
type Config struct {
	ModelType             string   `json:"model_type"`
	Architectures         []string `json:"architectures,omitempty"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim,omitempty"`
	VocabSize             int      `json:"vocab_size"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	RopeTheta             float64  `json:"rope_theta"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	AttentionBias         bool     `json:"attention_bias"`
	HiddenAct             string   `json:"hidden_act"`
	BOSTokenID            int      `json:"bos_token_id"`
	EOSTokenIDs           TokenIDs `json:"eos_token_id"`
	TorchDType            string   `json:"torch_dtype,omitempty"`
	// RopeScaling and UseSlidingWindow change the numerics; the decoder
	// implements neither, so a config that turns them on is refused.
	RopeScaling      json.RawMessage `json:"rope_scaling,omitempty"`
	UseSlidingWindow bool            `json:"use_sliding_window,omitempty"`
}

// TokenIDs is an HF token-id field that may be a single id or a list.
type TokenIDs []int

// UnmarshalJSON accepts 7, [7, 8] and null.
func (t *TokenIDs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*t = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var ids []int
		if err := json.Unmarshal(b, &ids); err != nil {
			return err
		}
		*t = ids
		return nil
	}
	var id int
	if err := json.Unmarshal(b, &id); err != nil {
		return err
	}
	*t = TokenIDs{id}
	return nil
}

// MarshalJSON writes one id as a number, as HF does.
func (t TokenIDs) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]int(t))
}

// HeadDimension is head_dim, defaulting to hidden/heads as HF does when absent.
func (c *Config) HeadDimension() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	if c.NumAttentionHeads > 0 {
		return c.HiddenSize / c.NumAttentionHeads
	}
	return 0
}

// QKNorm reports whether the family applies per-head RMSNorm to Q and K
// before RoPE (Qwen3 only).
func (c *Config) QKNorm() bool { return c.ModelType == "qwen3" }

// QKVBias reports whether q/k/v projections carry a bias: always in Qwen2,
// by attention_bias elsewhere.
func (c *Config) QKVBias() bool { return c.ModelType == "qwen2" || c.AttentionBias }

// OBias reports whether the output projection carries a bias (Llama-style
// attention_bias covers o_proj too; Qwen2 and Qwen3 have none).
func (c *Config) OBias() bool {
	return c.AttentionBias && c.ModelType != "qwen2" && c.ModelType != "qwen3"
}

var supportedTypes = map[string]bool{"qwen3": true, "qwen2": true, "llama": true, "mistral": true}

// Validate checks every field the decoder relies on and names the first
// bad one.
func (c *Config) Validate() error {
	if !supportedTypes[c.ModelType] {
		return fmt.Errorf("field model_type: %q is not supported (want qwen3, qwen2, llama or mistral)", c.ModelType)
	}
	pos := []struct {
		name string
		v    int
	}{
		{"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"num_key_value_heads", c.NumKeyValueHeads}, {"vocab_size", c.VocabSize},
		{"max_position_embeddings", c.MaxPositionEmbeddings},
	}
	if c.NumHiddenLayers > MaxLayers {
		return fmt.Errorf("field num_hidden_layers: %d exceeds %d", c.NumHiddenLayers, MaxLayers)
	}
	for _, f := range pos {
		if f.v <= 0 {
			return fmt.Errorf("field %s: must be positive, got %d", f.name, f.v)
		}
		if f.v > MaxDim {
			return fmt.Errorf("field %s: %d exceeds %d", f.name, f.v, MaxDim)
		}
	}
	if c.HeadDim > MaxDim {
		return fmt.Errorf("field head_dim: %d exceeds %d", c.HeadDim, MaxDim)
	}
	if c.HeadDim < 0 {
		return fmt.Errorf("field head_dim: must be positive, got %d", c.HeadDim)
	}
	if c.HeadDim == 0 && c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("field head_dim: absent and hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	}
	if hd := c.HeadDimension(); hd%2 != 0 {
		return fmt.Errorf("field head_dim: %d is odd; RoPE needs an even head dimension", hd)
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return fmt.Errorf("field num_key_value_heads: %d does not divide num_attention_heads %d", c.NumKeyValueHeads, c.NumAttentionHeads)
	}
	if !(c.RopeTheta > 0) {
		return fmt.Errorf("field rope_theta: must be positive, got %v", c.RopeTheta)
	}
	if !(c.RMSNormEps > 0) || c.RMSNormEps > 1 {
		return fmt.Errorf("field rms_norm_eps: must be in (0, 1], got %v", c.RMSNormEps)
	}
	if c.HiddenAct != "" && c.HiddenAct != "silu" {
		return fmt.Errorf("field hidden_act: %q is not supported (want silu)", c.HiddenAct)
	}
	if rs := bytes.TrimSpace(c.RopeScaling); len(rs) > 0 && !bytes.Equal(rs, []byte("null")) {
		return fmt.Errorf("field rope_scaling: %s is not supported (only plain RoPE)", rs)
	}
	if c.UseSlidingWindow {
		return errors.New("field use_sliding_window: sliding-window attention is not supported")
	}
	if c.BOSTokenID < 0 || c.BOSTokenID >= c.VocabSize {
		return fmt.Errorf("field bos_token_id: %d is outside the vocabulary [0, %d)", c.BOSTokenID, c.VocabSize)
	}
	for _, id := range c.EOSTokenIDs {
		if id < 0 || id >= c.VocabSize {
			return fmt.Errorf("field eos_token_id: %d is outside the vocabulary [0, %d)", id, c.VocabSize)
		}
	}
	if n, err := c.checkedParamCount(); err != nil || n > MaxParams {
		return fmt.Errorf("the weights this config implies (%s parameters) exceed %d", paramText(n, err), int64(MaxParams))
	}
	return nil
}

// Bounds on a config, far above any supported model, so that no size
// computed from one overflows or asks for more memory than exists.
const (
	// MaxDim bounds every width, the vocabulary and the context.
	MaxDim = 1 << 24
	// MaxLayers bounds num_hidden_layers.
	MaxLayers = 4096
	// MaxParams bounds the parameter count (2^38: 1 TiB as f32).
	MaxParams = 1 << 38
)

// checkedParamCount is ParamCount computed with checked arithmetic, for a
// config not yet known to be within bounds.
func (c *Config) checkedParamCount() (int64, error) {
	var total int64
	for _, t := range c.TensorSpecs() {
		n, err := Mul(t.Shape...)
		if err != nil {
			return 0, fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		if total, err = Add(total, n); err != nil {
			return 0, err
		}
	}
	return total, nil
}

func paramText(n int64, err error) string {
	if err != nil {
		return "more than 2^63"
	}
	return fmt.Sprint(n)
}

// ParseConfig decodes and validates a config.json body; name is used in
// errors.
func ParseConfig(name string, data []byte) (*Config, error) {
	if err := CheckStrictJSON(data); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return &c, nil
}

// ReadConfig reads and validates a config.json file.
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(path, data)
}

// JSON returns the config as indented HF-style JSON with a trailing newline.
func (c *Config) JSON() []byte {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		// Config holds only plain fields; marshalling cannot fail.
		panic(err)
	}
	return append(b, '\n')
}

// Qwen3 variants pinned to the constants of the published Hugging Face
// config.json files. The tiny variant is gelo's built-in test model.
var variants = map[string]Config{
	"qwen3-0.6b": qwen3(1024, 3072, 28, 16, 8, true),
	"qwen3-1.7b": qwen3(2048, 6144, 28, 16, 8, true),
	"qwen3-4b":   qwen3(2560, 9728, 36, 32, 8, true),
	"qwen3-8b":   qwen3(4096, 12288, 36, 32, 8, false),
	"qwen3-tiny": {
		ModelType: "qwen3", Architectures: []string{"Qwen3ForCausalLM"},
		HiddenSize: 64, IntermediateSize: 192, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, VocabSize: 512,
		MaxPositionEmbeddings: 4096, RopeTheta: 1e6, RMSNormEps: 1e-6,
		TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: TokenIDs{2},
		TorchDType: "bfloat16",
	},
}

func qwen3(hidden, inter, layers, heads, kvHeads int, tied bool) Config {
	return Config{
		ModelType: "qwen3", Architectures: []string{"Qwen3ForCausalLM"},
		HiddenSize: hidden, IntermediateSize: inter, NumHiddenLayers: layers,
		NumAttentionHeads: heads, NumKeyValueHeads: kvHeads, HeadDim: 128,
		VocabSize: 151936, MaxPositionEmbeddings: 40960,
		RopeTheta: 1000000, RMSNormEps: 1e-6, TieWordEmbeddings: tied,
		HiddenAct: "silu", BOSTokenID: 151643, EOSTokenIDs: TokenIDs{151645},
		TorchDType: "bfloat16",
	}
}

// DefaultVariant is the built-in model used when none is named.
const DefaultVariant = "qwen3-tiny"

// Variant returns a copy of a pinned variant's config.
func Variant(name string) (*Config, error) {
	c, ok := variants[name]
	if !ok {
		return nil, fmt.Errorf("unknown variant %q (known: %v)", name, VariantNames())
	}
	c.Architectures = append([]string(nil), c.Architectures...)
	c.EOSTokenIDs = append(TokenIDs(nil), c.EOSTokenIDs...)
	return &c, nil
}

// VariantNames lists the pinned variants, sorted.
func VariantNames() []string {
	ns := make([]string, 0, len(variants))
	for n := range variants {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// ParamCount is the number of weight elements the config implies.
func (c *Config) ParamCount() int64 {
	d, hd := int64(c.HiddenSize), int64(c.HeadDimension())
	q, kv := int64(c.NumAttentionHeads)*hd, int64(c.NumKeyValueHeads)*hd
	ff := int64(c.IntermediateSize)
	layer := d*q + 2*d*kv + q*d + 3*d*ff + 2*d
	if c.QKNorm() {
		layer += 2 * hd
	}
	if c.QKVBias() {
		layer += q + 2*kv
	}
	if c.OBias() {
		layer += d
	}
	n := int64(c.NumHiddenLayers)*layer + int64(c.VocabSize)*d + d
	if !c.TieWordEmbeddings {
		n += int64(c.VocabSize) * d
	}
	return n
}
