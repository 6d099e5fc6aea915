package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gelo/models"
	"gelo/tokenizer"
)

// TokenizerConfigFileName is the tokenizer configuration read beside a
// tokenizer file (chat template, special tokens), when present.
const TokenizerConfigFileName = "tokenizer_config.json"

// Tokenizer is a tokenizer as the identity binds it: the file it came
// from, its bytes (what the identity hashes) and the tokenizer parsed from
// those same bytes (what encodes), so the two cannot differ.
type Tokenizer struct {
	// Path is the tokenizer file ("" when there is none).
	Path string
	// Bytes is the file's content; nil when there is none.
	Bytes []byte
	// Tok is parsed from Bytes (and the sibling tokenizer_config.json);
	// nil when there is none.
	Tok *tokenizer.Tokenizer
}

// LoadTokenizer resolves and parses the tokenizer: path (a file, used as
// named, or a directory holding tokenizer.json), else modelDir's
// tokenizer.json when it has one (or, when modelDir is a GGUF file, the
// tokenizer it carries), else none (a zero Tokenizer). A file
// that does not parse as a tokenizer is an error naming it, so nothing
// that is not a tokenizer is ever sealed into an identity.
func LoadTokenizer(path, modelDir string) (Tokenizer, error) {
	if file, ok := strings.CutSuffix(path, ggufTokenizerSuffix); ok && models.IsGGUF(file) {
		return ggufTokenizer(file) // the name a sealed plan records for a GGUF file's tokenizer
	}
	if name, ok := strings.CutSuffix(path, ggufTokenizerSuffix); ok {
		if _, builtin := models.Builtin(name); builtin {
			return builtinTokenizer(name) // the name a sealed plan records for a built-in model's
		}
	}
	if path != "" {
		st, err := os.Stat(path)
		if err != nil {
			return Tokenizer{}, fmt.Errorf("tokenizer: %w", err)
		}
		if st.IsDir() {
			path = filepath.Join(path, TokenizerFileName)
		}
	} else if modelDir != "" && models.IsGGUF(modelDir) {
		return ggufTokenizer(modelDir)
	} else if modelDir != "" {
		path = filepath.Join(modelDir, TokenizerFileName)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return Tokenizer{}, nil
		}
	} else {
		return Tokenizer{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Tokenizer{}, fmt.Errorf("tokenizer: %w", err)
	}
	cfgPath := filepath.Join(filepath.Dir(path), TokenizerConfigFileName)
	cfg, err := os.ReadFile(cfgPath)
	if errors.Is(err, fs.ErrNotExist) {
		cfg, cfgPath, err = nil, "", nil
	}
	if err != nil {
		return Tokenizer{}, fmt.Errorf("tokenizer: %w", err)
	}
	tok, err := tokenizer.Parse(data, cfg, path, cfgPath)
	if err != nil {
		return Tokenizer{}, fmt.Errorf("%s is not a usable tokenizer: %w", path, err)
	}
	if data == nil {
		data = []byte{}
	}
	return Tokenizer{Path: path, Bytes: data, Tok: tok}, nil
}

// ModelTokenizer is LoadTokenizer for a loaded model: a built-in model's
// own when path is ""; when path is "" or
// names the GGUF file's own tokenizer (FILE#tokenizer) and m carries the
// tokenizer it read with its weights (models.OpenPrivate), that one is
// parsed, so config, weights and tokenizer come from one reading of the
// file; otherwise LoadTokenizer(path, m.Path()).
func ModelTokenizer(path string, m *models.Model) (Tokenizer, error) {
	if m != nil && m.Builtin != "" && path == "" {
		return builtinTokenizer(m.Builtin)
	}
	if m == nil || m.GGUF == "" || m.Tokenizer == nil || (path != "" && path != m.GGUF+ggufTokenizerSuffix) {
		var dir string
		if m != nil {
			dir = m.Path()
		}
		return LoadTokenizer(path, dir)
	}
	if m.Tokenizer.Err != nil {
		return Tokenizer{}, fmt.Errorf("%s: %w", m.GGUF, m.Tokenizer.Err)
	}
	if m.Tokenizer.JSON == nil {
		return Tokenizer{}, nil
	}
	return parseGGUFTokenizer(m.GGUF, m.Tokenizer.JSON, m.Tokenizer.Config)
}

// ggufTokenizerSuffix names the tokenizer inside a GGUF file (and inside
// a built-in model).
const ggufTokenizerSuffix = "#tokenizer"

// ggufTokenizer is the tokenizer a GGUF file carries, as the tokenizer.json
// it amounts to (models.GGUFTokenizer): those bytes are what an identity
// would hash and what encodes. A file without one has none.
func ggufTokenizer(path string) (Tokenizer, error) {
	f, err := models.OpenGGUF(path)
	if err != nil {
		return Tokenizer{}, err
	}
	defer f.Close()
	tj, cj, err := models.GGUFTokenizer(f)
	if err != nil || tj == nil {
		return Tokenizer{}, err
	}
	return parseGGUFTokenizer(path, tj, cj)
}

// parseGGUFTokenizer parses the tokenizer.json and tokenizer_config.json a
// GGUF file's tokenizer amounts to.
func parseGGUFTokenizer(path string, tj, cj []byte) (Tokenizer, error) {
	name := path + ggufTokenizerSuffix
	tok, err := tokenizer.Parse(tj, cj, name, name+"_config")
	if err != nil {
		return Tokenizer{}, fmt.Errorf("%s: its tokenizer is not usable: %w", path, err)
	}
	return Tokenizer{Path: name, Bytes: tj, Tok: tok}, nil
}

// builtinTokenizer is the tokenizer of a checkpoint built into the binary
// (models.Builtin): its embedded tokenizer.json and tokenizer_config.json,
// parsed by the same code as a directory's, named NAME#tokenizer (what a
// sealed plan records, and LoadTokenizer reads back).
func builtinTokenizer(name string) (Tokenizer, error) {
	fsys, ok := models.Builtin(name)
	if !ok {
		return Tokenizer{}, fmt.Errorf("tokenizer: %s is not a built-in model", name)
	}
	label := name + ggufTokenizerSuffix
	data, err := fs.ReadFile(fsys, TokenizerFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return Tokenizer{}, nil
	}
	if err != nil {
		return Tokenizer{}, fmt.Errorf("tokenizer %s: %w", label, err)
	}
	cfg, err := fs.ReadFile(fsys, TokenizerConfigFileName)
	cfgLabel := label + "_config"
	if errors.Is(err, fs.ErrNotExist) {
		cfg, cfgLabel, err = nil, "", nil
	}
	if err != nil {
		return Tokenizer{}, fmt.Errorf("tokenizer %s: %w", cfgLabel, err)
	}
	tok, err := tokenizer.Parse(data, cfg, label, cfgLabel)
	if err != nil {
		return Tokenizer{}, fmt.Errorf("%s is not a usable tokenizer: %w", label, err)
	}
	return Tokenizer{Path: label, Bytes: data, Tok: tok}, nil
}
