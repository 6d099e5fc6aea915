package models_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gelo/models"
	"gelo/models/safetensors"
	"gelo/models/trained"
)

// trainedDir is the directory the built-in model is embedded from.
const trainedDir = "trained"

// TestBuiltinFilesAreTheDirectory: the embedded files are byte for byte
// the committed ones in models/trained.
func TestBuiltinFilesAreTheDirectory(t *testing.T) {
	fsys, ok := models.Builtin(models.BuiltinModel)
	if !ok {
		t.Fatalf("Builtin(%q): not found (built in: %v)", models.BuiltinModel, models.BuiltinNames())
	}
	for _, name := range trained.FileNames {
		got, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(trainedDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("embedded %s (%d bytes) differs from %s (%d bytes)", name, len(got), filepath.Join(trainedDir, name), len(want))
		}
	}
}

// TestBuiltinLoadsAsTheDirectory: every way of opening the built-in
// model (lazy, and private with and without the identity's digests) gives
// the config and the tensors, bit for bit, that the same way of opening
// models/trained from disk gives, with the same F32Digest.
func TestBuiltinLoadsAsTheDirectory(t *testing.T) {
	opens := []struct {
		name string
		open func(spec string) (*models.Model, error)
	}{
		{"Open", func(spec string) (*models.Model, error) { return models.Open(spec, 1, nil) }},
		{"OpenPrivate", func(spec string) (*models.Model, error) { return models.OpenPrivate(spec, 1, "", nil) }},
		{"OpenPrivateUnhashed", func(spec string) (*models.Model, error) { return models.OpenPrivateUnhashed(spec, 1, "", nil) }},
	}
	for _, o := range opens {
		t.Run(o.name, func(t *testing.T) {
			b, err := o.open(models.BuiltinModel)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			d, err := o.open(trainedDir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if b.Builtin != models.BuiltinModel || b.IsDir() || b.Variant != "" || b.Path() != "" {
				t.Errorf("source %+v: want the built-in %s, no directory, variant or path", b.Source, models.BuiltinModel)
			}
			if !bytes.Equal(b.Config.JSON(), d.Config.JSON()) {
				t.Errorf("config differs:\n%s\nvs the directory's\n%s", b.Config.JSON(), d.Config.JSON())
			}
			sameWeights(t, b.Weights, d.Weights)
		})
	}
}

// sameWeights checks a and b hold the same tensors, bit for bit, with the
// same F32Digest (or neither has one).
func sameWeights(t *testing.T, a, b *models.Weights) {
	t.Helper()
	if !slices.Equal(a.Names(), b.Names()) {
		t.Fatalf("tensor names differ: %v vs %v", a.Names(), b.Names())
	}
	for _, n := range a.Names() {
		va, sa, err := a.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		vb, sb, err := b.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sa, sb) || !bytes.Equal(le(va), le(vb)) {
			t.Errorf("tensor %s differs (shapes %v, %v)", n, sa, sb)
		}
		da, na, oka := a.F32Digest(n)
		db, nb, okb := b.F32Digest(n)
		if da != db || na != nb || oka != okb {
			t.Errorf("tensor %s: F32Digest %x/%d/%v vs %x/%d/%v", n, da[:4], na, oka, db[:4], nb, okb)
		}
	}
}

// TestBuiltinPrivateReadsTheBinary: Private on the lazily loaded built-in
// model seals the embedded file, never a file of the same name in the
// working directory (it reopened files by path with os.Open, which here
// would read the impostor, a different model).
func TestBuiltinPrivateReadsTheBinary(t *testing.T) {
	want, err := models.Open(trainedDir, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	cfg, err := models.ReadConfig(filepath.Join(trainedDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	impostor := t.TempDir()
	if err := models.WriteSynthetic(impostor, cfg, 7, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	t.Chdir(impostor) // holds config.json and model.safetensors of another model
	m, err := models.Open(models.BuiltinModel, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Private(); err != nil {
		t.Fatal(err)
	}
	sameWeights(t, m.Weights, want.Weights)
}

// TestOpenModelFSErrors: a malformed built-in checkpoint is refused as a
// directory's is, naming the file in the file system.
func TestOpenModelFSErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"empty", map[string][]byte{}, "neither model.safetensors nor model.safetensors.index.json is present"},
		{"short", map[string][]byte{"model.safetensors": {1, 2, 3}}, "safetensors model.safetensors: file is 3 bytes"},
		{"truncated", map[string][]byte{"model.safetensors": truncatedSafetensors(t)}, "truncated file?"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, b := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			set, err := safetensors.OpenModelFS(os.DirFS(dir), ".")
			if err == nil {
				set.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// truncatedSafetensors is the built-in model's file cut short.
func truncatedSafetensors(t *testing.T) []byte {
	b, err := os.ReadFile(filepath.Join(trainedDir, safetensors.SingleFile))
	if err != nil {
		t.Fatal(err)
	}
	return b[:len(b)/2]
}
