package models

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gelo/models/gguf"
)

// SynthDType is the dtype a built-in variant's synthetic weights are rounded
// through when they are generated in memory: what a checkpoint written by
// `gelo synth` (bf16 by default) loads as, so both give the same bits.
const SynthDType = "bf16"

// Source says where a model given as a spec ("a directory or a variant")
// comes from. Exactly one of Dir, GGUF, Builtin and Variant is set.
type Source struct {
	// Spec is the spec as given.
	Spec string
	// Dir is the Hugging Face directory (config.json + safetensors).
	Dir string
	// GGUF is a GGUF file (config, weights and tokenizer in one).
	GGUF string
	// Builtin is a checkpoint built into the binary (BuiltinModel), read
	// by the same loaders as a directory.
	Builtin string
	// Variant is the built-in variant whose weights are synthesized from
	// Seed, rounded through SynthDType.
	Variant    string
	Seed       uint64
	SynthDType string
}

// IsDir reports whether the model is a directory on disk.
func (s Source) IsDir() bool { return s.Dir != "" }

// Path is the model's file or directory on disk ("" for a variant or a
// built-in checkpoint).
func (s Source) Path() string {
	if s.GGUF != "" {
		return s.GGUF
	}
	return s.Dir
}

// Resolve reads only the config a spec names: a directory holding
// config.json, a GGUF file, a checkpoint built into the binary
// (BuiltinNames), else a built-in variant (seed and synthDType are
// recorded for a variant; synthDType "" means SynthDType). A directory
// on disk wins over a built-in name, as it does over a variant's.
func Resolve(spec string, seed uint64, synthDType string) (Source, *Config, error) {
	if st, err := os.Stat(spec); err == nil && st.IsDir() {
		cfg, err := ReadConfig(filepath.Join(spec, "config.json"))
		if err != nil {
			return Source{}, nil, err
		}
		return Source{Spec: spec, Dir: spec}, cfg, nil
	}
	if IsGGUF(spec) {
		f, err := OpenGGUF(spec)
		if err != nil {
			return Source{}, nil, err
		}
		defer f.Close()
		cfg, err := GGUFConfig(f)
		if err != nil {
			return Source{}, nil, fmt.Errorf("%s: %w", spec, err)
		}
		return Source{Spec: spec, GGUF: spec}, cfg, nil
	}
	if err := notAModelFile(spec); err != nil {
		return Source{}, nil, err
	}
	if _, ok := Builtin(spec); ok {
		cfg, err := builtinConfig(spec)
		if err != nil {
			return Source{}, nil, err
		}
		return Source{Spec: spec, Builtin: spec}, cfg, nil
	}
	cfg, err := Variant(spec)
	if err != nil {
		return Source{}, nil, fmt.Errorf("model %s: not a directory, a built-in model %v, and %w", spec, BuiltinNames(), err)
	}
	if synthDType == "" {
		synthDType = SynthDType
	}
	return Source{Spec: spec, Variant: spec, Seed: seed, SynthDType: synthDType}, cfg, nil
}

// Model is a loaded model: its weights (with their config) and their source.
type Model struct {
	Source
	*Weights
	// Notice says what loading converts (a GGUF file's tensors,
	// dequantized as they are read), "" when nothing is.
	Notice string
	// Tokenizer is a GGUF file's own tokenizer as OpenPrivate read it,
	// with the config and weights; nil otherwise.
	Tokenizer *EmbeddedTokenizer
}

// Open loads the model a spec names: a directory's checkpoint (progress,
// if not nil, as LoadWithProgress reports it), or a variant's synthetic
// weights from seed, rounded through SynthDType.
func Open(spec string, seed uint64, progress func(done, total int64)) (*Model, error) {
	return OpenAs(spec, seed, "", progress)
}

// OpenAs is Open with the synthetic dtype of a variant given ("" means
// SynthDType): a sealed plan records the one its weights were made with.
func OpenAs(spec string, seed uint64, synthDType string, progress func(done, total int64)) (*Model, error) {
	src, cfg, err := Resolve(spec, seed, synthDType)
	if err != nil {
		return nil, err
	}
	if src.GGUF != "" {
		f, err := OpenGGUF(src.GGUF)
		if err != nil {
			return nil, err
		}
		w, conv, err := LoadGGUF(f, cfg) // the weights close f
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.GGUF, err)
		}
		return &Model{Source: src, Weights: w, Notice: conv.String()}, nil
	}
	if src.IsDir() {
		w, err := LoadWithProgress(src.Dir, progress)
		if err != nil {
			return nil, err
		}
		return &Model{Source: src, Weights: w}, nil
	}
	if src.Builtin != "" {
		w, err := LoadBuiltin(src.Builtin, progress)
		if err != nil {
			return nil, err
		}
		return &Model{Source: src, Weights: w}, nil
	}
	w, err := SynthesizeAs(cfg, src.Seed, src.SynthDType)
	if err != nil {
		return nil, err
	}
	return &Model{Source: src, Weights: w}, nil
}

// notAModelFile names the real problem with a spec that is a path and is
// neither a directory nor a GGUF file: a file that is not GGUF (empty, or
// another magic), or a path that does not exist (a spec with a path
// separator or a .gguf suffix is never a variant name). It returns nil
// for a spec that may be a variant.
func notAModelFile(spec string) error {
	const takes = "--model takes a checkpoint directory (config.json + safetensors), a GGUF file, a built-in model or a built-in variant"
	st, err := os.Stat(spec)
	switch {
	case err == nil && st.Mode().IsRegular():
		head := make([]byte, 4)
		f, err := os.Open(spec)
		if err != nil {
			return fmt.Errorf("model %s: %w", spec, err)
		}
		n, _ := io.ReadFull(f, head)
		f.Close()
		if n == 0 {
			return fmt.Errorf("model %s: the file is empty (%s)", spec, takes)
		}
		return fmt.Errorf("model %s: not a GGUF file: it starts with %q, not the magic %q (%s)", spec, head[:n], gguf.Magic, takes)
	case err == nil:
		return fmt.Errorf("model %s: not a regular file (%s)", spec, takes)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("model %s: %w", spec, err)
	case strings.ContainsRune(spec, os.PathSeparator) || strings.HasSuffix(spec, ".gguf"):
		return fmt.Errorf("model %s: no such file or directory (%s)", spec, takes)
	}
	return nil
}
