package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/hkdf"
)

// SampleKDFSalt is the HKDF-SHA256 salt that separates the sampler's
// randomness from every other use of a key; SampleKDFInfo is its info.
const (
	SampleKDFSalt = "gelo/sample/v1"
	SampleKDFInfo = "sampler"
)

// sampleRNGBuf is the keystream buffered per refill (32 draws).
const sampleRNGBuf = 256

// sampleRekeyAfter bounds the keystream drawn under one ChaCha20
// key/nonce, far below the 2^32-block counter limit (256 GiB) at which
// x/crypto/chacha20 would panic; the stream then rekeys itself from its
// own next 44 bytes, deterministically.
const sampleRekeyAfter = 1 << 37

// sampleRNG is the sampler's uniform source: the ChaCha20 keystream under
//
//	HKDF-SHA256(secret = key, salt = "gelo/sample/v1", info = "sampler")
//	  -> 32-byte key || 12-byte nonce,
//
// read as little-endian 64-bit words. Same key, same stream, on every
// machine.
type sampleRNG struct {
	c     chacha20.Cipher
	buf   [sampleRNGBuf]byte
	pos   int
	drawn uint64
	live  bool
}

func (r *sampleRNG) reset(key []byte) error {
	r.zeroise()
	if len(key) == 0 {
		return errors.New("sampler: empty key")
	}
	prk := hkdf.Extract(sha256.New, key, []byte(SampleKDFSalt))
	var okm [chacha20.KeySize + chacha20.NonceSize]byte
	_, err := hkdf.Expand(sha256.New, prk, []byte(SampleKDFInfo)).Read(okm[:])
	clear(prk)
	if err == nil {
		err = r.rekey(okm[:chacha20.KeySize], okm[chacha20.KeySize:])
	}
	clear(okm[:])
	return err
}

func (r *sampleRNG) rekey(key, nonce []byte) error {
	c, err := chacha20.NewUnauthenticatedCipher(key, nonce)
	if err != nil {
		return err
	}
	r.c = *c
	*c = chacha20.Cipher{}
	r.pos = sampleRNGBuf
	r.drawn = 0
	r.live = true
	return nil
}

func (r *sampleRNG) refill() {
	if !r.live {
		clear(r.buf[:])
		r.pos = 0
		return
	}
	if r.drawn+sampleRNGBuf > sampleRekeyAfter {
		var kn [chacha20.KeySize + chacha20.NonceSize]byte
		r.c.XORKeyStream(kn[:], kn[:])
		_ = r.rekey(kn[:chacha20.KeySize], kn[chacha20.KeySize:])
		clear(kn[:])
	}
	clear(r.buf[:])
	r.c.XORKeyStream(r.buf[:], r.buf[:])
	r.drawn += sampleRNGBuf
	r.pos = 0
}

// uint64 returns the next 64 keystream bits (little-endian).
func (r *sampleRNG) uint64() uint64 {
	if r.pos+8 > sampleRNGBuf {
		r.refill()
	}
	v := binary.LittleEndian.Uint64(r.buf[r.pos:])
	clear(r.buf[r.pos : r.pos+8]) // a used draw is not kept around
	r.pos += 8
	return v
}

// float64 returns a uniform value in [0, 1) from the top 53 bits of one
// 64-bit draw.
func (r *sampleRNG) float64() float64 {
	return float64(r.uint64()>>11) * 0x1p-53
}

func (r *sampleRNG) zeroise() {
	r.c = chacha20.Cipher{}
	clear(r.buf[:])
	r.pos = sampleRNGBuf
	r.drawn = 0
	r.live = false
}
