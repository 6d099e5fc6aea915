package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// TensorInfo describes a tensor to write.
type TensorInfo struct {
	Name  string
	DType string
	Shape []int
}

// Tensor is a tensor to write with its little-endian data.
type Tensor struct {
	Name  string
	DType string
	Shape []int
	Data  []byte
}

// FillFunc supplies the data of infos[i] into dst, which is exactly the
// tensor's size; dst holds stale bytes, so fill must overwrite all of it.
type FillFunc func(i int, dst []byte) error

// Write writes tensors and optional metadata to path; see WriteFunc for
// the layout and the atomicity guarantee.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	infos := make([]TensorInfo, len(tensors))
	for i, t := range tensors {
		infos[i] = TensorInfo{t.Name, t.DType, t.Shape}
	}
	plan, err := planTensors(infos)
	if err != nil {
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	for i, t := range tensors {
		if int64(len(t.Data)) != plan.sizes[i] {
			return fmt.Errorf("safetensors %s: tensor %q: %d data bytes, shape %s of %s needs %d",
				path, t.Name, len(t.Data), shapeString(t.Shape), t.DType, plan.sizes[i])
		}
	}
	src := func(i int, _ []byte) ([]byte, error) { return tensors[i].Data, nil }
	return writeOne(path, plan, plan.order, metadata, src)
}

// WriteFunc writes a safetensors file whose tensor data comes from fill,
// one tensor at a time into a reused buffer, so the data need not be held
// in memory whole. The output is deterministic: tensors are laid out in
// sorted name order with no gaps, the header JSON has sorted keys and is
// padded with spaces to a multiple of 8 bytes (so the data section starts
// 8-byte aligned, and so does every tensor when all share one dtype). fill is called once per tensor, in file order, from the
// calling goroutine. The file is written to a temporary name in the same
// directory, synced, then renamed over path, so a failed write leaves no
// partial file behind.
func WriteFunc(path string, infos []TensorInfo, metadata map[string]string, fill FillFunc) error {
	plan, err := planTensors(infos)
	if err != nil {
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	return writeOne(path, plan, plan.order, metadata, fillSource(plan, fill))
}

// WriteSharded writes the tensors as Hugging Face shards in dir:
// model-00001-of-0000N.safetensors ... packed greedily in sorted name order
// so that no shard's data exceeds maxShardBytes (a larger tensor gets a
// shard of its own), plus model.safetensors.index.json with
// {"metadata": {"total_size": bytes}, "weight_map": {name: shard}}.
// metadata goes into every shard's header. All shards are written under
// temporary names first and renamed only when every one is complete; the
// index comes last. A model.safetensors left in dir would shadow the
// shards (OpenModel prefers it), so it is removed. It returns the shard
// file names.
func WriteSharded(dir string, infos []TensorInfo, metadata map[string]string, maxShardBytes int64, fill FillFunc) ([]string, error) {
	indexPath := filepath.Join(dir, IndexFile)
	if maxShardBytes <= 0 {
		return nil, fmt.Errorf("safetensors %s: maxShardBytes must be positive, got %d", indexPath, maxShardBytes)
	}
	plan, err := planTensors(infos)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", indexPath, err)
	}
	var shards [][]int
	var cur []int
	var curBytes, total int64
	for _, i := range plan.order {
		sz := plan.sizes[i]
		total += sz
		if len(cur) > 0 && curBytes+sz > maxShardBytes {
			shards = append(shards, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, i)
		curBytes += sz
	}
	if len(cur) > 0 || len(shards) == 0 {
		shards = append(shards, cur)
	}
	names := make([]string, len(shards))
	temps := make([]string, 0, len(shards))
	cleanup := func() {
		for _, t := range temps {
			_ = os.Remove(t)
		}
	}
	weightMap := map[string]string{}
	src := fillSource(plan, fill)
	for s, members := range shards {
		names[s] = fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, len(shards))
		for _, i := range members {
			weightMap[infos[i].Name] = names[s]
		}
		tmp, err := writeTemp(filepath.Join(dir, names[s]), plan, members, metadata, src)
		if err != nil {
			cleanup()
			return nil, err
		}
		temps = append(temps, tmp)
	}
	for s, tmp := range temps {
		if err := os.Rename(tmp, filepath.Join(dir, names[s])); err != nil {
			cleanup()
			return nil, fmt.Errorf("safetensors %s: %w", filepath.Join(dir, names[s]), err)
		}
	}
	idx := Index{Metadata: map[string]any{"total_size": total}, WeightMap: weightMap}
	body, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", indexPath, err)
	}
	if err := WriteFileAtomic(indexPath, append(body, '\n')); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(dir, SingleFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("safetensors %s: removing the single-file checkpoint the shards replace: %w", dir, err)
	}
	return names, nil
}

