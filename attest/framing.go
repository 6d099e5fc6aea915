package attest

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
)

// Domain-separation tags. Changing any of them changes every digest; bump the version suffix
// when the framing changes.
const (
	identityTag   = "gelo/model-identity/v1"
	reportDataTag = "gelo/report-data/v1"
)

// writeU64 writes v as 8 big-endian bytes.
func writeU64(h hash.Hash, v uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	h.Write(b[:])
}

// writeFrame writes len(b) as a u64 followed by b.
func writeFrame(h hash.Hash, b []byte) {
	writeU64(h, uint64(len(b)))
	h.Write(b)
}

func writeFrameString(h hash.Hash, s string) {
	writeU64(h, uint64(len(s)))
	h.Write([]byte(s))
}

func writeBool(h hash.Hash, v bool) {
	if v {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
}

// Digest is a SHA-256 digest. Its text form (String, MarshalText) is lower-case hex.
type Digest [32]byte

// String returns the digest as 64 lower-case hex digits.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Short returns the first 12 hex digits, for messages.
func (d Digest) Short() string { return hex.EncodeToString(d[:6]) }

// IsZero reports whether every byte is zero.
func (d Digest) IsZero() bool { return d == Digest{} }

// MarshalText implements encoding.TextMarshaler.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; it takes exactly 64 hex digits.
func (d *Digest) UnmarshalText(b []byte) error {
	v, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDigest parses 64 hex digits.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != 2*len(d) {
		return d, fmt.Errorf("digest must be %d hex digits, got %d characters", 2*len(d), len(s))
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return Digest{}, fmt.Errorf("digest is not hex: %v", err)
	}
	return d, nil
}
