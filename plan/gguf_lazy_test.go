package plan_test

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

	"gelo/models"
	"gelo/plan"
)

// f32Bytes is v as little-endian float32 bytes (bit-exact comparison).
func f32Bytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// TestGGUFLazy: a GGUF model's tensors stay in the file's blocks until
// read. None is resident after Open; ReadRows (ranges that cut Reader's
// chunks and, for a llama file, the permuted q/k rows), Reader and Get
// give the values the file's blocks decode to; a released tensor reads
// again from the mapping. After Private, reads are checked against the
// digests it took: once the file is rewritten, a tensor made resident
// before and a stored block (copied) keep their values and every other
// read fails, naming the tensor; a tensor released before Private is no
// longer readable.
func TestGGUFLazy(t *testing.T) {
	cases := []struct {
		arch, format string
	}{{"qwen3", "q8_0"}, {"qwen3", "q4_k"}, {"llama", "q4_0"}, {"llama", "q4_k"}}
	for _, c := range cases {
		t.Run(c.arch+"-"+c.format, func(t *testing.T) {
			cfg := q4kConfig(t, c.arch, true)
			w, err := models.SynthesizeAs(cfg, 9, models.SynthDType)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			ref := exportTo(t, &models.Model{Source: models.Source{Spec: "tiny"}, Weights: w}, plan.Tokenizer{}, c.format, dir)
			want := map[string][]float32{}
			blocks := map[string][]byte{}
			for _, n := range ref.Names() {
				v, _, err := ref.Get(n)
				if err != nil {
					t.Fatal(err)
				}
				want[n] = v
				if sb, ok := ref.Blocks(n); ok {
					blocks[n] = append([]byte(nil), sb.Data...)
				}
			}
			if c.format == "q4_k" && len(blocks) == 0 {
				t.Fatal("a q4_k file's matrices keep no stored blocks")
			}
			path := filepath.Join(dir, c.format+".gguf")
			g, err := models.Open(path, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			for _, n := range g.Names() {
				if res, _, err := g.Shape(n); err != nil || res {
					t.Fatalf("%s: resident %v after Open (err %v)", n, res, err)
				}
			}
			q := "model.layers.0.self_attn.q_proj.weight"
			_, shape, _ := g.Shape(q)
			rows, cols := shape[0], shape[1]
			for _, r := range [][2]int{{0, 1}, {1, 3}, {5, rows - 2}, {rows - 1, rows}, {0, rows}} {
				got := make([]float32, (r[1]-r[0])*cols)
				if err := g.ReadRows(q, r[0], r[1], got); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(f32Bytes(got), f32Bytes(want[q][r[0]*cols:r[1]*cols])) {
					t.Fatalf("ReadRows(%s, %d, %d) differs from the eager values", q, r[0], r[1])
				}
			}
			for _, n := range g.Names() {
				r, _, err := g.Reader(n)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(got, f32Bytes(want[n])) {
					t.Fatalf("Reader(%s) differs (err %v)", n, err)
				}
				if res, _, _ := g.Shape(n); res {
					t.Fatalf("Reader made %s resident", n)
				}
			}
			up := "model.layers.1.mlp.up_proj.weight"
			if err := g.Release(up); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(want[up]))
			if err := g.ReadRows(up, 0, len(got)/cols, got); err != nil || !slices.Equal(got, want[up]) {
				t.Fatalf("a released tensor read from the mapping: %v", err)
			}
			if err := g.Private(); err != nil {
				t.Fatal(err)
			}
			// Read after Private (checked against its digests): the values;
			// half of the tensors made resident before the file changes.
			resident := map[string]bool{}
			for i, n := range g.Names() {
				if n == up {
					continue
				}
				_, sh, _ := g.Shape(n)
				row := make([]float32, sh[len(sh)-1])
				if err := g.ReadRows(n, 0, 1, row); err != nil || !slices.Equal(row, want[n][:len(row)]) {
					t.Fatalf("%s: its first row after Private differs (err %v)", n, err)
				}
				if i%2 == 0 {
					v, _, err := g.Get(n)
					if err != nil || !bytes.Equal(f32Bytes(v), f32Bytes(want[n])) {
						t.Fatalf("%s after Private differs (err %v)", n, err)
					}
					resident[n] = true
				}
			}
			if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, n := range g.Names() {
				if n == up {
					if err := g.ReadRows(up, 0, 1, got[:cols]); err == nil || !strings.Contains(err.Error(), "released") {
						t.Fatalf("a tensor released before Private still reads: %v", err)
					}
					continue
				}
				v, _, err := g.Get(n)
				_, copied := blocks[n] // stored blocks: copied, and read from the copy unless permuted
				switch {
				case resident[n] || copied && err == nil:
					if err != nil || !bytes.Equal(f32Bytes(v), f32Bytes(want[n])) {
						t.Fatalf("%s, resident or copied, after a rewrite of the file differs (err %v)", n, err)
					}
				case err == nil || !strings.Contains(err.Error(), n) || !strings.Contains(err.Error(), "changed after it was checked"):
					t.Fatalf("%s read after the file changed under Private: %v", n, err)
				}
				if b, ok := blocks[n]; ok {
					if sb, ok := g.Blocks(n); !ok || !bytes.Equal(sb.Data, b) {
						t.Fatalf("%s: stored blocks after Private and a rewrite differ", n)
					}
				}
			}
		})
	}
}

// A GGUF tensor holding NaN is refused at Open, naming it.
func TestGGUFNonFinite(t *testing.T) {
	src, b := defaultAsGGUF(t)
	const name = "model.layers.1.mlp.down_proj.weight"
	v, _, _ := src.Get(name)
	head := f32Bytes(v[:16])
	i := bytes.Index(b, head)
	if i < 0 || bytes.Index(b[i+1:], head) >= 0 {
		t.Fatal("the tensor's first values are not unique in the file")
	}
	binary.LittleEndian.PutUint32(b[i+4*3:], math.Float32bits(float32(math.NaN())))
	path := filepath.Join(t.TempDir(), "nan.gguf")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := models.Open(path, 0, nil)
	if err == nil || !strings.Contains(err.Error(), `tensor "`+name+`": element 3 is NaN`) {
		t.Fatalf("a NaN weight: %v", err)
	}
}
