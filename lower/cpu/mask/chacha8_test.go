package mask

import (
	"math/rand/v2"
	"testing"
)

// TestCC8MatchesStdlib checks that cc8 (AVX2 block function where
// available, and the rand.ChaCha8 fallback) produces exactly the stream of
// math/rand/v2's ChaCha8 across several key epochs (992 bytes each).
func TestCC8MatchesStdlib(t *testing.T) {
	paths := []bool{false}
	if useCC8Asm {
		paths = append(paths, true)
	}
	defer func(v bool) { useCC8Asm = v }(useCC8Asm)
	for _, asm := range paths {
		useCC8Asm = asm
		for s := 0; s < 8; s++ {
			var seed [32]byte
			for i := range seed {
				seed[i] = byte(31*s + 7*i + s*i*i)
			}
			ref := rand.NewChaCha8(seed)
			var g cc8
			g.init(&seed)
			for i := 0; i < 2000; i++ {
				if got, want := g.next(), ref.Uint64(); got != want {
					t.Fatalf("asm=%v seed %d word %d: %#x, want %#x", asm, s, i, got, want)
				}
			}
			g.wipe()
			if g != (cc8{}) {
				t.Fatal("wipe left state behind")
			}
		}
	}
}
