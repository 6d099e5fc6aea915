package models_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gelo/models"
	"gelo/models/gguf"
	"gelo/models/safetensors"
	"gelo/plan"
)

// privateSource is a model on disk in one format, with a second model of
// the same shapes to overwrite it with: path is what --model names, file
// the file its weights are in, a and b the two files' bytes.
type privateSource struct {
	name       string
	path, file string
	a, b       []byte
}

// le is v as little-endian float32 bytes (bit-exact comparison).
func le(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// privateSources writes qwen3-tiny as an f32 and a bf16 checkpoint and as
// f32 and q8_0 GGUF files (seed 1), each with its seed-2 twin's bytes.
func privateSources(t *testing.T) []privateSource {
	t.Helper()
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	var out []privateSource
	for _, dt := range []string{"f32", "bf16"} {
		var files [2][]byte
		dir := filepath.Join(t.TempDir(), dt)
		for i, seed := range []uint64{2, 1} { // the seed-1 files stay
			if err := models.WriteSynthetic(dir, cfg, seed, dt, nil); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, safetensors.SingleFile))
			if err != nil {
				t.Fatal(err)
			}
			files[1-i] = b
		}
		out = append(out, privateSource{name: dt + "-dir", path: dir, file: filepath.Join(dir, safetensors.SingleFile), a: files[0], b: files[1]})
	}
	for _, format := range []string{"f32", "q8_0"} {
		var files [2][]byte
		for i, seed := range []uint64{1, 2} {
			w, err := models.SynthesizeAs(cfg, seed, models.SynthDType)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := plan.ExportGGUF(&models.Model{Source: models.Source{Spec: "tiny"}, Weights: w}, plan.Tokenizer{}, format, &buf); err != nil {
				t.Fatal(err)
			}
			files[i] = buf.Bytes()
		}
		path := filepath.Join(t.TempDir(), format+".gguf")
		out = append(out, privateSource{name: format + "-gguf", path: path, file: path, a: files[0], b: files[1]})
	}
	return out
}

