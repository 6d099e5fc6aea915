package models

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gelo/models/safetensors"
)

// f32LE is v as little-endian float32 bytes.
func f32LE(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// eagerCopy holds every tensor of w resident, copied: the reference a lazy
// read must match bit for bit.
func eagerCopy(t *testing.T, w *Weights) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for _, n := range w.Names() {
		v, _, err := w.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = append([]float32(nil), v...)
	}
	return out
}

// checkLazy: nothing is resident before its first Get; ReadRows over
// ranges that cut synthesis blocks and file chunks, Reader's bytes and a
// released tensor read again from its source all give the eager values.
func checkLazy(t *testing.T, open func() *Weights) {
	t.Helper()
	want := eagerCopy(t, open())
	w := open()
	defer w.Close()
	for _, n := range w.Names() {
		if res, _, err := w.Shape(n); err != nil || res {
			t.Fatalf("%s: resident %v before any Get (err %v)", n, res, err)
		}
	}
	const emb = EmbedName
	_, shape, _ := w.Shape(emb)
	rows, cols := shape[0], shape[1]
	// Ranges inside a block, across block boundaries (synthBlock values
	// is synthBlock/cols rows) and to the end.
	per := max(1, synthBlock/cols)
	for _, r := range [][2]int{{0, 1}, {per - 1, per + 2}, {3, 2*per + 5}, {rows - 7, rows}, {0, rows}} {
		lo, hi := min(max(r[0], 0), rows-1), min(r[1], rows)
		got := make([]float32, (hi-lo)*cols)
		if err := w.ReadRows(emb, lo, hi, got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f32LE(got), f32LE(want[emb][lo*cols:hi*cols])) {
			t.Fatalf("ReadRows(%s, %d, %d) differs from Get", emb, lo, hi)
		}
	}
	if res, _, _ := w.Shape(emb); res {
		t.Error("ReadRows made the tensor resident")
	}
	for _, n := range w.Names() {
		r, _, err := w.Reader(n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f32LE(want[n])) {
			t.Fatalf("Reader(%s): %d bytes differ from Get's %d", n, len(got), 4*len(want[n]))
		}
		if k, err := r.Read(make([]byte, 8)); k != 0 || err != io.EOF {
			t.Fatalf("Reader(%s) read again after EOF: %d bytes, %v", n, k, err)
		}
	}
	const up = "model.layers.1.mlp.up_proj.weight"
	if err := w.Release(up); err != nil {
		t.Fatal(err)
	}
	r, _, err := w.Reader(up)
	if err != nil {
		t.Fatalf("Reader after release: %v", err)
	}
	if got, _ := io.ReadAll(r); !bytes.Equal(got, f32LE(want[up])) {
		t.Error("a released tensor read from its source differs")
	}
	// A stack of lazy parts is produced in place, the parts then views.
	names := []string{"model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"}
	buf, err := w.Stack(names)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f32LE(buf), f32LE(append(append([]float32(nil), want[names[0]]...), want[names[1]]...))) {
		t.Error("the stack of lazy parts differs")
	}
	if err := w.ReadRows(emb, 2, 1, nil); err == nil {
		t.Error("ReadRows of a reversed range accepted")
	}
	if err := w.ReadRows(emb, 0, 2, make([]float32, cols)); err == nil {
		t.Error("ReadRows into a short dst accepted")
	}
}

// wideVocab is qwen3-tiny with a vocabulary of 8200: its embedding is 9
// synthesis blocks (the last one partial) and three Reader chunks, so ranges cut both.
func wideVocab() *Config {
	cfg, _ := Variant("qwen3-tiny")
	cfg.VocabSize = 8200
	return cfg
}

func TestLazySynthetic(t *testing.T) {
	cfg := wideVocab()
	if cfg.VocabSize*cfg.HiddenSize <= 2*readChunk || cfg.VocabSize*cfg.HiddenSize <= 4*synthBlock {
		t.Fatal("the embedding no longer spans several blocks and chunks")
	}
	checkLazy(t, func() *Weights {
		w, err := SynthesizeAs(cfg, 7, "bf16")
		if err != nil {
			t.Fatal(err)
		}
		return w
	})
}