// WriteFileAtomic writes data to path through a synced temporary file in
// the same directory and a rename, so path is either absent, its old
// content, or all of data.
func WriteFileAtomic(path string, data []byte) error {
	if err := Replaceable(path); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

type plan struct {
	infos []TensorInfo
	sizes []int64
	order []int // indices into infos, sorted by name
	max   int64
}

func planTensors(infos []TensorInfo) (*plan, error) {
	p := &plan{infos: infos, sizes: make([]int64, len(infos)), order: make([]int, len(infos))}
	seen := map[string]bool{}
	for i, t := range infos {
		if t.Name == "" {
			return nil, fmt.Errorf("tensor %d has an empty name", i)
		}
		if t.Name == MetadataKey {
			return nil, fmt.Errorf("tensor name %q is reserved", t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		size, ok := dtypeSizes[t.DType]
		if !ok {
			return nil, fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		n := int64(size)
		for _, d := range t.Shape {
			if d < 0 {
				return nil, fmt.Errorf("tensor %q: shape %s has a negative dimension", t.Name, shapeString(t.Shape))
			}
			if d != 0 && n > math.MaxInt64/int64(d) {
				return nil, fmt.Errorf("tensor %q: shape %s is too large", t.Name, shapeString(t.Shape))
			}
			n *= int64(d)
		}
		p.sizes[i] = n
		p.order[i] = i
		p.max = max(p.max, n)
	}
	sort.Slice(p.order, func(a, b int) bool { return infos[p.order[a]].Name < infos[p.order[b]].Name })
	return p, nil
}

// source returns the bytes of infos[i], possibly using buf (of the
// tensor's size) as storage.
type source func(i int, buf []byte) ([]byte, error)

func fillSource(p *plan, fill FillFunc) source {
	var buf []byte
	return func(i int, _ []byte) ([]byte, error) {
		if buf == nil {
			buf = make([]byte, p.max)
		}
		dst := buf[:p.sizes[i]:p.sizes[i]]
		if err := fill(i, dst); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", p.infos[i].Name, err)
		}
		return dst, nil
	}
}

type headerEntry struct {
	DataOffsets [2]int64 `json:"data_offsets"`
	DType       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
}

// header is the padded JSON header of the tensors members (sorted by name)
// laid out back to back.
func header(p *plan, members []int, metadata map[string]string) ([]byte, error) {
	m := make(map[string]any, len(members)+1)
	if len(metadata) > 0 {
		m[MetadataKey] = metadata
	}
	var off int64
	for _, i := range members {
		t := p.infos[i]
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		m[t.Name] = headerEntry{DataOffsets: [2]int64{off, off + p.sizes[i]}, DType: t.DType, Shape: shape}
		off += p.sizes[i]
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	h := bytes.TrimRight(b.Bytes(), "\n")
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	if len(h) > MaxHeaderBytes {
		return nil, fmt.Errorf("header of %d bytes exceeds the %d-byte limit", len(h), MaxHeaderBytes)
	}
	return h, nil
}

func writeOne(path string, p *plan, members []int, metadata map[string]string, src source) error {
	tmp, err := writeTemp(path, p, members, metadata, src)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	return nil
}

// writeTemp writes the file that will become path under a temporary name
// in the same directory and returns that name; on error nothing is left.
func writeTemp(path string, p *plan, members []int, metadata map[string]string, src source) (string, error) {
	if err := Replaceable(path); err != nil {
		return "", err
	}
	h, err := header(p, members, metadata)
	if err != nil {
		return "", fmt.Errorf("safetensors %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", fmt.Errorf("safetensors %s: %w", path, err)
	}
	fail := func(err error) (string, error) {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("safetensors %s: %w", path, err)
	}
	var lenField [8]byte
	binary.LittleEndian.PutUint64(lenField[:], uint64(len(h)))
	if _, err := f.Write(lenField[:]); err != nil {
		return fail(err)
	}
	if _, err := f.Write(h); err != nil {
		return fail(err)
	}
	for _, i := range members {
		data, err := src(i, nil)
		if err != nil {
			return fail(err)
		}
		if _, err := f.Write(data); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("safetensors %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("safetensors %s: %w", path, err)
	}
	return f.Name(), nil
}

// Replaceable refuses an output path that a temporary file and a rename
// would wrongly replace: a symbolic link (the link would become a regular
// file and its target stay unchanged), a device, a named pipe, a socket or
// a directory. A new path or a regular file is fine.
func Replaceable(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	m := st.Mode()
	var what string
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeSymlink != 0:
		what = "a symbolic link (name its target, or remove the link)"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		what = "a device"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m.IsDir():
		what = "a directory"
	default:
		what = "not a regular file"
	}
	return fmt.Errorf("write %s: refusing to replace it: it is %s", path, what)
}
