package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Standard file names of a Hugging Face checkpoint directory.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// Set is the tensors of a checkpoint directory, from one file or from the
// shards an index names. Its methods are safe for concurrent use until
// Close.
type Set struct {
	dir   string
	files []*File
	owner map[string]*File
	names []string
	index map[string]any
}

// Index is the JSON body of model.safetensors.index.json.
type Index struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// OpenModel opens the safetensors weights of a checkpoint directory:
// model.safetensors when present (as transformers prefers it), otherwise
// the shards model.safetensors.index.json lists. Every tensor the index
// names must be in its shard and no tensor may appear in two shards;
// tensors a shard holds beyond the index are kept. Shard names must be
// plain file names inside dir.
func OpenModel(dir string) (*Set, error) { return openModel(osFiles{}, dir) }

// OpenModelFS is OpenModel for the directory dir of fsys ("." for its
// root): a model built into the binary (embed.FS) is read by the same
// code, with the same checks, as one on disk. Its files must read at
// offsets (io.ReaderAt); see OpenFS.
func OpenModelFS(fsys fs.FS, dir string) (*Set, error) { return openModel(fsFiles{fsys}, dir) }

// files is where a Set's files are: the operating system's file system,
// or an fs.FS.
type files interface {
	join(dir, name string) string
	stat(name string) (fs.FileInfo, error)
	readFile(name string) ([]byte, error)
	open(name string) (*File, error)
}

type osFiles struct{}

func (osFiles) join(dir, name string) string          { return filepath.Join(dir, name) }
func (osFiles) stat(name string) (fs.FileInfo, error) { return os.Stat(name) }
func (osFiles) readFile(name string) ([]byte, error)  { return os.ReadFile(name) }
func (osFiles) open(name string) (*File, error)       { return Open(name) }

type fsFiles struct{ fsys fs.FS }

func (f fsFiles) join(dir, name string) string          { return path.Join(dir, name) }
func (f fsFiles) stat(name string) (fs.FileInfo, error) { return fs.Stat(f.fsys, name) }
func (f fsFiles) readFile(name string) ([]byte, error)  { return fs.ReadFile(f.fsys, name) }
func (f fsFiles) open(name string) (*File, error)       { return OpenFS(f.fsys, name) }

func openModel(src files, dir string) (*Set, error) {
	single := src.join(dir, SingleFile)
	if st, err := src.stat(single); err == nil && !st.IsDir() {
		f, err := src.open(single)
		if err != nil {
			return nil, err
		}
		return newSet(dir, []*File{f}, nil)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("safetensors %s: %w", single, err)
	}
	indexPath := src.join(dir, IndexFile)
	body, err := src.readFile(indexPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("safetensors %s: neither %s nor %s is present", dir, SingleFile, IndexFile)
	}
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", indexPath, err)
	}
	var idx Index
	if err := json.Unmarshal(body, &idx); err != nil {
		return nil, fmt.Errorf("safetensors %s: index JSON: %w", indexPath, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("safetensors %s: weight_map is empty or missing", indexPath)
	}
	byShard := map[string][]string{}
	for name, shard := range idx.WeightMap {
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return nil, fmt.Errorf("safetensors %s: tensor %q: shard %q is not a plain file name in the directory", indexPath, name, shard)
		}
		byShard[shard] = append(byShard[shard], name)
	}
	shards := make([]string, 0, len(byShard))
	for s := range byShard {
		shards = append(shards, s)
	}
	sort.Strings(shards)
	var files []*File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	for _, s := range shards {
		p := src.join(dir, s)
		f, err := src.open(p)
		if err != nil {
			closeAll()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("safetensors %s: shard %s (holding %d tensors) is missing: %w", indexPath, s, len(byShard[s]), err)
			}
			return nil, err
		}
		files = append(files, f)
		names := byShard[s]
		sort.Strings(names)
		for _, n := range names {
			if _, ok := f.infos[n]; !ok {
				closeAll()
				return nil, fmt.Errorf("safetensors %s: tensor %q: the index places it in %s, which does not hold it", indexPath, n, s)
			}
		}
	}
	set, err := newSet(dir, files, idx.Metadata)
	if err != nil {
		closeAll()
		return nil, err
	}
	return set, nil
}

