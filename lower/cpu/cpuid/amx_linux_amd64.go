//go:build !purego

package cpuid

import (
	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

// Linux's arch_prctl codes for the dynamically enabled XSAVE features
// (arch/x86/include/uapi/asm/prctl.h) and the tile data feature number.
const (
	archReqXcompPerm = 0x1023
	xfeatureTileData = 18
)

func requestAMX() bool {
	if !cpu.X86.HasAMXTile || !cpu.X86.HasAMXInt8 || !cpu.X86.HasAMXBF16 || !cpu.X86.HasAVX512 {
		return false
	}
	_, _, errno := unix.Syscall(unix.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureTileData, 0)
	return errno == 0
}
