package models

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gelo/models/safetensors"
)

// tinyDir writes the synthetic qwen3-tiny checkpoint in dtype.
func tinyDir(t *testing.T, dtype string) (string, *Config) {
	t.Helper()
	cfg, _ := Variant("qwen3-tiny")
	dir := t.TempDir()
	if err := WriteSynthetic(dir, cfg, 1, dtype, nil); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

// rewrite replaces model.safetensors with edit's view of its tensors.
func rewrite(t *testing.T, dir string, edit func([]safetensors.Tensor) []safetensors.Tensor) {
	t.Helper()
	path := filepath.Join(dir, safetensors.SingleFile)
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, n := range f.Names() {
		in, _ := f.Info(n)
		b, _ := f.Bytes(n)
		ts = append(ts, safetensors.Tensor{Name: n, DType: in.DType, Shape: in.Shape, Data: append([]byte(nil), b...)})
	}
	f.Close()
	if err := safetensors.Write(path, edit(ts), nil); err != nil {
		t.Fatal(err)
	}
}

func editConfig(t *testing.T, dir string, edit func(string) string) {
	t.Helper()
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(edit(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadF32ViewsAndClose(t *testing.T) {
	dir, cfg := tinyDir(t, "f32")
	w, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w.TotalBytes() != 4*cfg.ParamCount() {
		t.Errorf("TotalBytes %d, want %d", w.TotalBytes(), 4*cfg.ParamCount())
	}
	if len(w.Names()) != len(cfg.TensorSpecs()) || w.Names()[0] != EmbedName {
		t.Errorf("names %v", w.Names())
	}
	v, shape, err := w.Get(FinalNormName)
	if err != nil || len(v) != 64 || shapeStr(shape) != "[64]" {
		t.Fatalf("%v %v %v", len(v), shape, err)
	}
	if _, _, err := w.Get("nope"); err == nil || !strings.Contains(err.Error(), `no tensor "nope"`) {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Get(FinalNormName); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadErrors(t *testing.T) {
	up1 := "model.layers.1.mlp.up_proj.weight"
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"missing config", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "config.json")) },
			"config.json: no such file"},
		{"bad config value", func(t *testing.T, dir string) {
			editConfig(t, dir, func(s string) string { return strings.Replace(s, `"hidden_size": 64`, `"hidden_size": -64`, 1) })
		}, "config.json: field hidden_size: must be positive, got -64"},
		{"malformed config", func(t *testing.T, dir string) {
			editConfig(t, dir, func(s string) string { return s[:20] })
		}, "config.json: unexpected EOF"},
		{"missing weights", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, safetensors.SingleFile)) },
			"neither model.safetensors nor model.safetensors.index.json is present"},
		{"missing tensor", func(t *testing.T, dir string) {
			rewrite(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
				var out []safetensors.Tensor
				for _, x := range ts {
					if x.Name != up1 {
						out = append(out, x)
					}
				}
				return out
			})
		}, `tensor "model.layers.1.mlp.up_proj.weight" (shape [192,64] per config.json) is missing from model.safetensors`},
		{"wrong shape vs config", func(t *testing.T, dir string) {
			editConfig(t, dir, func(s string) string {
				return strings.Replace(s, `"intermediate_size": 192`, `"intermediate_size": 128`, 1)
			})
		}, `model.safetensors: tensor "model.layers.0.mlp.gate_proj.weight": shape [192,64] in the file vs config's [128,64]`},
		{"truncated file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, safetensors.SingleFile)
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-10)
		}, `run past the`},
		{"truncated header", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, safetensors.SingleFile), 100)
		}, `after the length field (truncated file?)`},
		{"extra layer in file", func(t *testing.T, dir string) {
			editConfig(t, dir, func(s string) string {
				return strings.Replace(s, `"num_hidden_layers": 2`, `"num_hidden_layers": 1`, 1)
			})
		}, `unexpected tensor "model.layers.1.input_layernorm.weight": config.json implies no such weight`},
		{"int tensor", func(t *testing.T, dir string) {
			rewrite(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
				for i := range ts {
					if ts[i].Name == FinalNormName {
						ts[i].DType = "I16"
					}
				}
				return ts
			})
		}, `tensor "model.norm.weight": unsupported dtype I16`},
		{"untied head under tied config", func(t *testing.T, dir string) {
			rewrite(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
				head := append([]byte(nil), ts[0].Data...)
				head[0] ^= 1
				return append(ts, safetensors.Tensor{Name: LMHeadName, DType: ts[0].DType, Shape: []int{512, 64}, Data: head})
			})
		}, `tensor "lm_head.weight" differs from "model.embed_tokens.weight" but config.json ties word embeddings`},
		{"head of wrong shape", func(t *testing.T, dir string) {
			rewrite(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
				return append(ts, safetensors.Tensor{Name: LMHeadName, DType: "BF16", Shape: []int{2}, Data: make([]byte, 4)})
			})
		}, `tensor "lm_head.weight": shape [2] in the file vs config's [512,64]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := tinyDir(t, "bf16")
			c.setup(t, dir)
			w, err := Load(dir)
			if err == nil {
				w.Close()
				t.Fatalf("loaded; want error containing %q", c.want)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q\nwant it to name %s and contain %q", err, dir, c.want)
			}
		})
	}
}

func TestLoadTolerates(t *testing.T) {
	dir, cfg := tinyDir(t, "bf16")
	// A rotary buffer and a tied head equal to the embedding are accepted.
	rewrite(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
		inv := make([]byte, 8*4)
		binary.LittleEndian.PutUint32(inv, math.Float32bits(1))
		ts = append(ts, safetensors.Tensor{Name: "model.layers.0.self_attn.rotary_emb.inv_freq", DType: "F32", Shape: []int{8}, Data: inv})
		return append(ts, safetensors.Tensor{Name: LMHeadName, DType: ts[0].DType, Shape: ts[0].Shape, Data: ts[0].Data})
	})
	w, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mem, _ := SynthesizeAs(cfg, 1, "bf16")
	sameWeights(t, w, mem)
	if _, _, err := w.Get(LMHeadName); err == nil {
		t.Fatal("tied model exposes lm_head.weight")
	}
}

func TestLoadUntied(t *testing.T) {
	cfg, _ := Variant("qwen3-tiny")
	cfg.TieWordEmbeddings = false
	dir := t.TempDir()
	if err := WriteSynthetic(dir, cfg, 3, "f16", nil); err != nil {
		t.Fatal(err)
	}
	w, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	head, shape, err := w.Get(LMHeadName)
	if err != nil || shapeStr(shape) != "[512,64]" {
		t.Fatal(shape, err)
	}
	emb, _, _ := w.Get(EmbedName)
	if sameBits(head, emb) {
		t.Fatal("untied head equals the embedding")
	}
}

func TestNewWeights(t *testing.T) {
	cfg, _ := Variant("qwen3-tiny")
	data := map[string][]float32{}
	for _, s := range cfg.TensorSpecs() {
		data[s.Name] = make([]float32, s.Elems())
	}
	if _, err := NewWeights(cfg, data); err != nil {
		t.Fatal(err)
	}
	data[FinalNormName] = data[FinalNormName][:3]
	if _, err := NewWeights(cfg, data); err == nil || !strings.Contains(err.Error(), `tensor "model.norm.weight" has 3 values, shape [64] needs 64`) {
		t.Fatal(err)
	}
	delete(data, FinalNormName)
	if _, err := NewWeights(cfg, data); err == nil || !strings.Contains(err.Error(), "is missing") {
		t.Fatal(err)
	}
	data[FinalNormName] = make([]float32, 64)
	data["x.weight"] = nil
	if _, err := NewWeights(cfg, data); err == nil || !strings.Contains(err.Error(), `"x.weight" is not in the config`) {
		t.Fatal(err)
	}
}

func TestLoadWithProgress(t *testing.T) {
	cfg, _ := Variant("qwen3-tiny")
	dir := t.TempDir()
	if err := WriteSynthetic(dir, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	var last, calls int64
	var total int64
	w, err := LoadWithProgress(dir, func(done, tot int64) {
		if done < last || done > tot {
			t.Errorf("progress %d of %d after %d", done, tot, last)
		}
		last, total = done, tot
		calls++
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if last != total || total != cfg.ParamCount() || calls != int64(len(cfg.TensorSpecs())) {
		t.Errorf("progress ended at %d of %d after %d calls; want %d of %d, %d calls", last, total, calls, cfg.ParamCount(), cfg.ParamCount(), len(cfg.TensorSpecs()))
	}
}

// TestStack: a stack holds the parts' values end to end, the parts become
// views of it (one copy), stacking again returns the same buffer, and bad
// names are refused.
func TestStack(t *testing.T) {
	cfg, _ := Variant("qwen3-tiny")
	w := Synthesize(cfg, 3)
	names := []string{"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.v_proj.weight"}
	var want []float32
	for _, n := range names {
		d, _, err := w.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, d...)
	}
	got, err := w.Stack(names)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatal("stack differs from its parts end to end")
	}
	off := 0
	for _, n := range names {
		d, _, _ := w.Get(n)
		if &d[0] != &got[off] {
			t.Errorf("%s is not a view of the stack at %d", n, off)
		}
		if cap(d) != len(d) {
			t.Errorf("%s: a view with spare capacity %d (appending would write the next part)", n, cap(d)-len(d))
		}
		off += len(d)
	}
	again, err := w.Stack(names)
	if err != nil || &again[0] != &got[0] || len(again) != len(got) {
		t.Errorf("stacking again copied (err %v)", err)
	}
	if _, err := w.Stack([]string{names[0], "nope"}); err == nil || !strings.Contains(err.Error(), `no tensor "nope"`) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := w.Stack(nil); err == nil {
		t.Error("empty stack accepted")
	}
	w.Close()
	if _, err := w.Stack(names); err == nil {
		t.Error("stack after close accepted")
	}
}

// TestRelease: a released tensor refuses Get and Stack, naming it; its
// neighbours are untouched; releasing twice is fine; unknown names fail.
func TestRelease(t *testing.T) {
	cfg, _ := Variant("qwen3-tiny")
	w := Synthesize(cfg, 3)
	const name = "model.layers.1.mlp.up_proj.weight"
	if err := w.Release(name); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(name); err != nil {
		t.Errorf("second release: %v", err)
	}
	if _, _, err := w.Get(name); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "released") {
		t.Errorf("Get after release: %v", err)
	}
	if _, err := w.Stack([]string{"model.layers.1.mlp.gate_proj.weight", name}); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("Stack with a released part: %v", err)
	}
	if d, _, err := w.Get("model.layers.1.mlp.gate_proj.weight"); err != nil || len(d) == 0 {
		t.Errorf("a neighbour: %v", err)
	}
	if err := w.Release("nope"); err == nil {
		t.Error("release of an unknown tensor accepted")
	}
	if !slices.Contains(w.Names(), name) {
		t.Error("a released tensor left Names")
	}
}
