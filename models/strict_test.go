package models_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gelo/models"
)

// TestStrictConfig: trailing data, duplicate keys and out-of-range token
// ids are refused, naming the field.
func TestStrictConfig(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	good := cfg.JSON()
	if _, err := models.ParseConfig("c", good); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ data, want string }{
		{string(good) + "garbage", "data after the top-level value"},
		{string(good) + `{"x": 1}`, "data after the top-level value"},
		{strings.Replace(string(good), `"hidden_size": 64,`, `"hidden_size": 64, "hidden_size": 128,`, 1), `key "hidden_size" appears twice in the top-level object`},
		{strings.Replace(string(good), `"bos_token_id": 1,`, `"bos_token_id": -5,`, 1), "field bos_token_id: -5 is outside the vocabulary"},
		{strings.Replace(string(good), `"eos_token_id": 2,`, `"eos_token_id": [2, 99999999],`, 1), "field eos_token_id: 99999999 is outside"},
		{`{"a": {"b": 1, "b": 2}}`, `key "b" appears twice in a`},
		{strings.Repeat("[", 100) + strings.Repeat("]", 100), "nested deeper than 64"},
	} {
		if tc.data == string(good) {
			t.Fatalf("edit for %q did not apply", tc.want)
		}
		if _, err := models.ParseConfig("c.json", []byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "c.json") {
			t.Errorf("%q: %v", tc.want, err)
		}
	}
}

// TestLoadCrossChecks: 16-bit tensors whose dtype contradicts torch_dtype,
// and non-finite weights, are refused at load, naming the tensor.
func TestLoadCrossChecks(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	dir := filepath.Join(t.TempDir(), "m")
	if err := models.WriteSynthetic(dir, cfg, 1, "f16", nil); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	raw, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, []byte(strings.Replace(string(raw), `"torch_dtype": "float16"`, `"torch_dtype": "bfloat16"`, 1)), 0o644)
	if _, err := models.Load(dir); err == nil || !strings.Contains(err.Error(), "is F16 but config.json's torch_dtype is bfloat16") {
		t.Fatalf("F16 tensors under torch_dtype bfloat16: %v", err)
	}

	dir = filepath.Join(t.TempDir(), "n")
	if err := models.WriteSynthetic(dir, cfg, 1, "f32", nil); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(dir, "model.safetensors")
	data, _ := os.ReadFile(st)
	n := binary.LittleEndian.Uint64(data[:8])
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var info struct {
		Offsets [2]int64 `json:"data_offsets"`
	}
	name := models.FinalNormName
	json.Unmarshal(hdr[name], &info)
	binary.LittleEndian.PutUint32(data[8+int64(n)+info.Offsets[0]+4:], math.Float32bits(float32(math.NaN())))
	os.WriteFile(st, data, 0o644)
	if _, err := models.Load(dir); err == nil || !strings.Contains(err.Error(), `tensor "`+name+`": element 1 is NaN`) {
		t.Fatalf("a NaN weight: %v", err)
	}
}

// TestPrivateWeights: f32 weights alias the mapped file (a rewrite in
// place shows through) until Private; after it the file can change
// without changing them: a tensor made resident keeps its values and a
// read of any other fails, naming it.
func TestPrivateWeights(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	dir := filepath.Join(t.TempDir(), "m")
	if err := models.WriteSynthetic(dir, cfg, 1, "f32", nil); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(dir, "model.safetensors")
	overwrite := func() {
		data, _ := os.ReadFile(st)
		n := binary.LittleEndian.Uint64(data[:8])
		f, err := os.OpenFile(st, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// Every data byte rewritten in place (same inode, same mapping).
		zeros := make([]byte, len(data)-8-int(n))
		if _, err := f.WriteAt(zeros, int64(8+n)); err != nil {
			t.Fatal(err)
		}
	}
	sumOf := func(w *models.Weights, name string) (float64, error) {
		v, _, err := w.Get(name)
		s := 0.0
		for _, x := range v {
			s += float64(x)
		}
		return s, err
	}
	sum := func(w *models.Weights) float64 {
		s, err := sumOf(w, models.FinalNormName)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	w, err := models.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := models.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	before := sum(w)
	if err := w.Private(); err != nil {
		t.Fatal(err)
	}
	if got := sum(w); got != before { // resident now, in memory of its own
		t.Fatalf("private weights differ from the file's: %v -> %v", before, got)
	}
	const other = "model.layers.0.input_layernorm.weight"
	overwrite()
	if got := sum(w); got != before {
		t.Fatalf("private weights changed with the file: %v -> %v", before, got)
	}
	if _, err := sumOf(w, other); err == nil || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), "changed after it was checked") {
		t.Fatalf("a tensor read after the file changed under Private: %v", err)
	}
	// The control: the mapped copy shows the rewrite.
	if got := sum(shared); got == before {
		t.Fatalf("the mapped weights did not change with the file (sum %v): the test proves nothing", got)
	}
	w.Close()
}
