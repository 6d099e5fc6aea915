package wire

// Layout is how a Matrix's blocks lie in Data. Both layouts hold the same
// bytes (Rows * RowBytes()); only their order differs.
type Layout uint8

const (
	// RowMajor: row r's blocks at Data[r*RowBytes():], the GGUF layout
	// and the only one that crosses to a device.
	RowMajor Layout = iota
	// Interleaved8: the CPU's layout for its 8-row kernels. Rows go in
	// groups of 8; group G's bytes are where the row-major rows
	// 8G..8G+7 are, and within a group block b is 8 blocks' bytes at
	// b*8*BlockBytes(), so a kernel streams each group from one place.
	// Q8_0 and Q4_0: first the 8 rows' fp16 scales (row r at 2r), then
	// the quants in 4-byte pieces, piece p of row r at 16 + 32p + 4r
	// (Q8_0: 8 pieces of 4 int8; Q4_0: 4 pieces of 4 packed bytes, low
	// nibbles elements 4p..4p+3 and high nibbles 16+4p..); a kernel then
	// reads one 32-byte vector holding one piece of each of the 8 rows,
	// so the per-row sums need no horizontal reduction. Q4_K: the 8 rows'
	// block_q4_K super-blocks whole, row r's at 144r (its kernel already
	// reduces per row). Rows past the last whole group (Rows % 8 of them)
	// stay row-major at the end.
	Interleaved8
)

// InterleaveRows is the group size of Interleaved8.
const InterleaveRows = 8

// Interleave reorders Data in place from RowMajor to Interleaved8 (a no-op
// when already interleaved).
func (m *Matrix) Interleave() error {
	if err := m.Validate(); err != nil {
		return err
	}
	if m.Layout == Interleaved8 {
		return nil
	}
	gb := InterleaveRows * m.RowBytes()
	tmp := make([]byte, gb)
	for g := 0; g < m.Rows/InterleaveRows; g++ {
		grp := m.Data[g*gb : (g+1)*gb]
		copy(tmp, grp)
		interleaveGroup(m.Format, grp, tmp, m.BlocksPerRow())
	}
	m.Layout = Interleaved8
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

// interleaveGroup writes the 8 row-major rows rows (nb blocks each) into
// dst in the Interleaved8 order.
func interleaveGroup(f Format, dst, rows []byte, nb int) {
	bb := f.BlockBytes()
	rb := nb * bb
	for b := 0; b < nb; b++ {
		out := dst[b*InterleaveRows*bb:]
		for r := 0; r < InterleaveRows; r++ {
			blk := rows[r*rb+b*bb:]
			if f == Q4_K {
				copy(out[r*bb:(r+1)*bb], blk[:bb])
				continue
			}
			out[2*r], out[2*r+1] = blk[0], blk[1]
			for p := 0; p < (bb-2)/4; p++ {
				copy(out[16+32*p+4*r:16+32*p+4*r+4], blk[2+4*p:2+4*p+4])
			}
		}
	}
}

// copyRow writes row r's row-major blocks into dst[:RowBytes()].
func (m *Matrix) copyRow(dst []byte, r int) {
	rb, bb := m.RowBytes(), m.Format.BlockBytes()
	full := m.Rows / InterleaveRows * InterleaveRows
	if m.Layout == RowMajor || r >= full {
		copy(dst[:rb], m.Data[r*rb:(r+1)*rb])
		return
	}
	g, rr := r/InterleaveRows, r%InterleaveRows
	grp := m.Data[g*InterleaveRows*rb:]
	for b := 0; b < m.BlocksPerRow(); b++ {
		src, blk := grp[b*InterleaveRows*bb:], dst[b*bb:]
		if m.Format == Q4_K {
			copy(blk[:bb], src[rr*bb:(rr+1)*bb])
			continue
		}
		blk[0], blk[1] = src[2*rr], src[2*rr+1]
		for p := 0; p < (bb-2)/4; p++ {
			copy(blk[2+4*p:2+4*p+4], src[16+32*p+4*rr:])
		}
	}
}
