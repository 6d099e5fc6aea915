package plan_test

import (
	"os"
	"path/filepath"
	"testing"

	"gelo/models"
	"gelo/plan"
)

// TestIdentityFromLoaderDigests: the identity of a model loaded with
// OpenPrivate, whose tensors' digests the loader took as it read them, is
// the identity of the same files read back through Reader (models.Open,
// every tensor streamed and hashed), for f32/bf16 checkpoints and q8_0 and
// q4_k GGUF files (a llama one: permuted q/k rows and their stored blocks).
func TestIdentityFromLoaderDigests(t *testing.T) {
	dir := t.TempDir()
	tiny, err := models.Variant("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for _, dt := range []string{"f32", "bf16"} {
		d := filepath.Join(dir, dt)
		if err := models.WriteSynthetic(d, tiny, 3, dt, nil); err != nil {
			t.Fatal(err)
		}
		specs = append(specs, d)
	}
	for _, c := range []struct{ arch, format string }{{"qwen3", "q8_0"}, {"llama", "q4_k"}} {
		w, err := models.SynthesizeAs(q4kConfig(t, c.arch, true), 5, models.SynthDType)
		if err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(dir, c.arch)
		g := exportTo(t, &models.Model{Source: models.Source{Spec: "tiny"}, Weights: w}, plan.Tokenizer{}, c.format, mkdir(t, sub))
		specs = append(specs, g.GGUF)
	}
	for _, spec := range specs {
		streamed, err := models.Open(spec, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		private, err := models.OpenPrivate(spec, 0, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range private.Names() {
			if _, _, ok := private.F32Digest(n); !ok {
				t.Fatalf("%s: OpenPrivate took no digest of %s", spec, n)
			}
			if _, _, ok := streamed.F32Digest(n); ok {
				t.Fatalf("%s: Open claims a digest of %s", spec, n)
			}
		}
		flags := map[string]string{"weights": "f32"}
		a, err := plan.ModelIdentity(streamed.Weights, []byte("{}"), nil, flags)
		if err != nil {
			t.Fatal(err)
		}
		b, err := plan.ModelIdentity(private.Weights, []byte("{}"), nil, flags)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Compare(b); err != nil || a.Digest != b.Digest {
			t.Fatalf("%s: the identity from the loader's digests differs from the streamed one: %v", spec, err)
		}
		// Unhashed: no digests, the identity read through the sealed reads.
		unhashed, err := models.OpenPrivateUnhashed(spec, 0, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := unhashed.F32Digest(private.Names()[0]); ok {
			t.Fatalf("%s: OpenPrivateUnhashed took a digest", spec)
		}
		c, err := plan.ModelIdentity(unhashed.Weights, []byte("{}"), nil, flags)
		unhashed.Close()
		if err != nil || c.Digest != a.Digest {
			t.Fatalf("%s: the identity of the unhashed load differs (%v)", spec, err)
		}
		streamed.Close()
		private.Close()
	}
}

func mkdir(t *testing.T, d string) string {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}
