package eval

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"gelo/models/safetensors"
)

// The saved-logits file (--save-logits; read back by --kl-base) streams
// one record per scored token, so neither its writer nor its reader holds
// more than one row of the vocabulary. All integers are little-endian:
//
//	offset  size  field
//	0       8     magic "GELOLOGP"
//	8       4     version (1)
//	12      4     dtype of the values: 1 = f32, 2 = f16 (IEEE half)
//	16      4     vocab: values per record
//	20      4     ctx: the window the scored tokens were evaluated in
//	24      8     count: scored tokens, hence records
//	32      ...   count records, each: u32 the scored (target) token id,
//	              then vocab values: the log-softmax of that row's logits
//
// The header fixes the file's size (32 + count x (4 + vocab x width)), so
// a truncated or padded file is refused before any record is read.
const (
	logitsMagic   = "GELOLOGP"
	logitsVersion = 1
	headerSize    = 32

	// maxVocab and maxCount bound what a header may claim: far past any
	// tokenizer's vocabulary and any text, small enough that a row buffer
	// cannot be an allocation attack.
	maxVocab = 1 << 22
	maxCount = 1 << 40
)

// DType is the element type of the saved values.
type DType uint32

// The saved dtypes.
const (
	F32 DType = 1
	F16 DType = 2
)

// ParseDType reads a dtype name (f32 or f16).
func ParseDType(s string) (DType, error) {
	switch s {
	case "f32":
		return F32, nil
	case "f16":
		return F16, nil
	}
	return 0, fmt.Errorf("logits dtype %q: want f32 or f16", s)
}

func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case F16:
		return "f16"
	}
	return fmt.Sprintf("dtype(%d)", uint32(d))
}

// width is the bytes of one value (0 for an unknown dtype).
func (d DType) width() int {
	switch d {
	case F32:
		return 4
	case F16:
		return 2
	}
	return 0
}

// round returns v as the dtype stores it, so a run compared against a
// file sees its own values at the file's precision (a run against its own
// file then compares equal bits: KL exactly 0).
func (d DType) round(v float32) float32 {
	if d == F16 {
		return safetensors.F16ToF32(safetensors.F32ToF16(v))
	}
	return v
}

// Header is what a saved-logits file declares about its records.
type Header struct {
	DType DType
	Vocab int
	Ctx   int
	Count int64
}

// recordSize is the bytes of one record.
func (h Header) recordSize() int64 { return 4 + int64(h.Vocab)*int64(h.DType.width()) }

// size is the whole file's size under h.
func (h Header) size() int64 { return headerSize + h.Count*h.recordSize() }

func (h Header) check() error {
	if h.DType.width() == 0 {
		return fmt.Errorf("dtype %d: want 1 (f32) or 2 (f16)", uint32(h.DType))
	}
	if h.Vocab < 1 || h.Vocab > maxVocab {
		return fmt.Errorf("vocab %d: want 1..%d", h.Vocab, maxVocab)
	}
	if h.Ctx < minCtx || h.Ctx > maxVocab {
		return fmt.Errorf("ctx %d: want %d..%d", h.Ctx, minCtx, maxVocab)
	}
	if h.Count < 1 || h.Count > maxCount {
		return fmt.Errorf("count %d: want 1..%d", h.Count, int64(maxCount))
	}
	return nil
}

func (h Header) String() string {
	return fmt.Sprintf("vocab %d, ctx %d, %d scored tokens, %s", h.Vocab, h.Ctx, h.Count, h.DType)
}

// LogitsWriter streams records to a saved-logits file.
type LogitsWriter struct {
	w       *bufio.Writer
	h       Header
	n       int64
	scratch []byte
}

// NewLogitsWriter writes h's header to w; records follow by Write.
func NewLogitsWriter(w io.Writer, h Header) (*LogitsWriter, error) {
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("saved logits header: %w", err)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var b [headerSize]byte
	copy(b[:], logitsMagic)
	binary.LittleEndian.PutUint32(b[8:], logitsVersion)
	binary.LittleEndian.PutUint32(b[12:], uint32(h.DType))
	binary.LittleEndian.PutUint32(b[16:], uint32(h.Vocab))
	binary.LittleEndian.PutUint32(b[20:], uint32(h.Ctx))
	binary.LittleEndian.PutUint64(b[24:], uint64(h.Count))
	if _, err := bw.Write(b[:]); err != nil {
		return nil, err
	}
	return &LogitsWriter{w: bw, h: h, scratch: make([]byte, h.recordSize())}, nil
}

