//go:build !unix

package safetensors

import (
	"fmt"
	"os"
)

// mapFile reads the whole file where memory mapping is not wired up.
func mapFile(path string) ([]byte, func() error, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return buf, nil, nil
}

// dropPages is a no-op where the file is read whole into memory.
func dropPages([]byte, int64, int64) {}

// DropMapped is a no-op where the file is read whole into memory.
func DropMapped([]byte) {}
