// Package keystream is the one ChaCha20 keystream of gelo's secret
// randomness: the per-pass mask material (lower/cpu/mask) and the
// sampler's uniforms (runtime) both draw from a Stream keyed through a KDF.
// Both are security code, so they live once, with the rekey that keeps
// x/crypto/chacha20 off its counter-overflow panic and the wipe that
// leaves no key material behind.
package keystream

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/hkdf"
)

// bufSize is the keystream generated per refill. It divides RekeyAfter,
// so the stream's bytes do not depend on it.
const bufSize = 4096

// RekeyAfter bounds the keystream drawn under one ChaCha20 key/nonce. The
// ChaCha20 block counter is 32 bits (256 GiB of keystream); long before
// that the stream deterministically rekeys itself from its own next 44
// bytes (key' || nonce').
const RekeyAfter = 1 << 37

// Stream is a ChaCha20 keystream read as little-endian 64-bit words. The
// same key and nonce give the same words on every machine. A draw is wiped
// from the buffer once read. The zero Stream, like a wiped one, is not
// keyed and yields zeros. A Stream is not safe for concurrent use.
type Stream struct {
	c     chacha20.Cipher
	buf   [bufSize]byte
	pos   int
	drawn uint64 // keystream bytes drawn under the current key
	live  bool
}

// Key wipes s, then keys it with a 32-byte key and a 12-byte nonce.
func (s *Stream) Key(key, nonce []byte) error {
	s.Wipe()
	c, err := chacha20.NewUnauthenticatedCipher(key, nonce)
	if err != nil {
		return err
	}
	s.c = *c
	*c = chacha20.Cipher{}
	s.pos = bufSize
	s.live = true
	return nil
}

// Live reports whether s is keyed (not nil, not wiped).
func (s *Stream) Live() bool { return s != nil && s.live }

func (s *Stream) refill() {
	if !s.live {
		clear(s.buf[:])
		s.pos = 0
		return
	}
	if s.drawn+bufSize > RekeyAfter {
		var kn [chacha20.KeySize + chacha20.NonceSize]byte
		s.c.XORKeyStream(kn[:], kn[:])
		_ = s.Key(kn[:chacha20.KeySize], kn[chacha20.KeySize:])
		clear(kn[:])
	}
	clear(s.buf[:])
	s.c.XORKeyStream(s.buf[:], s.buf[:])
	s.drawn += bufSize
	s.pos = 0
}

// Uint64 returns the next 64 keystream bits (little-endian).
func (s *Stream) Uint64() uint64 {
	if s.pos+8 > bufSize {
		s.refill()
	}
	v := binary.LittleEndian.Uint64(s.buf[s.pos:])
	clear(s.buf[s.pos : s.pos+8]) // a used draw is not kept around
	s.pos += 8
	return v
}

// Float64 returns a uniform value in [0, 1) from the top 53 bits of one
// 64-bit draw.
func (s *Stream) Float64() float64 {
	return float64(s.Uint64()>>11) * 0x1p-53
}

// Wipe zeroes the key schedule and the buffered keystream: afterwards s
// equals the zero Stream and yields zeros until keyed again.
func (s *Stream) Wipe() {
	if s == nil {
		return
	}
	*s = Stream{}
}

// KDF keys Streams from a secret with
//
//	HKDF-SHA256(secret, salt, info) -> 32-byte key || 12-byte nonce,
//
// the salt separating one use of a secret from every other. It keeps what
// HKDF derives from (secret, salt) alone, the PRK and the HMAC keyed with
// it, so rekeying for each pass with a new info allocates nothing; Forget
// wipes that cache.
type KDF struct {
	secret []byte // copy of the secret the cache is for
	salt   string
	prk    [sha256.Size]byte
	mac    hash.Hash
	t      [2 * sha256.Size]byte
	ctr    [1]byte
}

// Key keys s (wiping it first) from HKDF-SHA256(secret, salt, info). An
// empty secret is refused, leaving s wiped.
func (k *KDF) Key(s *Stream, secret []byte, salt string, info []byte) error {
	s.Wipe()
	if len(secret) == 0 {
		return errors.New("keystream: empty secret")
	}
	if k.mac == nil || k.salt != salt || !hmac.Equal(k.secret, secret) {
		k.Forget()
		prk := hkdf.Extract(sha256.New, secret, []byte(salt))
		copy(k.prk[:], prk)
		clear(prk)
		k.secret = append(k.secret[:0], secret...)
		k.salt = salt
		k.mac = hmac.New(sha256.New, k.prk[:])
	}
	// HKDF-Expand (RFC 5869) for 44 bytes: T1 = HMAC(PRK, info | 1),
	// T2 = HMAC(PRK, T1 | info | 2); the same bytes hkdf.Expand gives.
	okm := k.t[:0]
	for i := byte(1); i <= 2; i++ {
		k.mac.Reset()
		if i == 2 {
			k.mac.Write(k.t[:sha256.Size])
		}
		k.mac.Write(info)
		k.ctr[0] = i
		k.mac.Write(k.ctr[:])
		okm = k.mac.Sum(okm)
	}
	err := s.Key(k.t[:chacha20.KeySize], k.t[chacha20.KeySize:chacha20.KeySize+chacha20.NonceSize])
	clear(k.t[:])
	return err
}

// Forget wipes what k keeps of the secret. The HMAC's internal pads cannot
// be wiped through its API; they are dropped for the collector.
func (k *KDF) Forget() {
	if k == nil {
		return
	}
	clear(k.secret)
	k.secret = k.secret[:0]
	k.salt = ""
	clear(k.prk[:])
	clear(k.t[:])
	k.mac = nil
}