// Write appends one record: the scored token and its row of log-softmax
// values (len Vocab), rounded to the file's dtype.
func (lw *LogitsWriter) Write(token int32, logp []float32) error {
	if len(logp) != lw.h.Vocab {
		return fmt.Errorf("saved logits: row of %d values, header says vocab %d", len(logp), lw.h.Vocab)
	}
	if lw.n >= lw.h.Count {
		return fmt.Errorf("saved logits: record %d past the header's count %d", lw.n+1, lw.h.Count)
	}
	b := lw.scratch
	binary.LittleEndian.PutUint32(b, uint32(token))
	b = b[4:]
	if lw.h.DType == F16 {
		for i, v := range logp {
			binary.LittleEndian.PutUint16(b[2*i:], safetensors.F32ToF16(v))
		}
	} else {
		for i, v := range logp {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
	}
	lw.n++
	_, err := lw.w.Write(lw.scratch)
	return err
}

// Close flushes the records; a file with fewer records than its header
// declares is an error (the caller should not keep it).
func (lw *LogitsWriter) Close() error {
	if err := lw.w.Flush(); err != nil {
		return err
	}
	if lw.n != lw.h.Count {
		return fmt.Errorf("saved logits: %d records written, header declares %d", lw.n, lw.h.Count)
	}
	return nil
}

// LogitsReader reads a saved-logits file record by record.
type LogitsReader struct {
	r   io.Reader
	h   Header
	n   int64
	buf []byte
	row []float32
}

// NewLogitsReader reads and checks the header of a saved-logits file of
// size bytes (the file's size; a header that implies another size is
// refused as truncated or padded). Nothing past the header is read yet.
func NewLogitsReader(r io.Reader, size int64) (*LogitsReader, error) {
	var b [headerSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%d bytes: shorter than the %d-byte header of a saved-logits file", size, headerSize)
		}
		return nil, err
	}
	if string(b[:8]) != logitsMagic {
		return nil, fmt.Errorf("not a saved-logits file (magic %q, want %q)", b[:8], logitsMagic)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != logitsVersion {
		return nil, fmt.Errorf("saved-logits version %d: this gelo reads version %d", v, logitsVersion)
	}
	cnt := binary.LittleEndian.Uint64(b[24:])
	if cnt > maxCount {
		return nil, fmt.Errorf("header: count %d: want 1..%d", cnt, int64(maxCount))
	}
	h := Header{
		DType: DType(binary.LittleEndian.Uint32(b[12:])),
		Vocab: int(binary.LittleEndian.Uint32(b[16:])),
		Ctx:   int(binary.LittleEndian.Uint32(b[20:])),
		Count: int64(cnt),
	}
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if want := h.size(); size != want {
		what := "truncated"
		if size > want {
			what = "has trailing bytes"
		}
		return nil, fmt.Errorf("%s: %d bytes, but its header (%v) needs %d", what, size, h, want)
	}
	return &LogitsReader{r: r, h: h}, nil
}

// Header is the file's header.
func (lr *LogitsReader) Header() Header { return lr.h }

// Next reads the next record: the scored token and the row of log-softmax
// values (valid until the next call).
func (lr *LogitsReader) Next() (int32, []float32, error) {
	if lr.n >= lr.h.Count {
		return 0, nil, fmt.Errorf("record %d: past the header's count %d", lr.n+1, lr.h.Count)
	}
	if lr.buf == nil {
		lr.buf = make([]byte, lr.h.recordSize())
		lr.row = make([]float32, lr.h.Vocab)
	}
	if _, err := io.ReadFull(lr.r, lr.buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, fmt.Errorf("record %d of %d: truncated", lr.n+1, lr.h.Count)
		}
		return 0, nil, fmt.Errorf("record %d of %d: %w", lr.n+1, lr.h.Count, err)
	}
	tok := binary.LittleEndian.Uint32(lr.buf)
	if tok >= uint32(lr.h.Vocab) {
		return 0, nil, fmt.Errorf("record %d: token %d outside the vocabulary of %d", lr.n+1, tok, lr.h.Vocab)
	}
	b := lr.buf[4:]
	if lr.h.DType == F16 {
		for i := range lr.row {
			lr.row[i] = safetensors.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	} else {
		for i := range lr.row {
			lr.row[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	for i, v := range lr.row {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 1) {
			return 0, nil, fmt.Errorf("record %d: value %d is %v (a log-probability is finite or -Inf)", lr.n+1, i, v)
		}
	}
	lr.n++
	return int32(tok), lr.row, nil
}
