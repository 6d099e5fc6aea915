package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gelo/formats"
	"gelo/models"
	"gelo/models/gguf"
)

// GGUFTypes are the tensor types ExportGGUF writes matrices in (the
// export formats' records).
func GGUFTypes() []string { return formats.ExportNames() }

// ExportGGUF writes m as a GGUF file llama.cpp loads: the config as
// {arch}.* metadata, the tokenizer (when tok has one) as tokenizer.ggml.*,
// every matrix in format (f32, f16, bf16, q8_0, q4_0 or q4_k blocks; a
// q4_k matrix whose rows are not whole 256-value super-blocks in q8_0, as
// llama.cpp's quantizer falls back) and every vector (norms, biases) in
// F32, under llama.cpp's tensor names; llama models get the converter's
// Q/K row permutation.
func ExportGGUF(m *models.Model, tok Tokenizer, format string, out io.Writer) error {
	cfg := m.Config
	arch := cfg.ModelType
	if arch == "mistral" {
		arch = "llama"
	}
	mat, err := formats.LookupExport(format)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	w := &gguf.Writer{}
	w.String("general.architecture", arch)
	w.String("general.name", m.Spec)
	w.Uint32("general.alignment", gguf.DefaultAlignment)
	w.Uint32("general.file_type", mat.GGUFFileType)
	u := func(key string, v int) { w.Uint32(arch+"."+key, uint32(v)) }
	u("block_count", cfg.NumHiddenLayers)
	u("context_length", cfg.MaxPositionEmbeddings)
	u("embedding_length", cfg.HiddenSize)
	u("feed_forward_length", cfg.IntermediateSize)
	u("attention.head_count", cfg.NumAttentionHeads)
	u("attention.head_count_kv", cfg.NumKeyValueHeads)
	u("attention.key_length", cfg.HeadDimension())
	u("attention.value_length", cfg.HeadDimension())
	w.Float32(arch+".rope.freq_base", float32(cfg.RopeTheta))
	w.Float32(arch+".attention.layer_norm_rms_epsilon", float32(cfg.RMSNormEps))
	w.Uint32("tokenizer.ggml.bos_token_id", uint32(cfg.BOSTokenID))
	if tok.Bytes != nil {
		if err := ggufTokenizerMeta(w, tok, cfg); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	} else if len(cfg.EOSTokenIDs) > 0 {
		w.Uint32("tokenizer.ggml.eos_token_id", uint32(cfg.EOSTokenIDs[0]))
	}
	for _, s := range cfg.TensorSpecs() {
		data, shape, err := m.Get(s.Name)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		heads := 0
		if arch == "llama" {
			switch {
			case strings.HasSuffix(s.Name, "q_proj.weight"):
				heads = cfg.NumAttentionHeads
			case strings.HasSuffix(s.Name, "k_proj.weight"):
				heads = cfg.NumKeyValueHeads
			}
		}
		if heads > 0 {
			data = models.PermuteQK(data, shape, heads)
		}
		f, err := formats.Lookup(formats.F32)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if len(shape) == 2 {
			// A matrix whose rows are not whole blocks of the format
			// in its fallback (q4_k's q8_0), as llama.cpp's quantizer.
			if f, err = mat.ForRow(shape[1]); err != nil {
				return fmt.Errorf("export: tensor %s: %w", s.Name, err)
			}
		}
		t := f.GGUF
		var b []byte
		if sb, ok := m.Blocks(s.Name); ok && sb.Type == t {
			// A tensor its file stored in this type is written as it
			// was stored (requantizing its values need not give the
			// same blocks).
			b = sb.Data
			if heads > 0 {
				b = models.PermuteRowBytes(b, shape[0], heads)
			}
		} else if b, err = encodeTensor(f, data); err != nil {
			return fmt.Errorf("export: tensor %s: %w", s.Name, err)
		}
		if err := w.Tensor(models.GGUFName(s.Name), t, shape, b); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	_, err = w.WriteTo(out)
	return err
}

// encodeTensor lays out values as a tensor of format f stores them.
func encodeTensor(f *formats.Format, v []float32) ([]byte, error) {
	b := make([]byte, f.DType.Bytes(len(v)))
	if err := f.Encode(b, v); err != nil {
		return nil, err
	}
	return b, nil
}

// ggufTokenizerMeta writes the tokenizer as tokenizer.ggml.*: every id of
// the embedding (ids the tokenizer lacks padded as unused [PADn] tokens,
// as llama.cpp's converter does), added special tokens as control,
// other added tokens as user-defined, the merges, eos/pad ids and the chat
// template from tokenizer_config.json beside the tokenizer file.
func ggufTokenizerMeta(w *gguf.Writer, tok Tokenizer, cfg *models.Config) error {
	var raw struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Type   string          `json:"type"`
			Vocab  map[string]int  `json:"vocab"`
			Merges json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(tok.Bytes, &raw); err != nil {
		return fmt.Errorf("tokenizer %s: %w", tok.Path, err)
	}
	if raw.Model.Type != "BPE" {
		return fmt.Errorf("tokenizer %s: model type %q (GGUF export writes byte-level BPE)", tok.Path, raw.Model.Type)
	}
	n := cfg.VocabSize
	tokens := make([]string, n)
	types := make([]int64, n)
	set := make([]bool, n)
	put := func(id int, s string, ty int64) error {
		if id < 0 || id >= n {
			return fmt.Errorf("token %q has id %d outside the vocabulary of %d", s, id, n)
		}
		tokens[id], types[id], set[id] = s, ty, true
		return nil
	}
	for s, id := range raw.Model.Vocab {
		if err := put(id, s, models.GGUFTokenNormal); err != nil {
			return err
		}
	}
	for _, a := range raw.AddedTokens {
		ty := int64(models.GGUFTokenUserDefined)
		if a.Special {
			ty = models.GGUFTokenControl
		}
		if err := put(a.ID, a.Content, ty); err != nil {
			return err
		}
	}
	for id := range tokens {
		if !set[id] {
			tokens[id], types[id] = fmt.Sprintf("[PAD%d]", id), models.GGUFTokenUnused
		}
	}
	var merges []string
	var asStrings []string
	if err := json.Unmarshal(raw.Model.Merges, &asStrings); err == nil {
		merges = asStrings
	} else {
		var pairs [][]string
		if err := json.Unmarshal(raw.Model.Merges, &pairs); err != nil {
			return fmt.Errorf("tokenizer %s: merges are neither strings nor pairs", tok.Path)
		}
		for _, p := range pairs {
			if len(p) != 2 {
				return fmt.Errorf("tokenizer %s: a merge of %d parts", tok.Path, len(p))
			}
			merges = append(merges, p[0]+" "+p[1])
		}
	}
	w.String("tokenizer.ggml.model", "gpt2")
	w.String("tokenizer.ggml.pre", "qwen2")
	w.Strings("tokenizer.ggml.tokens", tokens)
	w.Int32s("tokenizer.ggml.token_type", types)
	w.Strings("tokenizer.ggml.merges", merges)
	var tc struct {
		AddBOS       bool            `json:"add_bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
		Pad          json.RawMessage `json:"pad_token"`
		ChatTemplate string          `json:"chat_template"`
	}
	if tok.Path != "" {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(tok.Path), TokenizerConfigFileName)); err == nil {
			if err := json.Unmarshal(b, &tc); err != nil {
				return fmt.Errorf("%s: %w", TokenizerConfigFileName, err)
			}
		}
	}
	idOf := func(r json.RawMessage) (int, bool) {
		var s string
		if json.Unmarshal(r, &s) != nil || s == "" {
			return 0, false
		}
		i := slices.Index(tokens, s)
		return i, i >= 0
	}
	if id, ok := idOf(tc.EOS); ok {
		w.Uint32("tokenizer.ggml.eos_token_id", uint32(id))
	} else if len(cfg.EOSTokenIDs) > 0 {
		w.Uint32("tokenizer.ggml.eos_token_id", uint32(cfg.EOSTokenIDs[0]))
	}
	if id, ok := idOf(tc.Pad); ok {
		w.Uint32("tokenizer.ggml.padding_token_id", uint32(id))
	}
	w.Bool("tokenizer.ggml.add_bos_token", tc.AddBOS)
	if tc.ChatTemplate != "" {
		w.String("tokenizer.chat_template", tc.ChatTemplate)
	}
	return nil
}
