package models

import (
	"fmt"
	"io/fs"
	"path"
	"sort"

	"gelo/models/safetensors"
	"gelo/models/trained"
)

// BuiltinModel is the trained model built into the binary (package
// models/trained): a checkpoint, not synthetic weights, so it writes text.
const BuiltinModel = trained.Name

// DefaultModel is the model a verb runs when --model is not given: the
// built-in trained one, so the first command a user types prints text.
// The synthetic variants (DefaultVariant) stay for width and speed work.
const DefaultModel = BuiltinModel

// builtins are the checkpoints built into the binary, by name: each an
// fs.FS holding config.json, model.safetensors and the tokenizer files at
// its root.
var builtins = map[string]fs.FS{trained.Name: trained.Files}

// Builtin returns the files of the built-in checkpoint name.
func Builtin(name string) (fs.FS, bool) {
	f, ok := builtins[name]
	return f, ok
}

// BuiltinNames lists the built-in checkpoints, sorted.
func BuiltinNames() []string {
	ns := make([]string, 0, len(builtins))
	for n := range builtins {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// BuiltinConfigBytes is a built-in checkpoint's config.json as embedded
// (what a model identity hashes, as it hashes a directory's file).
func BuiltinConfigBytes(name string) ([]byte, error) {
	fsys, err := builtinFS(name)
	if err != nil {
		return nil, err
	}
	b, err := fs.ReadFile(fsys, "config.json")
	if err != nil {
		return nil, fmt.Errorf("built-in model %s: config: %w", name, err)
	}
	return b, nil
}

// builtinConfig parses a built-in checkpoint's config.json.
func builtinConfig(name string) (*Config, error) {
	b, err := BuiltinConfigBytes(name)
	if err != nil {
		return nil, err
	}
	return ParseConfig(builtinPath(name, "config.json"), b)
}

// builtinFS is Builtin with the error that names the built-in models.
func builtinFS(name string) (fs.FS, error) {
	fsys, ok := Builtin(name)
	if !ok {
		return nil, fmt.Errorf("model %s: not a built-in model (built in: %v)", name, BuiltinNames())
	}
	return fsys, nil
}

// builtinPath names a built-in checkpoint's file in messages.
func builtinPath(name, file string) string { return path.Join(name, file) + " (built in)" }

// openBuiltin opens a built-in checkpoint's safetensors, checked as a
// directory's are.
func openBuiltin(name string) (*safetensors.Set, error) {
	fsys, err := builtinFS(name)
	if err != nil {
		return nil, err
	}
	set, err := safetensors.OpenModelFS(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("built-in model %s: %w", name, err)
	}
	return set, nil
}

// LoadBuiltin is LoadWithProgress for a built-in checkpoint: the same
// checks and the same lazy tensors, read from the binary.
func LoadBuiltin(name string, progress func(done, total int64)) (*Weights, error) {
	cfg, err := builtinConfig(name)
	if err != nil {
		return nil, err
	}
	set, err := openBuiltin(name)
	if err != nil {
		return nil, err
	}
	w, err := load(name, cfg, set, progress)
	if err != nil {
		_ = set.Close()
		return nil, err
	}
	return w, nil
}

// loadBuiltinPrivate is loadDirPrivate for a built-in checkpoint: every
// tensor read once and sealed piece by piece, as a directory's.
func loadBuiltinPrivate(name string, digests bool, progress func(done, total int64)) (*Weights, error) {
	cfg, err := builtinConfig(name)
	if err != nil {
		return nil, err
	}
	set, err := openBuiltin(name)
	if err != nil {
		return nil, err
	}
	w, err := sealSet(name, cfg, set, digests, progress)
	if err != nil {
		_ = set.Close()
		return nil, err
	}
	return w, nil
}
