package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Matrix is a row-major block-quantized weight matrix with the HF Linear
// layout [out = Rows, in = Cols]: row r holds Cols/32 consecutive blocks of
// Format, exactly the bytes of a GGUF tensor of shape [Cols, Rows] (ggml
// lists ne0 = Cols first) and type Format.
type Matrix struct {
	Format     Format
	Rows, Cols int
	Data       []byte // Rows * RowBytes() bytes
	Layout     Layout // RowMajor unless Interleave reordered Data
}

// Quantize quantizes the row-major rows x cols float32 matrix w into a new
// Matrix of the given format (QuantizeQ8_0 / QuantizeQ4_0 / QuantizeQ4_K
// row by row). cols must be a positive multiple of the format's block (32,
// or 256 for Q4_K); every value must be finite.
func Quantize(format Format, w []float32, rows, cols int) (*Matrix, error) {
	if err := checkShape(format, rows, cols); err != nil {
		return nil, err
	}
	if len(w) < rows*cols {
		return nil, fmt.Errorf("wire: Quantize: len(w) = %d < rows*cols = %d", len(w), rows*cols)
	}
	m := &Matrix{Format: format, Rows: rows, Cols: cols}
	m.Data = make([]byte, rows*m.RowBytes())
	if err := QuantizeRows(format, m.Data, w[:rows*cols]); err != nil {
		return nil, err
	}
	return m, nil
}

// NewMatrix wraps existing block data (for instance a GGUF tensor's bytes;
// it is not copied) as a rows x cols Matrix, after checking the shape and
// the data length.
func NewMatrix(format Format, rows, cols int, data []byte) (*Matrix, error) {
	m := &Matrix{Format: format, Rows: rows, Cols: cols, Data: data}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

func checkShape(format Format, rows, cols int) error {
	if !format.Valid() {
		return fmt.Errorf("wire: unsupported format %v", format)
	}
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("wire: bad shape %d x %d", rows, cols)
	}
	if format.RowScaleBytes() == 0 && cols%QK != 0 {
		return fmt.Errorf("%w: cols = %d", ErrCols, cols)
	}
	if cols%format.BlockValues() != 0 {
		return fmt.Errorf("wire: %s rows are whole %d-value super-blocks, cols = %d", format, format.BlockValues(), cols)
	}
	if rows > maxElems/cols {
		return fmt.Errorf("wire: shape %d x %d too large", rows, cols)
	}
	return nil
}

// maxElems bounds rows*cols (and m*k) so that element and byte offsets
// never overflow an int.
const maxElems = math.MaxInt / 64

// Validate checks the format, the shape (cols a positive multiple of 32) and
// that Data holds at least Rows*RowBytes() bytes.
func (m *Matrix) Validate() error {
	if m == nil {
		return fmt.Errorf("wire: nil Matrix")
	}
	if err := checkShape(m.Format, m.Rows, m.Cols); err != nil {
		return err
	}
	if need := m.Rows * m.RowBytes(); len(m.Data) < need {
		return fmt.Errorf("wire: %s matrix %d x %d needs %d bytes, has %d", m.Format, m.Rows, m.Cols, need, len(m.Data))
	}
	switch {
	case m.Layout > Interleaved16:
		return fmt.Errorf("wire: unknown layout %d", m.Layout)
	}
	return nil
}

// BlocksPerRow returns Cols/32 (Cols/256 super-blocks for Q4_K), 0 for an
// invalid format.
func (m *Matrix) BlocksPerRow() int {
	if m.Format.BlockValues() == 0 {
		return 0
	}
	return m.Cols / m.Format.BlockValues()
}

// RowBytes returns the size of one row of blocks and its per-row bytes
// (Int8's scale), 0 for an invalid format.
func (m *Matrix) RowBytes() int {
	if !m.Format.Valid() {
		return 0
	}
	return m.BlocksPerRow()*m.Format.BlockBytes() + m.Format.RowScaleBytes()
}

// Row returns the row-major blocks of row r (a view of Data; a copy for an
// interleaved matrix), or nil when r is out of range or the matrix is
// invalid.
func (m *Matrix) Row(r int) []byte {
	if m.Validate() != nil || r < 0 || r >= m.Rows {
		return nil
	}
	rb := m.RowBytes()
	if m.Layout != RowMajor {
		row := make([]byte, rb)
		m.copyRow(row, r)
		return row
	}
	return m.Data[r*rb : (r+1)*rb : (r+1)*rb]
}

