package keystream

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"testing"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/hkdf"
)

func testKey() (key, nonce []byte) {
	key, nonce = make([]byte, chacha20.KeySize), make([]byte, chacha20.NonceSize)
	for i := range key {
		key[i] = byte(i)
	}
	nonce[7] = 0x4a // RFC 8439 2.4.2's nonce
	return key, nonce
}

// TestKnownAnswer: the words are x/crypto/chacha20's keystream, read little
// endian, across several refills.
func TestKnownAnswer(t *testing.T) {
	key, nonce := testKey()
	var s Stream
	if err := s.Key(key, nonce); err != nil {
		t.Fatal(err)
	}
	c, _ := chacha20.NewUnauthenticatedCipher(key, nonce)
	ref := make([]byte, 3*bufSize+24)
	c.XORKeyStream(ref, ref)
	for i := 0; i < len(ref)/8; i++ {
		if got, want := s.Uint64(), binary.LittleEndian.Uint64(ref[8*i:]); got != want {
			t.Fatalf("word %d = %#x, want %#x", i, got, want)
		}
	}
	s.Wipe()
	_ = s.Key(key, nonce)
	if w := s.Uint64(); w != binary.LittleEndian.Uint64(ref) {
		t.Fatal("rekeyed stream does not restart")
	}
	if f := s.Float64(); f < 0 || f >= 1 || f != float64(binary.LittleEndian.Uint64(ref[8:])>>11)*0x1p-53 {
		t.Fatalf("Float64 = %v", f)
	}
}

// TestRekey: near the per-key limit the stream rekeys from its own next 44
// bytes, deterministically and without the chacha20 counter panic.
func TestRekey(t *testing.T) {
	key, nonce := testKey()
	var a, b Stream
	_ = a.Key(key, nonce)
	_ = b.Key(key, nonce)
	a.drawn, b.drawn = RekeyAfter-bufSize, RekeyAfter-bufSize
	a.Uint64() // refill at drawn = RekeyAfter - bufSize: no rekey yet
	b.Uint64()
	a.pos, b.pos = bufSize, bufSize // next draw refills at drawn = RekeyAfter
	x, y := a.Uint64(), b.Uint64()
	if x != y {
		t.Fatal("rekeyed streams differ")
	}
	if a.drawn != bufSize {
		t.Fatalf("no rekey: %d bytes drawn under one key", a.drawn)
	}
	for range 3 * bufSize / 8 {
		if a.Uint64() != b.Uint64() {
			t.Fatal("rekeyed streams differ")
		}
	}
}

// TestRekeyDerivation: the new key and nonce are the 44 keystream bytes
// that would have come next.
func TestRekeyDerivation(t *testing.T) {
	key, nonce := testKey()
	var s Stream
	_ = s.Key(key, nonce)
	s.drawn = RekeyAfter // as if 2^37 bytes had been drawn
	s.pos = bufSize
	var kn [chacha20.KeySize + chacha20.NonceSize]byte
	s2 := s // same cipher state: its next 44 bytes are key' || nonce'
	s2.c.XORKeyStream(kn[:], kn[:])
	c, _ := chacha20.NewUnauthenticatedCipher(kn[:chacha20.KeySize], kn[chacha20.KeySize:])
	want := make([]byte, 8)
	c.XORKeyStream(want, want)
	if got := s.Uint64(); got != binary.LittleEndian.Uint64(want) {
		t.Fatalf("after rekey %#x, want %#x", got, binary.LittleEndian.Uint64(want))
	}
}

func TestWipe(t *testing.T) {
	key, nonce := testKey()
	var s Stream
	_ = s.Key(key, nonce)
	s.Uint64()
	s.Wipe()
	if s != (Stream{}) || s.Live() {
		t.Fatal("key schedule or keystream kept after Wipe")
	}
	if s.Uint64() != 0 || s.Float64() != 0 {
		t.Fatal("wiped stream produced material")
	}
	// A used draw is wiped from the buffer at once.
	_ = s.Key(key, nonce)
	s.Uint64()
	for _, b := range s.buf[:8] {
		if b != 0 {
			t.Fatal("a drawn word stays in the buffer")
		}
	}
}

// TestKDF: HKDF-SHA256 -> key || nonce, as hkdf.New gives, the cache
// following the secret and the salt, and Forget wiping it.
func TestKDF(t *testing.T) {
	secret, info := []byte("gelo-test-session-key"), []byte("pass\x00\x00\x00\x00\x00\x00\x00\x07")
	want := func(salt string, info []byte) uint64 {
		var okm [44]byte
		_, _ = io.ReadFull(hkdf.New(sha256.New, secret, []byte(salt), info), okm[:])
		var s Stream
		_ = s.Key(okm[:32], okm[32:])
		return s.Uint64()
	}
	var k KDF
	var s Stream
	for _, c := range []struct {
		salt string
		info []byte
	}{{"gelo/mask/v1", info}, {"gelo/mask/v1", []byte("pass\x00\x00\x00\x00\x00\x00\x00\x08")},
		{"gelo/sample/v1", []byte("sampler")}, {"gelo/mask/v1", info}} {
		if err := k.Key(&s, secret, c.salt, c.info); err != nil {
			t.Fatal(err)
		}
		if got := s.Uint64(); got != want(c.salt, c.info) {
			t.Fatalf("salt %q info %q: %#x, want %#x", c.salt, c.info, got, want(c.salt, c.info))
		}
	}
	// The mask stream's pinned first word (lower/cpu/mask's known answer).
	_ = k.Key(&s, secret, "gelo/mask/v1", info)
	if w := s.Uint64(); w != 0x118d01afa974c85e {
		t.Fatalf("mask pass 7 starts %#x", w)
	}
	k.Forget()
	for _, b := range k.prk {
		if b != 0 {
			t.Fatal("PRK kept after Forget")
		}
	}
	if k.mac != nil || len(k.secret) != 0 {
		t.Fatal("secret kept after Forget")
	}
	if err := k.Key(&s, nil, "x", nil); err == nil || s.Live() {
		t.Fatal("empty secret accepted")
	}
}

func TestKeyAllocatesNothing(t *testing.T) {
	var k KDF
	var s Stream
	secret, a, b := []byte("k"), []byte("a"), []byte("b")
	_ = k.Key(&s, secret, "salt", a)
	if a := testing.AllocsPerRun(50, func() { _ = k.Key(&s, secret, "salt", b); s.Uint64() }); a != 0 {
		t.Fatalf("%v allocations per rekey", a)
	}
}