func TestLazyCheckpoint(t *testing.T) {
	for _, dt := range []string{"bf16", "f16"} {
		t.Run(dt, func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteSynthetic(dir, wideVocab(), 1, dt, nil); err != nil {
				t.Fatal(err)
			}
			checkLazy(t, func() *Weights {
				w, err := Load(dir)
				if err != nil {
					t.Fatal(err)
				}
				return w
			})
		})
	}
}

// TestPrivateSeals: after Private a checkpoint's tensors read the file
// through digests taken then (the mapping is closed, no copy of the model
// is kept): the same values while the file is unchanged; once it changes,
// a tensor made resident before keeps its values and every other read
// fails, naming the tensor; a tensor released before Private, or after
// it, is no longer readable.
func TestPrivateSeals(t *testing.T) {
	for _, dt := range []string{"bf16", "f16", "f32"} {
		t.Run(dt, func(t *testing.T) {
			dir, _ := tinyDir(t, dt)
			ref, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := eagerCopy(t, ref)
			ref.Close()
			w, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			const up = "model.layers.1.mlp.up_proj.weight"
			if err := w.Release(up); err != nil {
				t.Fatal(err)
			}
			if err := w.Private(); err != nil {
				t.Fatal(err)
			}
			if err := w.Private(); err != nil { // twice is fine
				t.Fatal(err)
			}
			resident := map[string]bool{}
			for i, n := range w.Names() {
				if n == up {
					continue
				}
				_, sh, _ := w.Shape(n)
				row := make([]float32, sh[len(sh)-1])
				if err := w.ReadRows(n, 0, 1, row); err != nil || !slices.Equal(f32LE(row), f32LE(want[n][:len(row)])) {
					t.Fatalf("%s: its first row after Private differs (err %v)", n, err)
				}
				if i%2 == 0 {
					v, _, err := w.Get(n)
					if err != nil || !slices.Equal(f32LE(v), f32LE(want[n])) {
						t.Fatalf("%s after Private differs (err %v)", n, err)
					}
					resident[n] = true
				}
			}
			// Flip one byte of every tensor's data in place (the header
			// stays valid), then truncate: both are caught.
			path := filepath.Join(dir, safetensors.SingleFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := safetensors.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range w.Names() {
				_, off, size, _, err := f.Where(n)
				if err != nil {
					t.Fatal(err)
				}
				b[off+size/2] ^= 1
			}
			f.Close()
			for _, content := range [][]byte{b, nil} {
				if err := os.WriteFile(path, content, 0o644); err != nil {
					t.Fatal(err)
				}
				for _, n := range w.Names() {
					v, _, err := w.Get(n)
					switch {
					case n == up:
						if err == nil {
							t.Fatal("a tensor released before Private still reads")
						}
					case resident[n]:
						if err != nil || !slices.Equal(f32LE(v), f32LE(want[n])) {
							t.Fatalf("%s, resident, after the file changed: err %v", n, err)
						}
					case err == nil || !strings.Contains(err.Error(), n) || !strings.Contains(err.Error(), "changed after it was checked"):
						t.Fatalf("%s read after the file changed under Private: %v", n, err)
					}
				}
			}
			// Released after Private, a tensor is unreadable.
			if err := w.Release(EmbedName); err != nil {
				t.Fatal(err)
			}
			if err := w.ReadRows(EmbedName, 0, 1, make([]float32, w.Config.HiddenSize)); err == nil {
				t.Error("a tensor released after Private still reads")
			}
		})
	}
}

// TestPrivateFileGone: a checkpoint whose file is gone by the time
// Private seals it is refused with an error naming the file, not read
// from what the mapping still shows.
func TestPrivateFileGone(t *testing.T) {
	dir, _ := tinyDir(t, "bf16")
	w, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	path := filepath.Join(dir, safetensors.SingleFile)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := w.Private(); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Private of a removed file: %v", err)
	}
}
