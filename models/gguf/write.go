package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Writer builds a GGUF file: metadata in the order added, then tensors
// laid out at the alignment, as llama.cpp expects.
type Writer struct {
	Alignment int
	keys      []string
	vals      []Value
	tensors   []wtensor
}

type wtensor struct {
	info TensorInfo
	data []byte
}

func (w *Writer) add(key string, v Value) { w.keys, w.vals = append(w.keys, key), append(w.vals, v) }

// Uint32, Float32, Bool and String add scalar metadata.
func (w *Writer) Uint32(key string, v uint32) { w.add(key, Value{Type: TypeUint32, v: int64(v)}) }
func (w *Writer) Int32(key string, v int32)   { w.add(key, Value{Type: TypeInt32, v: int64(v)}) }
func (w *Writer) Float32(key string, v float32) {
	w.add(key, Value{Type: TypeFloat32, v: float64(v)})
}
func (w *Writer) Bool(key string, v bool)     { w.add(key, Value{Type: TypeBool, v: v}) }
func (w *Writer) String(key string, v string) { w.add(key, Value{Type: TypeString, v: v}) }

// Strings and Int32s add arrays.
func (w *Writer) Strings(key string, v []string) {
	w.add(key, Value{Type: TypeArray, Elem: TypeString, v: v})
}
func (w *Writer) Int32s(key string, v []int64) {
	w.add(key, Value{Type: TypeArray, Elem: TypeInt32, v: v})
}

// Tensor adds a tensor of type t with the row-major shape (reversed into
// GGUF dims) and its bytes as stored.
func (w *Writer) Tensor(name string, t TensorType, shape []int, data []byte) error {
	info, ok := t.info()
	if !ok {
		return fmt.Errorf("gguf: tensor %q: type %v", name, t)
	}
	ti := TensorInfo{Name: name, Type: t, Dims: make([]uint64, len(shape))}
	for i, d := range shape {
		ti.Dims[len(shape)-1-i] = uint64(d)
	}
	if ti.Dims[0]%uint64(info.block) != 0 {
		return fmt.Errorf("gguf: tensor %q: rows of %d are not whole %v blocks", name, ti.Dims[0], t)
	}
	ti.Size = ti.Elems() / int64(info.block) * int64(info.bytes)
	if int64(len(data)) != ti.Size {
		return fmt.Errorf("gguf: tensor %q: %d bytes, its shape and type need %d", name, len(data), ti.Size)
	}
	w.tensors = append(w.tensors, wtensor{ti, data})
	return nil
}

// WriteTo writes the file.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	align := w.Alignment
	if align == 0 {
		align = DefaultAlignment
	}
	cw := &countWriter{w: bufio.NewWriterSize(out, 1<<20)}
	le := binary.LittleEndian
	put := func(v any) { _ = binary.Write(cw, le, v) }
	str := func(s string) { put(uint64(len(s))); _, _ = cw.Write([]byte(s)) }
	cw.Write([]byte(Magic))
	put(uint32(3))
	put(uint64(len(w.tensors)))
	put(uint64(len(w.keys)))
	var scalar func(t ValueType, v any)
	scalar = func(t ValueType, v any) {
		switch t {
		case TypeUint32:
			put(uint32(v.(int64)))
		case TypeInt32:
			put(int32(v.(int64)))
		case TypeFloat32:
			put(math.Float32bits(float32(v.(float64))))
		case TypeBool:
			b := uint8(0)
			if v.(bool) {
				b = 1
			}
			put(b)
		case TypeString:
			str(v.(string))
		}
	}
	for i, k := range w.keys {
		str(k)
		v := w.vals[i]
		put(uint32(v.Type))
		if v.Type != TypeArray {
			scalar(v.Type, v.v)
			continue
		}
		put(uint32(v.Elem))
		switch a := v.v.(type) {
		case []string:
			put(uint64(len(a)))
			for _, s := range a {
				str(s)
			}
		case []int64:
			put(uint64(len(a)))
			for _, x := range a {
				scalar(v.Elem, x)
			}
		}
	}
	off := uint64(0)
	for i := range w.tensors {
		t := &w.tensors[i].info
		t.Offset = off
		off += uint64(t.Size)
		off = (off + uint64(align) - 1) / uint64(align) * uint64(align)
		str(t.Name)
		put(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			put(d)
		}
		put(uint32(t.Type))
		put(t.Offset)
	}
	pad := func() {
		for cw.n%int64(align) != 0 {
			cw.Write([]byte{0})
		}
	}
	pad()
	for _, t := range w.tensors {
		cw.Write(t.data)
		pad()
	}
	if cw.err != nil {
		return cw.n, cw.err
	}
	return cw.n, cw.w.(*bufio.Writer).Flush()
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
