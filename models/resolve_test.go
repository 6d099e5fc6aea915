package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolveNamesTheProblem: a spec that is a file but not GGUF (empty,
// another magic), or a path that does not exist, is reported as such, not
// as "not a directory, and unknown variant"; a bare unknown name still
// lists the variants.
func TestResolveNamesTheProblem(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.gguf")
	bad := filepath.Join(dir, "bad.gguf")
	os.WriteFile(empty, nil, 0o644)
	os.WriteFile(bad, []byte("GGUX and more"), 0o644)
	for _, tc := range []struct{ spec, want string }{
		{empty, "the file is empty"},
		{bad, `not a GGUF file: it starts with "GGUX", not the magic "GGUF"`},
		{filepath.Join(dir, "gone.gguf"), "no such file or directory"},
		{"gone.gguf", "no such file or directory"},
		{"qwen3-huge", `unknown variant "qwen3-huge"`},
	} {
		_, _, err := Resolve(tc.spec, 1, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.spec) {
			t.Errorf("Resolve(%q): %v; want %q naming the spec", tc.spec, err, tc.want)
		}
		if tc.want != `unknown variant "qwen3-huge"` && strings.Contains(err.Error(), "unknown variant") {
			t.Errorf("Resolve(%q) blames a variant name: %v", tc.spec, err)
		}
	}
}
