package mask

import (
	"encoding/binary"
	"errors"
	"math"

	"gelo/keystream"
)

// KDFSalt is the HKDF-SHA256 salt that separates mask material from every
// other use of the session key.
const KDFSalt = "gelo/mask/v1"

// ErrZeroised is returned when a mask or generator is used after Zeroise.
var ErrZeroised = errors.New("mask: material has been zeroised")

// RNG is the deterministic mask-material generator of one forward pass: a
// ChaCha20 keystream whose key and nonce are derived with
//
//	HKDF-SHA256(secret = sessionKey, salt = "gelo/mask/v1",
//	            info = "pass" || uint64_be(pass)) -> 32-byte key || 12-byte nonce.
//
// The same session key and pass counter give the same stream, bit for bit,
// on every machine; different pass counters give independent streams. All
// outputs are defined purely by the byte stream (little-endian 64-bit
// words), so they are reproducible across platforms.
//
// An RNG is not safe for concurrent use. Zeroise wipes the key schedule,
// the buffered keystream and the cached Gaussian; a zeroised RNG returns
// zeros and is refused by every constructor in this package.
type RNG struct {
	ks keystream.Stream

	spare    float64 // second value of the last polar pair
	hasSpare bool

	signWord uint64
	signBits int

	// Scratch of the package-level FillShield: the ChaCha8 expanding one
	// shield block and its seed. Wiped after every fill and by Zeroise.
	// (Held here so FillShield allocates nothing and the state stays in
	// memory this package owns.)
	shieldGen  cc8
	shieldSeed [32]byte

	info [12]byte

	// kdf keeps what HKDF derives from the session key alone, so re-keying
	// for each pass allocates nothing. It lives as long as the session
	// key: Zeroise (end of a pass) keeps it, Forget (end of the session)
	// wipes it.
	kdf keystream.KDF
}

// NewPassRNG returns the mask-material generator for forward pass `pass`
// of the session keyed by sessionKey (which must be non-empty).
func NewPassRNG(sessionKey []byte, pass uint64) (*RNG, error) {
	r := new(RNG)
	if err := r.Reset(sessionKey, pass); err != nil {
		return nil, err
	}
	return r, nil
}

// Reset re-keys r in place for another pass, wiping the previous state
// first. It lets an executor keep one RNG value for the whole session.
func (r *RNG) Reset(sessionKey []byte, pass uint64) error {
	if r == nil {
		return errors.New("mask: nil RNG")
	}
	r.Zeroise()
	if len(sessionKey) == 0 {
		return errors.New("mask: empty session key")
	}
	copy(r.info[:4], "pass")
	binary.BigEndian.PutUint64(r.info[4:], pass)
	return r.kdf.Key(&r.ks, sessionKey, KDFSalt, r.info[:])
}

// Forget wipes what the RNG keeps of the session key (Zeroise keeps it
// between passes so re-keying allocates nothing). Call it when the
// session ends.
func (r *RNG) Forget() {
	if r == nil {
		return
	}
	r.kdf.Forget()
}

// Live reports whether r is keyed (not nil, not zeroised).
func (r *RNG) Live() bool { return r != nil && r.ks.Live() }

// Uint64 returns the next 64 keystream bits (little-endian).
func (r *RNG) Uint64() uint64 { return r.ks.Uint64() }

// Float64 returns a uniform value in [0, 1) with 53 random bits.
func (r *RNG) Float64() float64 { return r.ks.Float64() }

// Normal returns a standard Gaussian variate (Marsaglia polar method on
// float64; values come in pairs, the second one is cached).
func (r *RNG) Normal() float64 {
	if r.hasSpare {
		r.hasSpare = false
		v := r.spare
		r.spare = 0
		return v
	}
	a, b := r.normalPair()
	r.spare, r.hasSpare = b, true
	return a
}

func (r *RNG) normalPair() (float64, float64) {
	for {
		u := 2*r.Float64() - 1
		v := 2*r.Float64() - 1
		s := float64(u*u) + float64(v*v) // explicit roundings: never fused
		if s >= 1 || s == 0 {
			if !r.ks.Live() {
				return 0, 0
			}
			continue
		}
		m := math.Sqrt(-2 * math.Log(s) / s)
		return u * m, v * m
	}
}

// Sign returns +1 or -1 from one keystream bit; 64 signs are drawn per
// 64-bit word, least-significant bit first (bit 1 -> -1).
func (r *RNG) Sign() float32 {
	if r.signBits == 0 {
		r.signWord = r.Uint64()
		r.signBits = 64
	}
	b := r.signWord & 1
	r.signWord >>= 1
	r.signBits--
	return 1 - 2*float32(b)
}

// FillSigns fills dst with Sign() values.
func (r *RNG) FillSigns(dst []float32) {
	for i := range dst {
		dst[i] = r.Sign()
	}
}

// FillNormal fills dst with standard Gaussians (the same sequence as
// repeated Normal calls, rounded to float32).
func (r *RNG) FillNormal(dst []float32) {
	i := 0
	if r.hasSpare && len(dst) > 0 {
		dst[0] = float32(r.Normal())
		i = 1
	}
	for ; i+1 < len(dst); i += 2 {
		a, b := r.normalPair()
		dst[i], dst[i+1] = float32(a), float32(b)
	}
	if i < len(dst) {
		dst[i] = float32(r.Normal())
	}
}

// FillNormal64 fills dst with standard Gaussians (the same sequence as
// repeated Normal calls).
func (r *RNG) FillNormal64(dst []float64) {
	i := 0
	if r.hasSpare && len(dst) > 0 {
		dst[0] = r.Normal()
		i = 1
	}
	for ; i+1 < len(dst); i += 2 {
		dst[i], dst[i+1] = r.normalPair()
	}
	if i < len(dst) {
		dst[i] = r.Normal()
	}
}

// Zeroise wipes the key schedule, buffered keystream, cached Gaussian,
// cached sign bits and FillShield's scratch generator. Afterwards r yields
// zeros until Reset.
func (r *RNG) Zeroise() {
	if r == nil {
		return
	}
	r.ks.Wipe()
	r.spare, r.hasSpare = 0, false
	r.signWord, r.signBits = 0, 0
	wipeShieldGen(&r.shieldGen, &r.shieldSeed)
	clear(r.info[:])
}
