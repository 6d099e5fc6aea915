package models

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Published Hugging Face config.json bodies of the Qwen3 dense models
// (Qwen/Qwen3-0.6B, -1.7B, -4B, -8B), trimmed of nothing: the pinned
// variants must equal what the reader makes of them.
var realConfigs = map[string]string{
	"qwen3-0.6b": `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
	  "bos_token_id":151643,"eos_token_id":151645,"head_dim":128,"hidden_act":"silu","hidden_size":1024,
	  "initializer_range":0.02,"intermediate_size":3072,"max_position_embeddings":40960,"max_window_layers":28,
	  "model_type":"qwen3","num_attention_heads":16,"num_hidden_layers":28,"num_key_value_heads":8,
	  "rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":1000000,"sliding_window":null,
	  "tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.51.0","use_cache":true,
	  "use_sliding_window":false,"vocab_size":151936}`,
	"qwen3-1.7b": `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
	  "bos_token_id":151643,"eos_token_id":151645,"head_dim":128,"hidden_act":"silu","hidden_size":2048,
	  "initializer_range":0.02,"intermediate_size":6144,"max_position_embeddings":40960,"max_window_layers":28,
	  "model_type":"qwen3","num_attention_heads":16,"num_hidden_layers":28,"num_key_value_heads":8,
	  "rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":1000000,"sliding_window":null,
	  "tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.51.0","use_cache":true,
	  "use_sliding_window":false,"vocab_size":151936}`,
	"qwen3-4b": `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
	  "bos_token_id":151643,"eos_token_id":151645,"head_dim":128,"hidden_act":"silu","hidden_size":2560,
	  "initializer_range":0.02,"intermediate_size":9728,"max_position_embeddings":40960,"max_window_layers":36,
	  "model_type":"qwen3","num_attention_heads":32,"num_hidden_layers":36,"num_key_value_heads":8,
	  "rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":1000000,"sliding_window":null,
	  "tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.51.0","use_cache":true,
	  "use_sliding_window":false,"vocab_size":151936}`,
	"qwen3-8b": `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
	  "bos_token_id":151643,"eos_token_id":151645,"head_dim":128,"hidden_act":"silu","hidden_size":4096,
	  "initializer_range":0.02,"intermediate_size":12288,"max_position_embeddings":40960,"max_window_layers":36,
	  "model_type":"qwen3","num_attention_heads":32,"num_hidden_layers":36,"num_key_value_heads":8,
	  "rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":1000000,"sliding_window":null,
	  "tie_word_embeddings":false,"torch_dtype":"bfloat16","transformers_version":"4.51.0","use_cache":true,
	  "use_sliding_window":false,"vocab_size":151936}`,
}

func TestPinnedVariantsMatchRealConfigs(t *testing.T) {
	for name, body := range realConfigs {
		t.Run(name, func(t *testing.T) {
			got, err := ParseConfig(name+"/config.json", []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			want, err := Variant(name)
			if err != nil {
				t.Fatal(err)
			}
			got.RopeScaling = nil // "null" in the file, absent in the pin
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("pinned %s differs from its config.json (-pinned +file):\n%s", name, d)
			}
		})
	}
}

func TestParamCounts(t *testing.T) {
	// Published sizes: 0.6B has 0.60B parameters with the tied embedding
	// counted once (0.44B without embeddings); 8B has 8.19B.
	for name, want := range map[string]float64{"qwen3-0.6b": 0.596e9, "qwen3-8b": 8.19e9} {
		c, _ := Variant(name)
		got := float64(c.ParamCount())
		if got < want*0.99 || got > want*1.01 {
			t.Errorf("%s: %d parameters, want about %.3g", name, c.ParamCount(), want)
		}
	}
}

func TestConfigRoundTrip(t *testing.T) {
	for _, name := range VariantNames() {
		c, _ := Variant(name)
		back, err := ParseConfig("x", c.JSON())
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(c, back); d != "" {
			t.Errorf("%s: JSON round trip differs:\n%s", name, d)
		}
	}
}

func TestOtherFamilies(t *testing.T) {
	qwen2 := `{"model_type":"qwen2","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
	  "num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,"max_position_embeddings":128,
	  "rope_theta":10000.0,"rms_norm_eps":1e-6,"tie_word_embeddings":false,"eos_token_id":[1,2]}`
	c, err := ParseConfig("qwen2", []byte(qwen2))
	if err != nil {
		t.Fatal(err)
	}
	if c.QKNorm() || !c.QKVBias() || c.HeadDimension() != 16 || len(c.EOSTokenIDs) != 2 {
		t.Errorf("qwen2: qknorm=%v bias=%v head_dim=%d eos=%v", c.QKNorm(), c.QKVBias(), c.HeadDimension(), c.EOSTokenIDs)
	}
	names := map[string]bool{}
	for _, s := range c.TensorSpecs() {
		names[s.Name] = true
	}
	for _, want := range []string{"model.layers.1.self_attn.q_proj.bias", LMHeadName} {
		if !names[want] {
			t.Errorf("qwen2 tensor specs lack %s", want)
		}
	}
	if names["model.layers.0.self_attn.q_norm.weight"] {
		t.Error("qwen2 has no QK-norm")
	}
	llama := strings.Replace(qwen2, `"qwen2"`, `"llama"`, 1)
	if c, err = ParseConfig("llama", []byte(llama)); err != nil || c.QKVBias() {
		t.Errorf("llama: err=%v bias=%v", err, c.QKVBias())
	}
}

func TestConfigErrors(t *testing.T) {
	base := map[string]any{}
	tiny, _ := Variant("qwen3-tiny")
	if err := json.Unmarshal(tiny.JSON(), &base); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		field string
		value any
		want  string
	}{
		{"model_type", "gpt2", `field model_type: "gpt2" is not supported`},
		{"hidden_size", 0, "field hidden_size: must be positive"},
		{"num_key_value_heads", 3, "field num_key_value_heads: 3 does not divide num_attention_heads 4"},
		{"rope_theta", -1, "field rope_theta: must be positive"},
		{"rms_norm_eps", 0, "field rms_norm_eps"},
		{"hidden_act", "gelu", `field hidden_act: "gelu" is not supported`},
		{"eos_token_id", 100000, "field eos_token_id: 100000 is outside the vocabulary"},
		{"rope_scaling", map[string]any{"type": "yarn", "factor": 4}, "field rope_scaling"},
		{"use_sliding_window", true, "field use_sliding_window"},
		{"head_dim", 15, "field head_dim: 15 is odd"},
		{"hidden_size", "wide", "cannot unmarshal string"},
	}
	for _, tc := range cases {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		m[tc.field] = tc.value
		body, _ := json.Marshal(m)
		_, err := ParseConfig("dir/config.json", body)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "dir/config.json") {
			t.Errorf("%s=%v: error %v, want it to name dir/config.json and say %q", tc.field, tc.value, err, tc.want)
		}
	}
	if _, err := ParseConfig("c.json", []byte("{")); err == nil || !strings.Contains(err.Error(), "c.json") {
		t.Errorf("truncated JSON: %v", err)
	}
	if _, err := ReadConfig("/nonexistent/config.json"); err == nil || !strings.Contains(err.Error(), "/nonexistent/config.json") {
		t.Errorf("missing file: %v", err)
	}
}
