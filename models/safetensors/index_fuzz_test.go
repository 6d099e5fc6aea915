package safetensors

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzIndex feeds OpenModel fuzzed model.safetensors.index.json bodies
// next to two real shards: it must refuse or open a set whose every name
// reads, never panic or reach outside the directory.
func FuzzIndex(f *testing.F) {
	dir := f.TempDir()
	infos := []TensorInfo{{Name: "a", DType: F32, Shape: []int{2}}, {Name: "b", DType: BF16, Shape: []int{4}}}
	if _, err := WriteSharded(dir, infos, nil, 8, func(i int, dst []byte) error { return nil }); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"weight_map":{"a":"../model-00001-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"metadata":{"total_size":-1},"weight_map":{"a":"model-00001-of-00002.safetensors","a":"x"}}`))
	f.Add([]byte(`{"weight_map":{}}`))
	shards := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
	f.Fuzz(func(t *testing.T, body []byte) {
		d := t.TempDir()
		for _, s := range shards {
			b, err := os.ReadFile(filepath.Join(dir, s))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, s), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, IndexFile), body, 0o644); err != nil {
			t.Fatal(err)
		}
		set, err := OpenModel(d)
		if err != nil {
			return
		}
		defer set.Close()
		for _, n := range set.Names() {
			file, err := set.FileOf(n)
			if err != nil || filepath.Dir(file) != d {
				t.Fatalf("tensor %s: file %q (%v) outside %s", n, file, err, d)
			}
			if _, err := set.Bytes(n); err != nil {
				t.Fatalf("tensor %s does not read: %v", n, err)
			}
		}
	})
}
