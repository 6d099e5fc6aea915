package cpuid

import (
	"os"
	"strings"
)

// AMX reports whether this process may run Intel AMX tile instructions
// with int8 and bf16 multiplies (AMX-TILE, AMX-INT8, AMX-BF16): the CPU has
// them and the kernel granted the process the tile data state. Linux keeps
// that state off until a process asks for it (arch_prctl
// ARCH_REQ_XCOMP_PERM); a tile load before the request raises SIGILL, as
// llama.cpp's AMX kernels did on the Intel Xeon kind. The request is made
// once, here, at init; a refusal (an older kernel, a hypervisor that does
// not pass the state through) leaves AMX false and the AVX-512 kernels run.
// GELO_AMX=0 (or off, or false) in the environment turns it off without
// asking (same bits either way): a guest kernel that lost tile state
// across a context switch would corrupt the tile kernels' sums, which has
// been reported of some Firecracker guests (none was lost on the Intel
// Xeon kind, see the quant package's TestAMXUnderPreemption).
var AMX = amxWanted(os.Getenv("GELO_AMX")) && requestAMX()

// amxWanted reports whether the GELO_AMX value env leaves AMX on: all but
// 0, off and false (any case).
func amxWanted(env string) bool {
	switch strings.ToLower(strings.TrimSpace(env)) {
	case "0", "off", "false":
		return false
	}
	return true
}
