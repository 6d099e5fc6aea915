// Package safetensors reads and writes the safetensors tensor format used
// by Hugging Face checkpoints: an 8-byte little-endian header length N, N
// bytes of JSON mapping each tensor name to {dtype, shape, data_offsets}
// (plus an optional "__metadata__" string map), then the data section the
// offsets index into.
//
// Files are memory-mapped on unix (read-only) and read whole elsewhere. A
// mapped file must not be truncated in place while open (replacing it by
// rename, as this package's writers do, is safe).
// Every structural problem is reported when the file is opened, naming the
// file and the tensor; dtypes gelo cannot convert (I64, F64, ...) are
// accepted by Open and reported only when such a tensor is read as floats.
package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sort"
	"strings"
	"unsafe"
)

// MaxHeaderBytes caps the JSON header a file may declare (the reference
// implementation uses the same 100 MB bound).
const MaxHeaderBytes = 100 << 20

// MetadataKey is the reserved header key of the free-form string map.
const MetadataKey = "__metadata__"

// Info describes one tensor of a file.
type Info struct {
	DType string
	Shape []int
	// Offset and Size locate the tensor's bytes within the data section.
	Offset, Size int64
}

// Elems is the element count of the tensor.
func (in Info) Elems() int64 {
	n := int64(1)
	for _, d := range in.Shape {
		n *= int64(d)
	}
	return n
}

// File is an open safetensors file. Its methods are safe for concurrent
// use until Close.
type File struct {
	path     string
	buf      []byte // the whole file (mapping or heap copy)
	data     []byte // the data section, buf[8+N:]
	infos    map[string]Info
	names    []string
	metadata map[string]string
	unmap    func() error
	head     int64       // the data section's offset in the file, kept by Unmap
	fd       handle      // the file buf maps (or was read from), open until Close
	stat     fs.FileInfo // fd's Stat when it was mapped
	fsys     fs.FS       // the file system path names in (nil: the operating system's)
}

// handle is what a File's tensors are read from once it is parsed: the
// open *os.File it maps, or a file of an fs.FS that reads at offsets
// (embed.FS's and os.DirFS's do).
type handle interface {
	io.ReaderAt
	Stat() (fs.FileInfo, error)
	Close() error
}