// put writes b to the source's file in place (same inode, as a copy over
// it or an editor's save does) dated an hour back, so that a write during
// a load always moves its modification time.
func (s privateSource) put(t *testing.T, b []byte) {
	t.Helper()
	if err := os.WriteFile(s.file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(s.file, old, old); err != nil {
		t.Fatal(err)
	}
}

// values reads every tensor of the model at path, eagerly.
func values(t *testing.T, path string) map[string][]byte {
	t.Helper()
	m, err := models.OpenPrivate(path, 0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	out := map[string][]byte{}
	for _, n := range m.Names() {
		v, _, err := m.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = le(v)
	}
	return out
}

// TestOpenPrivateFileChangesAfterLoad: once OpenPrivate returns, the file
// overwritten in place by another model of the same shapes, then
// truncated, changes no value: a tensor read before keeps its values, any
// other read fails naming the file and the tensor (before the fix an f32
// checkpoint's tensors were views of the mapping: they showed the second
// model, and a truncation was a SIGBUS).
func TestOpenPrivateFileChangesAfterLoad(t *testing.T) {
	for _, src := range privateSources(t) {
		t.Run(src.name, func(t *testing.T) {
			src.put(t, src.b)
			other := values(t, src.path)
			src.put(t, src.a)
			want := values(t, src.path)
			m, err := models.OpenPrivate(src.path, 0, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			resident := map[string]bool{}
			for i, n := range m.Names() {
				if i%2 == 0 {
					if _, _, err := m.Get(n); err != nil {
						t.Fatal(err)
					}
					resident[n] = true
				}
			}
			for _, change := range []struct {
				what string
				data []byte
			}{{"overwritten", src.b}, {"truncated", src.a[:len(src.a)/2]}} {
				src.put(t, change.data)
				for _, n := range m.Names() {
					v, _, err := m.Get(n)
					switch {
					case err != nil && resident[n]:
						t.Fatalf("file %s: %s, read before, fails: %v", change.what, n, err)
					case err != nil:
						if !strings.Contains(err.Error(), src.file) || !strings.Contains(err.Error(), n) || !strings.Contains(err.Error(), "changed after it was checked") {
							t.Fatalf("file %s: reading %s fails without naming the file, the tensor and why: %v", change.what, n, err)
						}
					case bytes.Equal(le(v), other[n]) && !bytes.Equal(other[n], want[n]):
						t.Fatalf("file %s: %s reads the second model's values", change.what, n)
					case !bytes.Equal(le(v), want[n]):
						t.Fatalf("file %s: %s reads values the identity never saw", change.what, n)
					}
				}
			}
		})
	}
}

// TestOpenPrivateFileChangesDuringLoad: a file overwritten in place or
// truncated after the first tensor was read (a hook, not a timed race)
// is refused with an error naming it; replaced by rename, it leaves the
// load unaffected (the open file is the one read throughout).
func TestOpenPrivateFileChangesDuringLoad(t *testing.T) {
	for _, src := range privateSources(t) {
		t.Run(src.name, func(t *testing.T) {
			src.put(t, src.a)
			want := values(t, src.path)
			for _, tc := range []struct {
				what   string
				change func()
				refuse bool
			}{
				{"overwritten", func() { src.put(t, src.b) }, true},
				{"truncated", func() { src.put(t, src.a[:len(src.a)*2/3]) }, true},
				{"replaced by rename", func() {
					tmp := src.file + ".new"
					if err := os.WriteFile(tmp, src.b, 0o644); err != nil {
						t.Error(err)
					}
					if err := os.Rename(tmp, src.file); err != nil {
						t.Error(err)
					}
				}, false},
			} {
				src.put(t, src.a)
				hooked := 0
				restore := models.SetSealedHook(func(path string) {
					hooked++
					if path == src.file {
						tc.change()
					}
				})
				m, err := models.OpenPrivate(src.path, 0, "", nil)
				restore()
				if hooked != 1 {
					t.Fatalf("%s: the hook ran %d times", tc.what, hooked)
				}
				if tc.refuse {
					if err == nil {
						m.Close()
						t.Fatalf("a file %s while it loads was accepted", tc.what)
					}
					if !strings.Contains(err.Error(), src.file) {
						t.Fatalf("a file %s while it loads: the error does not name it: %v", tc.what, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("a file %s while it loads: %v", tc.what, err)
				}
				for _, n := range m.Names() {
					v, _, err := m.Get(n)
					if err != nil || !bytes.Equal(le(v), want[n]) {
						m.Close()
						t.Fatalf("a file %s while it loads: %s differs from the file opened (err %v)", tc.what, n, err)
					}
				}
				m.Close()
			}
		})
	}
}

// TestGGUFHalfHoldingF32: a tensor labelled F16 or BF16 whose bytes are
// float32 values is refused, naming it: values rounded to bf16 (zero low
// halves) by the pattern their halves make, random ones by the NaN or Inf
// their low halves decode to, with what the label may hide.
func TestGGUFHalfHoldingF32(t *testing.T) {
	cfg, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, err := models.SynthesizeAs(cfg, 1, models.SynthDType)
	if err != nil {
		t.Fatal(err)
	}
	const name = "model.layers.1.mlp.down_proj.weight"
	for _, format := range []string{"f16", "bf16"} {
		var buf bytes.Buffer
		if err := plan.ExportGGUF(&models.Model{Source: models.Source{Spec: "tiny"}, Weights: w}, plan.Tokenizer{}, format, &buf); err != nil {
			t.Fatal(err)
		}
		good := buf.Bytes()
		f, err := gguf.Parse(good)
		if err != nil {
			t.Fatal(err)
		}
		ti, ok := f.Tensor(models.GGUFName(name))
		if !ok {
			t.Fatal("no down_proj tensor")
		}
		off, size := f.FileOffset(ti), ti.Size
		for _, tc := range []struct {
			what    string
			rounded bool
			want    string
		}{
			{"bf16-rounded", true, "even-indexed values are 0"},
			{"random", false, "holding F32 bytes reads as such"},
		} {
			b := slices.Clone(good)
			v, _, err := w.Get(name) // bf16-rounded already (SynthDType)
			if err != nil {
				t.Fatal(err)
			}
			for i := range int(size) / 4 {
				x := math.Float32bits(v[i%len(v)])
				if !tc.rounded {
					x ^= uint32(i*2654435761) & 0xffff // a mantissa's low half
				}
				binary.LittleEndian.PutUint32(b[off+int64(4*i):], x)
			}
			path := filepath.Join(t.TempDir(), format+".gguf")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, open := range []func() (*models.Model, error){
				func() (*models.Model, error) { return models.Open(path, 0, nil) },
				func() (*models.Model, error) { return models.OpenPrivate(path, 0, "", nil) },
			} {
				m, err := open()
				if err == nil {
					m.Close()
					t.Fatalf("%s: %s F32 values labelled %s loaded", format, tc.what, format)
				}
				if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s: %s F32 values: %v; want it to name %s and say %q", format, tc.what, err, name, tc.want)
				}
			}
		}
		path := filepath.Join(t.TempDir(), "good.gguf")
		if err := os.WriteFile(path, good, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := models.OpenPrivate(path, 0, "", nil)
		if err != nil {
			t.Fatalf("the %s file as exported: %v", format, err)
		}
		m.Close()
	}
}
