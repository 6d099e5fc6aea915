// Package gguf reads and writes GGUF files (version 3, little-endian), the
// format llama.cpp loads: a header of typed metadata, a table of tensor
// infos, and aligned tensor data. The reader never trusts the file: every
// length, count and offset is checked against the bytes that are there
// before it is used, and an error names the key or tensor.
package gguf

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// Bounds the reader enforces before allocating anything.
const (
	maxKV      = 1 << 20 // metadata entries
	maxTensors = 1 << 20
	maxDims    = 4
	maxString  = 1 << 30
	maxArray   = 1 << 28
)

// ValueType is a metadata value's type.
type ValueType uint32

const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// size is the encoded size of a scalar type (0 for string and array).
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// Value is one metadata value: a scalar (as int64, uint64, float64, bool
// or string) or an array of them.
type Value struct {
	Type ValueType
	// Elem is an array's element type.
	Elem ValueType
	v    any
}

// Int returns an integer value (any integer type; a uint64 above the
// int64 range is refused).
func (v Value) Int() (int64, bool) {
	switch x := v.v.(type) {
	case int64:
		return x, true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// Float returns a float value (float32 or float64).
func (v Value) Float() (float64, bool) {
	x, ok := v.v.(float64)
	return x, ok
}

// String returns a string value.
func (v Value) String() (string, bool) {
	x, ok := v.v.(string)
	return x, ok
}

// Bool returns a bool value.
func (v Value) Bool() (bool, bool) {
	x, ok := v.v.(bool)
	return x, ok
}

// Strings returns an array of strings.
func (v Value) Strings() ([]string, bool) {
	x, ok := v.v.([]string)
	return x, ok
}

// Ints returns an array of integers.
func (v Value) Ints() ([]int64, bool) {
	x, ok := v.v.([]int64)
	return x, ok
}

// Floats returns an array of floats.
func (v Value) Floats() ([]float64, bool) {
	x, ok := v.v.([]float64)
	return x, ok
}

// Len is an array's length (0 for a scalar).
func (v Value) Len() int {
	switch x := v.v.(type) {
	case []string:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	case []bool:
		return len(x)
	}
	return 0
}

// TensorInfo is one tensor's entry: Dims in GGUF order (Dims[0] varies
// fastest: a matrix [rows, cols] has Dims [cols, rows]).
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   TensorType
	Offset uint64 // from the start of the data section
	Size   int64  // bytes
}

// Elems is the element count.
func (t *TensorInfo) Elems() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= int64(d)
	}
	return n
}

// Shape is the shape in row-major order (the reverse of Dims): what a
// safetensors file would hold.
func (t *TensorInfo) Shape() []int {
	s := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		s[len(t.Dims)-1-i] = int(d)
	}
	return s
}

// File is a parsed GGUF file over its bytes (mapped or read).
type File struct {
	// Path is the file's, when whoever opened it set it ("" otherwise).
	Path      string
	Version   uint32
	Alignment int
	// Keys lists the metadata keys in file order; Meta holds the values.
	Keys    []string
	Meta    map[string]Value
	Tensors []TensorInfo
	data    []byte // the tensor data section
	dataOff int64  // where it starts in the file
	close   func() error
}

// Tensor returns the info of the tensor called name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i], true
		}
	}
	return nil, false
}

// Data returns a tensor's bytes as stored (a view of the file).
func (f *File) Data(t *TensorInfo) []byte {
	return f.data[t.Offset : t.Offset+uint64(t.Size) : t.Offset+uint64(t.Size)]
}

// FileOffset is where a tensor's bytes start in the file.
func (f *File) FileOffset(t *TensorInfo) int64 { return f.dataOff + int64(t.Offset) }

// SetCloser sets what Close releases (the mapping of the bytes).
func (f *File) SetCloser(c func() error) { f.close = c }

// Mapped reports whether the bytes are a mapping that Close releases
// (set by SetCloser), not memory of the process's own.
func (f *File) Mapped() bool { return f.close != nil }

// Close unmaps the file.
func (f *File) Close() error {
	if f.close == nil {
		return nil
	}
	c := f.close
	f.close = nil
	return c()
}

// reader walks the header, refusing every read past the end.
type reader struct {
	b   []byte
	off int
}

func (r *reader) take(n int, what string) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.off {
		return nil, fmt.Errorf("%s: truncated at byte %d (%d bytes needed, %d left)", what, r.off, n, len(r.b)-r.off)
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b, nil
}