// Open opens and validates a safetensors file.
func Open(path string) (*File, error) {
	buf, unmap, fd, st, err := openMapped(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	f, err := parse(path, buf)
	if err != nil {
		if unmap != nil {
			_ = unmap()
		}
		fd.Close()
		return nil, err
	}
	f.unmap, f.fd, f.stat = unmap, fd, st
	return f, nil
}

// OpenFS opens and validates the safetensors file name in fsys (a model
// built into the binary with go:embed, say). The file must read at
// offsets (io.ReaderAt, as embed.FS's files do): it is read whole into
// memory for the parse, and Handle, Unchanged and Reopen then work as
// for a file on disk. Errors name the file by name.
func OpenFS(fsys fs.FS, name string) (*File, error) {
	buf, h, st, err := readFS(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", name, err)
	}
	f, err := parse(name, buf)
	if err != nil {
		h.Close()
		return nil, err
	}
	f.fd, f.stat, f.fsys = h, st, fsys
	return f, nil
}

// readFS opens name in fsys, checks that it is a regular file that reads
// at offsets, and reads it whole; the file stays open (nothing does on
// error).
func readFS(fsys fs.FS, name string) ([]byte, handle, fs.FileInfo, error) {
	h, st, err := openFSHandle(fsys, name)
	if err != nil {
		return nil, nil, nil, err
	}
	if int64(int(st.Size())) != st.Size() {
		h.Close()
		return nil, nil, nil, fmt.Errorf("%d bytes do not fit the address space", st.Size())
	}
	buf := make([]byte, st.Size())
	if _, err := h.ReadAt(buf, 0); err != nil && !(errors.Is(err, io.EOF) && len(buf) == 0) {
		h.Close()
		return nil, nil, nil, err
	}
	return buf, h, st, nil
}

// openFSHandle opens name in fsys as a handle: a regular file that reads
// at offsets.
func openFSHandle(fsys fs.FS, name string) (handle, fs.FileInfo, error) {
	file, err := fsys.Open(name)
	if err != nil {
		return nil, nil, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		file.Close()
		return nil, nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	h, ok := file.(handle)
	if !ok {
		file.Close()
		return nil, nil, fmt.Errorf("the file system's files do not read at offsets (io.ReaderAt), which the loaders need")
	}
	return h, st, nil
}

// Reopen opens the file again, as a new handle of its own that the
// caller closes: from the path it was opened by, or from the same fs.FS.
// It is what the file is, by then, under that name.
func (f *File) Reopen() (ReadAtCloser, error) {
	if f.fsys == nil {
		fd, err := os.Open(f.path)
		if err != nil {
			return nil, fmt.Errorf("safetensors %s: %w", f.path, err)
		}
		return fd, nil
	}
	h, _, err := openFSHandle(f.fsys, f.path)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", f.path, err)
	}
	return h, nil
}

// ReadAtCloser is an open file read at offsets (Reopen's).
type ReadAtCloser interface {
	io.ReaderAt
	io.Closer
}

// Path is the file's path as given to Open.
func (f *File) Path() string { return f.path }

// Close releases the mapping and the open file. Slices returned by Bytes,
// and by Float32 for F32 tensors, must not be used afterwards.
func (f *File) Close() error {
	err := f.Unmap()
	if f.fd != nil {
		if e := f.fd.Close(); err == nil && e != nil {
			err = fmt.Errorf("safetensors %s: close: %w", f.path, e)
		}
		f.fd = nil
	}
	return err
}

// Unmap releases the mapping but keeps the file open: Bytes, Float32 and
// DecodeRange fail afterwards, Handle and Unchanged still work.
func (f *File) Unmap() error {
	if f.data == nil && f.unmap == nil {
		return nil
	}
	head := int64(len(f.buf) - len(f.data))
	f.buf, f.data, f.head = nil, nil, head
	if f.unmap == nil {
		return nil
	}
	u := f.unmap
	f.unmap = nil
	if err := u(); err != nil {
		return fmt.Errorf("safetensors %s: close: %w", f.path, err)
	}
	return nil
}

// Handle is the open file the tensors were mapped (or read) from, nil
// after Close: reading it (ReadAt at Where's offsets) sees the file that
// was parsed, even if its path was replaced since.
func (f *File) Handle() io.ReaderAt {
	if f.fd == nil {
		return nil
	}
	return f.fd
}

// Unchanged reports an error naming the file when its size or
// modification time differs from when it was opened (see
// Mapped.Unchanged).
func (f *File) Unchanged() error {
	if f.fd == nil {
		return fmt.Errorf("safetensors %s: file is closed", f.path)
	}
	if err := unchanged(f.path, f.fd, f.stat); err != nil {
		return fmt.Errorf("safetensors %w", err)
	}
	return nil
}

// Names lists the tensors, sorted.
func (f *File) Names() []string { return append([]string(nil), f.names...) }

// Metadata is the header's "__metadata__" map (nil when absent).
func (f *File) Metadata() map[string]string {
	if f.metadata == nil {
		return nil
	}
	m := make(map[string]string, len(f.metadata))
	for k, v := range f.metadata {
		m[k] = v
	}
	return m
}

// Info describes a tensor.
func (f *File) Info(name string) (Info, error) {
	in, ok := f.infos[name]
	if !ok {
		return Info{}, fmt.Errorf("safetensors %s: no tensor %q", f.path, name)
	}
	in.Shape = append([]int(nil), in.Shape...)
	return in, nil
}

// Bytes is the raw little-endian data of a tensor, aliasing the file: it
// is read-only and valid only until Close.
func (f *File) Bytes(name string) ([]byte, error) {
	in, ok := f.infos[name]
	if !ok {
		return nil, fmt.Errorf("safetensors %s: no tensor %q", f.path, name)
	}
	if f.data == nil {
		return nil, fmt.Errorf("safetensors %s: file is closed", f.path)
	}
	return f.data[in.Offset : in.Offset+in.Size : in.Offset+in.Size], nil
}

// Where locates a tensor's bytes in its file: the path, the offset from
// the file's start, the size and the dtype.
func (f *File) Where(name string) (path string, off, size int64, dtype string, err error) {
	in, ok := f.infos[name]
	if !ok {
		return "", 0, 0, "", fmt.Errorf("safetensors %s: no tensor %q", f.path, name)
	}
	head := f.head
	if f.buf != nil {
		head = int64(len(f.buf) - len(f.data))
	}
	return f.path, head + in.Offset, in.Size, in.DType, nil
}

// Float32 returns a tensor's values as float32, converting BF16 and F16.
// For an F32 tensor on a little-endian host whose data is 4-byte aligned
// the result is a zero-copy view of the file: it is read-only (writing to
// it may crash the process) and valid only until Close. Other results are
// fresh slices the caller owns.
func (f *File) Float32(name string) ([]float32, error) {
	in, ok := f.infos[name]
	if !ok {
		return nil, fmt.Errorf("safetensors %s: no tensor %q", f.path, name)
	}
	if !IsFloat(in.DType) {
		return nil, fmt.Errorf("safetensors %s: tensor %q: unsupported dtype %s (want F32, BF16 or F16)", f.path, name, in.DType)
	}
	raw, err := f.Bytes(name)
	if err != nil {
		return nil, err
	}
	n := int(in.Elems())
	if n == 0 {
		return []float32{}, nil
	}
	if in.DType == F32 && littleEndian && uintptr(unsafe.Pointer(&raw[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), n), nil
	}
	out := make([]float32, n)
	if err := DecodeFloat32(in.DType, raw, out); err != nil {
		return nil, fmt.Errorf("safetensors %s: tensor %q: %w", f.path, name, err)
	}
	return out, nil
}

// DecodeRange converts elements [lo, hi) of a tensor (F32, BF16 or F16)
// into dst (len hi-lo), then drops the file pages it read from the
// process's resident set: they stay in the page cache and fault back on
// the next read. Streaming a checkpoint through a conversion therefore
// does not leave the file resident (a mapping's pages count in RSS).
func (f *File) DecodeRange(name string, lo, hi int64, dst []float32) error {
	in, ok := f.infos[name]
	if !ok {
		return fmt.Errorf("safetensors %s: no tensor %q", f.path, name)
	}
	if f.data == nil {
		return fmt.Errorf("safetensors %s: file is closed", f.path)
	}
	size, ok := dtypeSizes[in.DType]
	if !ok || !IsFloat(in.DType) {
		return fmt.Errorf("safetensors %s: tensor %q: unsupported dtype %s (want F32, BF16 or F16)", f.path, name, in.DType)
	}
	if lo < 0 || hi < lo || hi > in.Elems() || int64(len(dst)) != hi-lo {
		return fmt.Errorf("safetensors %s: tensor %q: elements [%d, %d) of %d into %d", f.path, name, lo, hi, in.Elems(), len(dst))
	}
	s := in.Offset + lo*int64(size)
	e := in.Offset + hi*int64(size)
	if err := DecodeFloat32(in.DType, f.data[s:e], dst); err != nil {
		return fmt.Errorf("safetensors %s: tensor %q: %w", f.path, name, err)
	}
	if f.unmap != nil {
		head := int64(len(f.buf) - len(f.data)) // the data section's offset in the mapping
		dropPages(f.buf, head+s, head+e)
	}
	return nil
}

// IsView reports whether Float32(name) returns a view of the file rather
// than a copy.
func (f *File) IsView(name string) bool {
	in, ok := f.infos[name]
	if !ok || in.DType != F32 || !littleEndian || in.Size == 0 || f.data == nil {
		return false
	}
	return uintptr(unsafe.Pointer(&f.data[in.Offset]))%4 == 0
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

type rawEntry struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

func parse(path string, buf []byte) (*File, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("safetensors %s: "+format, append([]any{path}, args...)...)
	}
	if len(buf) < 8 {
		return nil, fail("file is %d bytes, shorter than the 8-byte header length", len(buf))
	}
	var n uint64
	for i := 7; i >= 0; i-- {
		n = n<<8 | uint64(buf[i])
	}
	if n > MaxHeaderBytes {
		return nil, fail("header length %d exceeds the %d-byte limit", n, MaxHeaderBytes)
	}
	if n > uint64(len(buf)-8) {
		return nil, fail("header length %d exceeds the %d bytes after the length field (truncated file?)", n, len(buf)-8)
	}
	header := buf[8 : 8+n]
	data := buf[8+n:]

	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fail("header JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fail("header JSON: want an object, got %v", tok)
	}
	f := &File{path: path, buf: buf, data: data, infos: map[string]Info{}}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fail("header JSON: %v", err)
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, fail("header JSON: key %q appears twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fail("header JSON: key %q: %v", name, err)
		}
		if name == MetadataKey {
			if err := json.Unmarshal(raw, &f.metadata); err != nil {
				return nil, fail("header JSON: %s must map strings to strings: %v", MetadataKey, err)
			}
			continue
		}
		in, err := parseEntry(raw, int64(len(data)))
		if err != nil {
			return nil, fail("tensor %q: %v", name, err)
		}
		f.infos[name] = in
		f.names = append(f.names, name)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail("header JSON: %v", err)
	}
	// Anything but spaces after the object is malformed.
	rest := header[dec.InputOffset():]
	if len(bytes.TrimRight(rest, " \t\r\n")) != 0 {
		return nil, fail("header JSON: trailing data after the object")
	}
	sort.Strings(f.names)

	// Tensors must not overlap. Gaps are tolerated (the reference writer
	// never leaves any, but they are harmless to a reader).
	order := append([]string(nil), f.names...)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := f.infos[order[i]], f.infos[order[j]]
		if a.Offset != b.Offset {
			return a.Offset < b.Offset
		}
		return a.Size < b.Size
	})
	prev := ""
	for _, name := range order {
		c := f.infos[name]
		if c.Size == 0 {
			continue // holds no bytes, overlaps nothing
		}
		if prev != "" {
			p := f.infos[prev]
			if c.Offset < p.Offset+p.Size {
				return nil, fail("tensor %q: data_offsets [%d,%d] overlap tensor %q at [%d,%d]",
					name, c.Offset, c.Offset+c.Size, prev, p.Offset, p.Offset+p.Size)
			}
		}
		prev = name
	}
	return f, nil
}