func newSet(dir string, files []*File, index map[string]any) (*Set, error) {
	s := &Set{dir: dir, files: files, owner: map[string]*File{}, index: index}
	for _, f := range files {
		for _, n := range f.names {
			if prev, dup := s.owner[n]; dup {
				return nil, fmt.Errorf("safetensors %s: tensor %q is in both %s and %s", dir, n, filepath.Base(prev.path), filepath.Base(f.path))
			}
			s.owner[n] = f
			s.names = append(s.names, n)
		}
	}
	sort.Strings(s.names)
	return s, nil
}

// Dir is the checkpoint directory.
func (s *Set) Dir() string { return s.dir }

// Files lists the paths of the open files, in shard order.
func (s *Set) Files() []string {
	ps := make([]string, len(s.files))
	for i, f := range s.files {
		ps[i] = f.path
	}
	return ps
}

// IndexMetadata is the index's "metadata" object (nil for a single file).
func (s *Set) IndexMetadata() map[string]any { return s.index }

// Names lists every tensor, sorted.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// FileOf is the path of the file holding a tensor.
func (s *Set) FileOf(name string) (string, error) {
	f, err := s.file(name)
	if err != nil {
		return "", err
	}
	return f.path, nil
}

func (s *Set) file(name string) (*File, error) {
	f, ok := s.owner[name]
	if !ok {
		return nil, fmt.Errorf("safetensors %s: no tensor %q", s.dir, name)
	}
	return f, nil
}

// Info describes a tensor.
func (s *Set) Info(name string) (Info, error) {
	f, err := s.file(name)
	if err != nil {
		return Info{}, err
	}
	return f.Info(name)
}

// Bytes is a tensor's raw data; see File.Bytes.
func (s *Set) Bytes(name string) ([]byte, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, err
	}
	return f.Bytes(name)
}

// Where locates a tensor's bytes in its file; see File.Where.
func (s *Set) Where(name string) (path string, off, size int64, dtype string, err error) {
	f, err := s.file(name)
	if err != nil {
		return "", 0, 0, "", err
	}
	return f.Where(name)
}

// Float32 is a tensor's values as float32; see File.Float32 for when the
// result is a view valid only until Close.
func (s *Set) Float32(name string) ([]float32, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, err
	}
	return f.Float32(name)
}

// DecodeRange decodes part of a tensor; see File.DecodeRange.
func (s *Set) DecodeRange(name string, lo, hi int64, dst []float32) error {
	f, err := s.file(name)
	if err != nil {
		return err
	}
	return f.DecodeRange(name, lo, hi, dst)
}

// IsView reports whether Float32(name) returns a view of a file.
func (s *Set) IsView(name string) bool {
	f, ok := s.owner[name]
	return ok && f.IsView(name)
}

// Handle is the open file holding a tensor; see File.Handle.
func (s *Set) Handle(name string) (io.ReaderAt, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, err
	}
	if f.fd == nil {
		return nil, fmt.Errorf("safetensors %s: file is closed", f.path)
	}
	return f.fd, nil
}

// Reopen opens the file at path (one of Files) again, from where the set
// read it; see File.Reopen.
func (s *Set) Reopen(path string) (ReadAtCloser, error) {
	for _, f := range s.files {
		if f.path == path {
			return f.Reopen()
		}
	}
	return nil, fmt.Errorf("safetensors %s: %s is not one of its files", s.dir, path)
}

// Unchanged checks every file; see File.Unchanged.
func (s *Set) Unchanged() error {
	for _, f := range s.files {
		if err := f.Unchanged(); err != nil {
			return err
		}
	}
	return nil
}

// Unmap releases every file's mapping and keeps the files open; see
// File.Unmap.
func (s *Set) Unmap() error {
	var first error
	for _, f := range s.files {
		if err := f.Unmap(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Close closes every file, returning the first error.
func (s *Set) Close() error {
	var first error
	for _, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}
