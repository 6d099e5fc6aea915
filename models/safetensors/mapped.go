package safetensors

import (
	"fmt"
	"io/fs"
	"os"
)

// openMapped opens path, checks that it is a regular file and maps it
// read-only (reads it whole where mapping is not wired up). The open file
// stays open, with its Stat as of the mapping, so that later reads
// (pread) and Unchanged see the very file that was mapped, not whatever
// the path names by then. On error nothing stays open.
func openMapped(path string) (buf []byte, unmap func() error, f *os.File, st os.FileInfo, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, nil, nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, nil, nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	if buf, unmap, err = mapOpen(f, st); err != nil {
		f.Close()
		return nil, nil, nil, nil, err
	}
	return buf, unmap, f, st, nil
}

// mapFile maps path read-only; unmap, when not nil, releases the mapping.
func mapFile(path string) ([]byte, func() error, error) {
	buf, unmap, f, _, err := openMapped(path)
	if err != nil {
		return nil, nil, err
	}
	f.Close() // a mapping outlives the descriptor it was made from
	return buf, unmap, nil
}

// Mapped is a file mapped read-only together with the open file it was
// mapped from and that file's Stat at the time.
type Mapped struct {
	// Buf is the file's bytes (a mapping, or a copy where mapping is not
	// wired up); nil after Unmap.
	Buf []byte
	// File is the open file Buf was mapped from: read it (ReadAt) to see
	// the same file whatever its path names later.
	File  *os.File
	stat  os.FileInfo
	unmap func() error
}

// MapOpen maps path read-only and keeps it open (see Mapped).
func MapOpen(path string) (*Mapped, error) {
	buf, unmap, f, st, err := openMapped(path)
	if err != nil {
		return nil, err
	}
	return &Mapped{Buf: buf, File: f, stat: st, unmap: unmap}, nil
}

// Unmap releases the mapping (Buf is nil afterwards); the file stays open.
// Unmapping twice is fine.
func (m *Mapped) Unmap() error {
	m.Buf = nil
	if m.unmap == nil {
		return nil
	}
	u := m.unmap
	m.unmap = nil
	return u()
}

// Close unmaps and closes the file.
func (m *Mapped) Close() error {
	err := m.Unmap()
	if e := m.File.Close(); err == nil {
		err = e
	}
	return err
}

// Unchanged reports an error when the open file's size or modification
// time differs from when it was mapped: it was written since (a write
// within the same tick of the file system's clock as the one before the
// mapping may go unseen; a file replaced by rename is not this one and
// does not count).
func (m *Mapped) Unchanged() error { return unchanged(m.File.Name(), m.File, m.stat) }

// unchanged compares f's Stat now with was (name is f's, for errors).
func unchanged(name string, f interface{ Stat() (fs.FileInfo, error) }, was fs.FileInfo) error {
	now, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if now.Size() != was.Size() || !now.ModTime().Equal(was.ModTime()) {
		return fmt.Errorf("%s changed while it was being loaded (size %d -> %d, modified %s -> %s)", name,
			was.Size(), now.Size(), was.ModTime().Format("15:04:05.000000000"), now.ModTime().Format("15:04:05.000000000"))
	}
	return nil
}