func (r *reader) u32(what string) (uint32, error) {
	b, err := r.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64(what string) (uint64, error) {
	b, err := r.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *reader) str(what string) (string, error) {
	n, err := r.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > maxString {
		return "", fmt.Errorf("%s: string of %d bytes", what, n)
	}
	b, err := r.take(int(n), what)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// scalar decodes one value of a scalar type: integers widen to int64 (or
// uint64 for the unsigned 64-bit type), floats to float64.
func (r *reader) scalar(t ValueType, what string) (any, error) {
	if t == TypeString {
		return r.str(what)
	}
	n := t.size()
	if n == 0 {
		return nil, fmt.Errorf("%s: unknown value type %d", what, uint32(t))
	}
	b, err := r.take(n, what)
	if err != nil {
		return nil, err
	}
	switch t {
	case TypeUint8:
		return int64(b[0]), nil
	case TypeInt8:
		return int64(int8(b[0])), nil
	case TypeUint16:
		return int64(binary.LittleEndian.Uint16(b)), nil
	case TypeInt16:
		return int64(int16(binary.LittleEndian.Uint16(b))), nil
	case TypeUint32:
		return int64(binary.LittleEndian.Uint32(b)), nil
	case TypeInt32:
		return int64(int32(binary.LittleEndian.Uint32(b))), nil
	case TypeFloat32:
		// The shortest decimal that rounds to this float32: what the writer
		// meant (1e-6, not 9.999999974752427e-7).
		f := math.Float32frombits(binary.LittleEndian.Uint32(b))
		x, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
		return x, nil
	case TypeBool:
		if b[0] > 1 {
			return nil, fmt.Errorf("%s: bool byte %d", what, b[0])
		}
		return b[0] == 1, nil
	case TypeUint64:
		return binary.LittleEndian.Uint64(b), nil
	case TypeInt64:
		return int64(binary.LittleEndian.Uint64(b)), nil
	default: // TypeFloat64
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	}
}

func (r *reader) value(what string) (Value, error) {
	t, err := r.u32(what + " type")
	if err != nil {
		return Value{}, err
	}
	vt := ValueType(t)
	if vt != TypeArray {
		v, err := r.scalar(vt, what)
		return Value{Type: vt, v: v}, err
	}
	et, err := r.u32(what + " element type")
	if err != nil {
		return Value{}, err
	}
	n, err := r.u64(what + " array length")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if elem == TypeArray || (elem != TypeString && elem.size() == 0) {
		return Value{}, fmt.Errorf("%s: arrays of %v are not supported", what, elem)
	}
	// Every element takes at least one byte (a string, eight), so a length
	// past what is left is refused before anything is allocated.
	minSize := max(elem.size(), 1)
	if elem == TypeString {
		minSize = 8
	}
	if n > maxArray || n > uint64(len(r.b)-r.off)/uint64(minSize) {
		return Value{}, fmt.Errorf("%s: array of %d %v is past the end of the file", what, n, elem)
	}
	out := Value{Type: TypeArray, Elem: elem}
	switch elem {
	case TypeString:
		s := make([]string, n)
		for i := range s {
			if s[i], err = r.str(fmt.Sprintf("%s[%d]", what, i)); err != nil {
				return Value{}, err
			}
		}
		out.v = s
	case TypeFloat32, TypeFloat64:
		f := make([]float64, n)
		for i := range f {
			x, err := r.scalar(elem, what)
			if err != nil {
				return Value{}, err
			}
			f[i] = x.(float64)
		}
		out.v = f
	case TypeBool:
		bs := make([]bool, n)
		for i := range bs {
			x, err := r.scalar(elem, what)
			if err != nil {
				return Value{}, err
			}
			bs[i] = x.(bool)
		}
		out.v = bs
	default:
		ints := make([]int64, n)
		for i := range ints {
			x, err := r.scalar(elem, what)
			if err != nil {
				return Value{}, err
			}
			switch v := x.(type) {
			case int64:
				ints[i] = v
			case uint64:
				if v > math.MaxInt64 {
					return Value{}, fmt.Errorf("%s[%d]: %d overflows int64", what, i, v)
				}
				ints[i] = int64(v)
			}
		}
		out.v = ints
	}
	return out, nil
}

// Parse reads a GGUF file held in b (b is kept: tensor data are views).
func Parse(b []byte) (*File, error) {
	r := &reader{b: b}
	magic, err := r.take(4, "magic")
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("gguf: bad magic %q (not a GGUF file)", magic)
	}
	f := &File{Meta: map[string]Value{}, Alignment: DefaultAlignment}
	if f.Version, err = r.u32("version"); err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if f.Version != 3 && f.Version != 2 {
		return nil, fmt.Errorf("gguf: version %d (want 2 or 3)", f.Version)
	}
	nt, err := r.u64("tensor count")
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	nkv, err := r.u64("metadata count")
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if nt > maxTensors || nkv > maxKV {
		return nil, fmt.Errorf("gguf: %d tensors and %d metadata entries (at most %d and %d)", nt, nkv, maxTensors, maxKV)
	}
	for i := range nkv {
		key, err := r.str(fmt.Sprintf("metadata key %d", i))
		if err != nil {
			return nil, fmt.Errorf("gguf: %w", err)
		}
		if _, dup := f.Meta[key]; dup {
			return nil, fmt.Errorf("gguf: metadata key %q repeated", key)
		}
		v, err := r.value("metadata " + key)
		if err != nil {
			return nil, fmt.Errorf("gguf: %w", err)
		}
		f.Keys = append(f.Keys, key)
		f.Meta[key] = v
	}
	if v, ok := f.Meta["general.alignment"]; ok {
		a, ok := v.Int()
		if !ok || a <= 0 || a > 1<<16 || a&(a-1) != 0 {
			return nil, fmt.Errorf("gguf: general.alignment %v is not a power of two up to 65536", v.v)
		}
		f.Alignment = int(a)
	}
	names := map[string]bool{}
	for i := range nt {
		what := fmt.Sprintf("tensor %d", i)
		name, err := r.str(what + " name")
		if err != nil {
			return nil, fmt.Errorf("gguf: %w", err)
		}
		what = fmt.Sprintf("tensor %q", name)
		if names[name] {
			return nil, fmt.Errorf("gguf: %s appears twice", what)
		}
		names[name] = true
		nd, err := r.u32(what + " dims")
		if err != nil {
			return nil, fmt.Errorf("gguf: %w", err)
		}
		if nd == 0 || nd > maxDims {
			return nil, fmt.Errorf("gguf: %s has %d dims (want 1 to %d)", what, nd, maxDims)
		}
		t := TensorInfo{Name: name, Dims: make([]uint64, nd)}
		elems := uint64(1)
		for d := range t.Dims {
			if t.Dims[d], err = r.u64(what + " dim"); err != nil {
				return nil, fmt.Errorf("gguf: %w", err)
			}
			if t.Dims[d] == 0 || t.Dims[d] > 1<<40 || elems > (1<<50)/t.Dims[d] {
				return nil, fmt.Errorf("gguf: %s has dims %v: empty or too large", what, t.Dims[:d+1])
			}
			elems *= t.Dims[d]
		}
		ty, err := r.u32(what + " type")
		if err != nil {
			return nil, fmt.Errorf("gguf: %w", err)
		}
		t.Type = TensorType(ty)
		info, ok := t.Type.info()
		if !ok {
			return nil, fmt.Errorf("gguf: %s has tensor type %v, which gelo cannot read (it reads %s)", what, t.Type, strings.Join(typeNames(), ", "))
		}
		if t.Dims[0]%uint64(info.block) != 0 {
			return nil, fmt.Errorf("gguf: %s: %v rows of %d values are not whole blocks of %d", what, t.Type, t.Dims[0], info.block)
		}
		t.Size = int64(elems / uint64(info.block) * uint64(info.bytes))
		if t.Offset, err = r.u64(what + " offset"); err != nil {
			return nil, fmt.Errorf("gguf: %w", err)
		}
		if t.Offset%uint64(f.Alignment) != 0 {
			return nil, fmt.Errorf("gguf: %s offset %d is not aligned to %d", what, t.Offset, f.Alignment)
		}
		f.Tensors = append(f.Tensors, t)
	}
	start := (r.off + f.Alignment - 1) / f.Alignment * f.Alignment
	if start > len(b) {
		return nil, fmt.Errorf("gguf: the data section starts at %d, past the end of the file (%d bytes)", start, len(b))
	}
	f.data, f.dataOff = b[start:], int64(start)
	for _, t := range f.Tensors {
		if t.Offset > uint64(len(f.data)) || uint64(t.Size) > uint64(len(f.data))-t.Offset {
			return nil, fmt.Errorf("gguf: tensor %q (%d bytes at %d) is past the end of the data (%d bytes)", t.Name, t.Size, t.Offset, len(f.data))
		}
	}
	// Tensors must not overlap: sorted by offset, each ends before the next.
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(f.Tensors[a].Offset, f.Tensors[b].Offset) })
	for i := 1; i < len(order); i++ {
		a, b := f.Tensors[order[i-1]], f.Tensors[order[i]]
		if a.Offset+uint64(a.Size) > b.Offset {
			return nil, fmt.Errorf("gguf: tensors %q and %q overlap", a.Name, b.Name)
		}
	}
	return f, nil
}
