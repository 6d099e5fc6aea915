//go:build !amd64 || purego

package mask

// useCC8Asm is false without assembly: cc8 refills from rand.ChaCha8.
var useCC8Asm = false

func cc8Block8(seed *[4]uint64, buf *[64]uint64, counter uint32) { panic(noAsm) }

func useCC8AsmAvailable() bool { return false }
