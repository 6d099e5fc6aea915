//go:build !unix

package safetensors

import "os"

// mapOpen reads the whole open file f where memory mapping is not wired
// up.
func mapOpen(f *os.File, st os.FileInfo) ([]byte, func() error, error) {
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil {
		return nil, nil, err
	}
	return buf, nil, nil
}

// dropPages is a no-op where the file is read whole into memory.
func dropPages([]byte, int64, int64) {}

// DropMapped is a no-op where the file is read whole into memory.
func DropMapped([]byte) {}