// Block returns block b of row r (a view of Row(r): the little-endian fp16
// scale, then the quants), or nil when out of range.
func (m *Matrix) Block(r, b int) []byte {
	row := m.Row(r)
	if row == nil || b < 0 || b >= m.BlocksPerRow() {
		return nil
	}
	bb := m.Format.BlockBytes()
	return row[b*bb : (b+1)*bb : (b+1)*bb]
}

// Scale returns the float32 value of the fp16 scale of block b of row r
// (0 when out of range); for Int8, the row's scale.
func (m *Matrix) Scale(r, b int) float32 {
	blk := m.Block(r, b)
	if blk == nil {
		return 0
	}
	if m.Format.RowScaleBytes() > 0 {
		return RowScaleInt8(m.Row(r))
	}
	return f16ToF32(binary.LittleEndian.Uint16(blk))
}

// DequantizeRow expands row r into dst[0:Cols].
func (m *Matrix) DequantizeRow(dst []float32, r int) error {
	row := m.Row(r)
	if row == nil {
		return fmt.Errorf("wire: DequantizeRow: row %d out of range (or invalid matrix)", r)
	}
	if len(dst) < m.Cols {
		return fmt.Errorf("wire: DequantizeRow: len(dst) = %d < %d", len(dst), m.Cols)
	}
	return dequantize(m.Format, dst[:m.Cols], row)
}

// DequantizeRowBuf is DequantizeRow that never allocates: an interleaved
// row is gathered into buf (at least RowBytes long) first. A gather of
// embedding rows in a decode step uses it.
func (m *Matrix) DequantizeRowBuf(dst []float32, r int, buf []byte) error {
	if m.Validate() != nil || r < 0 || r >= m.Rows {
		return fmt.Errorf("wire: DequantizeRow: row %d out of range (or invalid matrix)", r)
	}
	rb := m.RowBytes()
	if len(dst) < m.Cols {
		return fmt.Errorf("wire: DequantizeRow: len(dst) = %d < %d", len(dst), m.Cols)
	}
	row := m.Data[r*rb : (r+1)*rb : (r+1)*rb]
	if m.Layout != RowMajor {
		if len(buf) < rb {
			return fmt.Errorf("wire: DequantizeRow: buffer of %d bytes, a row is %d", len(buf), rb)
		}
		m.copyRow(buf, r)
		row = buf[:rb]
	}
	return dequantize(m.Format, dst[:m.Cols], row)
}

// Dequantize expands the whole matrix into dst[0:Rows*Cols] (row-major).
func (m *Matrix) Dequantize(dst []float32) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if len(dst) < m.Rows*m.Cols {
		return fmt.Errorf("wire: Dequantize: len(dst) = %d < %d", len(dst), m.Rows*m.Cols)
	}
	data, err := m.RowMajorData()
	if err != nil {
		return err
	}
	return dequantize(m.Format, dst[:m.Rows*m.Cols], data[:m.Rows*m.RowBytes()])
}

func dequantize(f Format, dst []float32, src []byte) error {
	c, ok := codecs[f]
	if !ok {
		return fmt.Errorf("wire: dequantize: unknown format %v", f)
	}
	return c.dequantize(dst, src)
}

// codec is a block format's reference quantizer and dequantizer.
type codec struct {
	quantize   func(dst []byte, src []float32) error
	dequantize func(dst []float32, src []byte) error
}

// codecs holds each format's functions (its facts are blockDTypes').
var codecs = map[Format]codec{
	Q8_0: {QuantizeQ8_0, DequantizeQ8_0},
	Q4_0: {QuantizeQ4_0, DequantizeQ4_0},
	Q4_K: {QuantizeQ4_K, DequantizeQ4_K},
	Int8: {QuantizeInt8, DequantizeInt8},
}

// QuantizeRows quantizes src (whole rows, each whole blocks of f) into
// dst's blocks of format f; rows are independent, so a chunk of rows may
// be quantized alone. An unknown format is an error.
func QuantizeRows(f Format, dst []byte, src []float32) error {
	c, ok := codecs[f]
	if !ok {
		return fmt.Errorf("wire: quantize: unknown format %v", f)
	}
	return c.quantize(dst, src)
}