func parseEntry(raw json.RawMessage, dataLen int64) (Info, error) {
	var e rawEntry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Info{}, fmt.Errorf("malformed entry: %v", err)
	}
	switch {
	case e.DType == nil:
		return Info{}, errors.New("entry has no dtype")
	case e.Shape == nil:
		return Info{}, errors.New("entry has no shape")
	case e.DataOffsets == nil:
		return Info{}, errors.New("entry has no data_offsets")
	}
	size, ok := dtypeSizes[*e.DType]
	if !ok {
		return Info{}, fmt.Errorf("unknown dtype %q", *e.DType)
	}
	shape := make([]int, len(*e.Shape))
	elems := int64(1)
	overflow := false
	for i, d := range *e.Shape {
		if d < 0 {
			return Info{}, fmt.Errorf("shape %v has negative dimension %d", *e.Shape, d)
		}
		shape[i] = int(d)
		if d != 0 && elems > math.MaxInt64/int64(size)/d {
			overflow = true
		}
		elems *= d
	}
	offs := *e.DataOffsets
	if len(offs) != 2 {
		return Info{}, fmt.Errorf("data_offsets %v must hold two numbers", offs)
	}
	begin, end := offs[0], offs[1]
	if begin < 0 || end < begin {
		return Info{}, fmt.Errorf("data_offsets [%d,%d] are not an increasing pair", begin, end)
	}
	if end > dataLen {
		return Info{}, fmt.Errorf("data_offsets [%d,%d] run past the %d-byte data section (truncated file?)", begin, end, dataLen)
	}
	need := elems * int64(size)
	if overflow || need != end-begin {
		needs := fmt.Sprint(need)
		if overflow {
			needs = "more than the file holds"
		}
		return Info{}, fmt.Errorf("data_offsets [%d,%d] hold %d bytes, shape %s of %s needs %s",
			begin, end, end-begin, shapeString(shape), *e.DType, needs)
	}
	return Info{DType: *e.DType, Shape: shape, Offset: begin, Size: end - begin}, nil
}

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// MapFile maps path read-only (the GGUF reader shares the mapping code);
// unmap, when not nil, releases the mapping. MapOpen also keeps the file.
func MapFile(path string) ([]byte, func() error, error) { return mapFile(path) }
