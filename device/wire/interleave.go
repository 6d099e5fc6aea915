package wire

import "fmt"

// Layout is how a Matrix's blocks lie in Data. Every layout holds the same
// bytes (Rows * RowBytes()); only their order differs.
type Layout uint8

const (
	// RowMajor: row r's blocks at Data[r*RowBytes():], the GGUF layout
	// and the only one that crosses to a device.
	RowMajor Layout = iota
	// Interleaved8: the CPU's layout for its 8-row (AVX2) kernels. Rows
	// go in groups of G = 8; group g's bytes are where the row-major rows
	// G*g..G*g+G-1 are, and within a group block b is G blocks' bytes at
	// b*G*BlockBytes(), so a kernel streams each group from one place.
	// Q8_0 and Q4_0: first the G rows' fp16 scales (row r at 2r), then
	// the quants in 4-byte pieces, piece p of row r at 2G + 4G*p + 4r
	// (Q8_0: 8 pieces of 4 int8; Q4_0: 4 pieces of 4 packed bytes, low
	// nibbles elements 4p..4p+3 and high nibbles 16+4p..); a kernel then
	// reads one vector holding one piece of each of the G rows, so the
	// per-row sums need no horizontal reduction. Q4_K in pieces too: per
	// super-block, first the 4 dwords of the G rows' headers (d and dmin,
	// then the 12 bytes of packed scales), dword k of row r at 4Gk + 4r,
	// then the 128 quant bytes in 4-byte pieces, bytes 4p..4p+3 of row r
	// at 16G + 4Gp + 4r. Rows past the last whole group (Rows % G of them)
	// stay row-major at the end.
	Interleaved8
	// Interleaved16: Interleaved8's order with groups of G = 16 rows,
	// for the AVX-512 kernels (one 64-byte vector holds a piece of each
	// of the 16 rows), Q4_K included.
	Interleaved16
)

// InterleaveRows is the group size of Interleaved8.
const InterleaveRows = 8

// GroupRows returns the rows per group of layout l (1 for RowMajor).
func (l Layout) GroupRows() int {
	switch l {
	case Interleaved8:
		return 8
	case Interleaved16:
		return 16
	}
	return 1
}

// String names the layout.
func (l Layout) String() string {
	switch l {
	case RowMajor:
		return "row-major"
	case Interleaved8:
		return "interleaved8"
	case Interleaved16:
		return "interleaved16"
	}
	return fmt.Sprintf("layout(%d)", uint8(l))
}

// Interleave reorders a RowMajor Data in place into Interleaved8 (a no-op
// when already so).
func (m *Matrix) Interleave() error { return m.InterleaveTo(Interleaved8) }

// InterleaveTo reorders a RowMajor Data in place into layout l (a no-op
// when already in l). A matrix in another interleaved layout is refused.
func (m *Matrix) InterleaveTo(l Layout) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if m.Layout == l {
		return nil
	}
	if m.Layout != RowMajor {
		return fmt.Errorf("wire: interleave a %s matrix to %s: only a row-major one is reordered", m.Layout, l)
	}
	if l == RowMajor || l > Interleaved16 {
		return fmt.Errorf("wire: interleave to %s: not an interleaved layout", l)
	}
	if m.Format.RowScaleBytes() > 0 {
		return fmt.Errorf("wire: interleave a %s matrix: its rows are kept row-major", m.Format)
	}
	gr := l.GroupRows()
	gb := gr * m.RowBytes()
	tmp := make([]byte, gb)
	for g := 0; g < m.Rows/gr; g++ {
		grp := m.Data[g*gb : (g+1)*gb]
		copy(tmp, grp)
		interleaveGroup(m.Format, gr, grp, tmp, m.BlocksPerRow())
	}
	m.Layout = l
	return nil
}

// RowMajorData returns the row-major bytes: Data itself for a RowMajor
// matrix, a fresh copy otherwise.
func (m *Matrix) RowMajorData() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	n := m.Rows * m.RowBytes()
	if m.Layout == RowMajor {
		return m.Data[:n:n], nil
	}
	out := make([]byte, n)
	for r := 0; r < m.Rows; r++ {
		m.copyRow(out[r*m.RowBytes():], r)
	}
	return out, nil
}

// interleaveGroup writes the gr row-major rows rows (nb blocks each) into
// dst in the interleaved order of groups of gr rows.
func interleaveGroup(f Format, gr int, dst, rows []byte, nb int) {
	bb := f.BlockBytes()
	rb := nb * bb
	for b := 0; b < nb; b++ {
		out := dst[b*gr*bb:]
		for r := 0; r < gr; r++ {
			blk := rows[r*rb+b*bb:]
			if f == Q4_K {
				for p := 0; p < bb/4; p++ {
					at := 4*gr*p + 4*r
					copy(out[at:at+4], blk[4*p:4*p+4])
				}
				continue
			}
			out[2*r], out[2*r+1] = blk[0], blk[1]
			for p := 0; p < (bb-2)/4; p++ {
				at := 2*gr + 4*gr*p + 4*r
				copy(out[at:at+4], blk[2+4*p:2+4*p+4])
			}
		}
	}
}

// copyRow writes row r's row-major blocks into dst[:RowBytes()].
func (m *Matrix) copyRow(dst []byte, r int) {
	rb, bb := m.RowBytes(), m.Format.BlockBytes()
	gr := m.Layout.GroupRows()
	full := m.Rows / gr * gr
	if m.Layout == RowMajor || r >= full {
		copy(dst[:rb], m.Data[r*rb:(r+1)*rb])
		return
	}
	g, rr := r/gr, r%gr
	grp := m.Data[g*gr*rb:]
	for b := 0; b < m.BlocksPerRow(); b++ {
		src, blk := grp[b*gr*bb:], dst[b*bb:]
		if m.Format == Q4_K {
			for p := 0; p < bb/4; p++ {
				at := 4*gr*p + 4*rr
				copy(blk[4*p:4*p+4], src[at:at+4])
			}
			continue
		}
		blk[0], blk[1] = src[2*rr], src[2*rr+1]
		for p := 0; p < (bb-2)/4; p++ {
			at := 2*gr + 4*gr*p + 4*rr
			copy(blk[2+4*p:2+4*p+4], src[at:at+4])
		}
	}
}
