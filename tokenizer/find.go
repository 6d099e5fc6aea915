package tokenizer

import (
	"os"
	"path/filepath"
)

// SharedQwen3Dir finds the Qwen3 tokenizer files the tests and the attack
// corpus use: $GELO_TOKENIZER_DIR, or shared/tokenizers/qwen3 in the working
// directory or any parent of it (the repository root's sibling ../shared is
// the usual place); "" when there is none.
func SharedQwen3Dir() string {
	if d := os.Getenv("GELO_TOKENIZER_DIR"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "tokenizer.json")); err != nil {
			return ""
		}
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		d := filepath.Join(dir, "shared", "tokenizers", "qwen3")
		if _, err := os.Stat(filepath.Join(d, "tokenizer.json")); err == nil {
			return d
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
