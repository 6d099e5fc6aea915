package models_test

import (
	"bytes"
	"io"
	"testing"

	"gelo/models"
	"gelo/models/gguf"
	"gelo/plan"
)

// FuzzLoadGGUF: any file that parses as GGUF either fails to load with an
// error or loads lazily, and every tensor then reads (dequantized a chunk
// at a time, before and after Private) without a panic.
func FuzzLoadGGUF(f *testing.F) {
	cfg, err := models.Variant(models.DefaultVariant)
	if err != nil {
		f.Fatal(err)
	}
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumHiddenLayers = 32, 64, 1
	cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim, cfg.VocabSize = 2, 1, 16, 32
	w, err := models.SynthesizeAs(cfg, 1, models.SynthDType)
	if err != nil {
		f.Fatal(err)
	}
	src := &models.Model{Source: models.Source{Spec: "fuzz"}, Weights: w}
	for _, format := range []string{"f32", "q8_0", "q4_0"} {
		var b bytes.Buffer
		if err := plan.ExportGGUF(src, plan.Tokenizer{}, format, &b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// In memory (Open's path with the file parsed from data, not
		// mapped: thousands of files written a second would measure the
		// disk's writeback, not the loader).
		file, err := gguf.Parse(data)
		if err != nil {
			return
		}
		cfg, err := models.GGUFConfig(file)
		if err != nil {
			return
		}
		w, _, err := models.LoadGGUF(file, cfg)
		if err != nil {
			return
		}
		m := &models.Model{Weights: w}
		defer m.Close()
		if m.TotalBytes() > 64<<20 {
			return
		}
		read := func() {
			for _, n := range m.Names() {
				r, _, err := m.Reader(n)
				if err != nil {
					t.Fatalf("%s: %v", n, err)
				}
				if _, err := io.Copy(io.Discard, r); err != nil {
					t.Fatalf("%s: a loaded tensor does not read: %v", n, err)
				}
			}
		}
		read()
		if err := m.Private(); err != nil {
			t.Fatalf("Private: %v", err)
		}
		read()
	})
}
