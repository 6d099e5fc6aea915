package runtime

import (
	"fmt"

	"gelo/keystream"
)

// SampleKDFSalt is the HKDF-SHA256 salt that separates the sampler's
// randomness from every other use of a key; SampleKDFInfo is its info.
const (
	SampleKDFSalt = "gelo/sample/v1"
	SampleKDFInfo = "sampler"
)

// keySampleStream keys the sampler's uniform source: the ChaCha20
// keystream (gelo/keystream) under
//
//	HKDF-SHA256(secret = key, salt = "gelo/sample/v1", info = "sampler")
//	  -> 32-byte key || 12-byte nonce,
//
// read as little-endian 64-bit words. Same key, same stream, on every
// machine. Nothing derived from the key is kept beyond the stream itself.
func keySampleStream(s *keystream.Stream, key []byte) error {
	var kdf keystream.KDF
	defer kdf.Forget()
	if err := kdf.Key(s, key, SampleKDFSalt, []byte(SampleKDFInfo)); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	return nil
}
