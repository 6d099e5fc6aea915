//go:build amd64 && !purego

package mask

import "golang.org/x/sys/cpu"

// useCC8Asm selects the AVX2 ChaCha8 block function. It is a variable
// only so tests can compare it against the rand.ChaCha8 fallback.
var useCC8Asm = cpu.X86.HasAVX2

// cc8Block8 computes chacha8rand blocks counter..counter+7 of key seed
// into buf: blocks counter..counter+3 as the interleaved chunk buf[0:32],
// counter+4..counter+7 as buf[32:64].
//
//go:noescape
func cc8Block8(seed *[4]uint64, buf *[64]uint64, counter uint32)

func useCC8AsmAvailable() bool { return cpu.X86.HasAVX2 }
