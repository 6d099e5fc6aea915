//go:build unix

package safetensors

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// mapOpen maps the open regular file f (st its Stat) read-only. An empty
// file cannot be mapped and is read instead (it is then rejected as too
// short).
func mapOpen(f *os.File, st os.FileInfo) ([]byte, func() error, error) {
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
	if lo < 0 || hi > int64(len(buf)) || hi <= lo {
		return
	}
	DropMapped(buf[lo:hi])
}

// DropMapped drops the whole pages inside b, a view of a mapping MapFile
// made (a tensor's bytes), from the resident set: they stay in the page
// cache. b must lie in such a mapping: on memory of the process's own,
// MADV_DONTNEED would discard what it holds.
func DropMapped(b []byte) {
	if len(b) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (addr + page - 1) &^ (page - 1)
	hi := (addr + uintptr(len(b))) &^ (page - 1)
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(b[lo-addr:hi-addr], syscall.MADV_DONTNEED) // advice only: a refusal leaves pages resident, never wrong
}
