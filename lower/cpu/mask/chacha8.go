package mask

import (
	"encoding/binary"
	"math/rand/v2"
)

// cc8 is a ChaCha8 generator whose output is, word for word, the stream
// of math/rand/v2's ChaCha8 (C2SP chacha8rand) for the same seed; tests
// check the equality. It exists because rand.ChaCha8 hands out one
// uint64 per (non-inlined) call and its state escapes to the heap, while
// the shield's ziggurat wants to read whole buffers of words in a tight
// loop, and to own (and wipe) the state.
//
// chacha8rand, in short: a 32-byte key (seed) gives 16 ChaCha8 blocks
// (counters 0..15, zero nonce, 8 rounds, key words added back, constant
// and counter words not), emitted in four chunks of four blocks
// interleaved word by word; the last 32 bytes of the 16th block become the
// next key and are never output (992 bytes of output per key). Old keys
// are therefore overwritten as the generator runs.
//
// With AVX2 (amd64, no purego tag) cc8 computes two chunks (8 blocks) per
// call in cc8Block8; otherwise it refills its buffer from an embedded
// rand.ChaCha8, which produces the same stream. Either way the buffer is
// refilled in segments of 64 and 60 words alternately (blocks 0..7, then
// blocks 8..15 less the next key), so consumers that work segment by
// segment (zigFill) see the same segments on both paths.
type cc8 struct {
	buf  [64]uint64 // two chunks
	seed [4]uint64  // current key (assembly path)
	i, n uint32     // next word, end of valid words in buf (0 <= i <= n <= 64)
	half uint32     // segment in buf: 0 = blocks 0..7, 1 = blocks 8..15
	std  rand.ChaCha8
}

// init keys g with seed and buffers its first words.
func (g *cc8) init(seed *[32]byte) {
	if useCC8Asm {
		for k := range g.seed {
			g.seed[k] = binary.LittleEndian.Uint64(seed[8*k:])
		}
		cc8Block8(&g.seed, &g.buf, 0)
		g.half, g.i, g.n = 0, 0, 64
		return
	}
	g.std.Seed(*seed)
	g.half = 0
	g.refill()
}

// next returns the next word of the stream.
func (g *cc8) next() uint64 {
	if g.i >= g.n {
		g.refill()
	}
	v := g.buf[g.i&63]
	g.i++
	return v
}

func (g *cc8) refill() {
	g.i = 0
	if !useCC8Asm {
		// Same segmentation as the assembly path: 64 words, then 60.
		g.n = 64 - 4*g.half
		for k := range g.buf[:g.n] {
			g.buf[k] = g.std.Uint64()
		}
		g.half ^= 1
		return
	}
	if g.half == 0 {
		cc8Block8(&g.seed, &g.buf, 8)
		g.half, g.n = 1, 60 // the last 4 words are the next key
		return
	}
	copy(g.seed[:], g.buf[60:])
	cc8Block8(&g.seed, &g.buf, 0)
	g.half, g.n = 0, 64
}

// wipe zeroes the whole state (key, buffered output, embedded fallback
// generator). It is not inlined, so the stores cannot be dropped as dead.
//
//go:noinline
func (g *cc8) wipe() { *g = cc8{} }
