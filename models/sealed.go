package models

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"

	"gelo/models/safetensors"
)

// sealPiece is the span each digest of a sealedRange covers: small enough
// that a read's partial pieces at either end cost little to re-read.
const sealPiece = 64 << 10

// sealedRange is a tensor's bytes in a file, read after Private with
// pread into memory of the process's own, each sealPiece-byte piece
// checked against the SHA-256 digest Private took of it. What was hashed
// is then what computes, as with a private copy of the file, without one:
// a later write to the file makes the read fail, naming the tensor.
type sealedRange struct {
	f    io.ReaderAt
	path string // the file's, for errors
	name string // the tensor's, for errors
	off  int64  // in the file
	size int64
	sums [][sha256.Size]byte
}

// sealStep is how many bytes a fill reads through a sealedRange at a time:
// 16 pieces, so re-reading a piece that straddles two steps costs little.
const sealStep = 16 * sealPiece

// sealBufs are the pieces' scratch, shared by every read.
var sealBufs = sync.Pool{New: func() any { b := make([]byte, sealPiece); return &b }}

// sealRange reads size bytes at off in f (the file at path), piece by
// piece, and returns them sealed.
func sealRange(f io.ReaderAt, path, name string, off, size int64) (*sealedRange, error) {
	s := &sealedRange{f: f, path: path, name: name, off: off, size: size}
	bp := sealBufs.Get().(*[]byte)
	defer sealBufs.Put(bp)
	for lo := int64(0); lo < size; lo += sealPiece {
		n := min(sealPiece, size-lo)
		b := (*bp)[:n]
		if _, err := f.ReadAt(b, off+lo); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("%s: tensor %q: %w", path, name, err)
		}
		s.sums = append(s.sums, sha256.Sum256(b))
	}
	return s, nil
}

// read copies bytes [lo, hi) of the range into dst (len hi-lo), every
// piece they touch read whole and checked.
func (s *sealedRange) read(lo, hi int64, dst []byte) error {
	if lo < 0 || hi < lo || hi > s.size || int64(len(dst)) != hi-lo {
		return fmt.Errorf("%s: tensor %q: bytes [%d, %d) of %d into %d", s.path, s.name, lo, hi, s.size, len(dst))
	}
	bp := sealBufs.Get().(*[]byte)
	defer sealBufs.Put(bp)
	for p := lo / sealPiece; p*sealPiece < hi; p++ {
		a, e := p*sealPiece, min((p+1)*sealPiece, s.size)
		b := (*bp)[:e-a]
		if a >= lo && e <= hi {
			b = dst[a-lo : e-lo] // a whole piece: read straight into place
		}
		if _, err := s.f.ReadAt(b, s.off+a); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("%s: tensor %q: the file changed after it was checked (%w)", s.path, s.name, err)
		}
		if sha256.Sum256(b) != s.sums[p] {
			return fmt.Errorf("%s: tensor %q: the file changed after it was checked (bytes %d-%d differ from what was hashed)", s.path, s.name, a, e)
		}
		if a < lo || e > hi {
			copy(dst[max(a, lo)-lo:min(e, hi)-lo], b[max(a, lo)-a:min(e, hi)-a])
		}
	}
	return nil
}

// readBuf reads bytes [lo, hi) into a pooled buffer and returns it with
// the function that gives it back.
func (s *sealedRange) readBuf(lo, hi int64) ([]byte, func(), error) {
	bp := byteBufs.Get().(*[]byte)
	if int64(cap(*bp)) < hi-lo {
		*bp = make([]byte, hi-lo)
	}
	b := (*bp)[:hi-lo]
	if err := s.read(lo, hi, b); err != nil {
		byteBufs.Put(bp)
		return nil, nil, err
	}
	return b, func() { byteBufs.Put(bp) }, nil
}

// byteBufs are scratch for bytes read through a sealedRange.
var byteBufs = sync.Pool{New: func() any { return new([]byte) }}

// fill is a fillFunc over the range holding a tensor of a safetensors
// dtype (esize bytes an element): every read checked.
func (s *sealedRange) fill(dtype string, esize int) fillFunc {
	return func(lo, hi int, dst []float32) error {
		// A step ends on a sealStep boundary (esize divides it), so no
		// piece is read and hashed twice.
		step := sealStep / esize
		for a := lo; a < hi; {
			e := min(hi, (a/step+1)*step)
			b, done, err := s.readBuf(int64(a*esize), int64(e*esize))
			if err != nil {
				return err
			}
			err = safetensors.DecodeFloat32(dtype, b, dst[a-lo:e-lo])
			done()
			if err != nil {
				return err
			}
			a = e
		}
		return nil
	}
}
