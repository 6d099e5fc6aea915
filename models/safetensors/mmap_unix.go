//go:build unix

package safetensors

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps path read-only. An empty file cannot be mapped and is read
// instead (it is then rejected as too short).
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	size := st.Size()
	if size == 0 {
		return []byte{}, nil, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%d bytes do not fit the address space", size)
	}
	buf, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return buf, func() error { return syscall.Munmap(buf) }, nil
}

// dropPages tells the kernel this process no longer needs the whole pages
// of mapping buf that lie inside buf[lo:hi]: they leave its resident set
// (a mapping's pages count in RSS) and stay in the page cache, where the
// next read finds them. The mapping is read-only and shared, so nothing is
// lost; a page partly outside [lo, hi) is kept for its neighbour.
func dropPages(buf []byte, lo, hi int64) {
	page := int64(os.Getpagesize())
	lo = (lo + page - 1) / page * page
	hi = hi / page * page
	if hi <= lo || hi > int64(len(buf)) {
		return
	}
	_ = syscall.Madvise(buf[lo:hi], syscall.MADV_DONTNEED) // advice only: a refusal leaves pages resident, never wrong
}
