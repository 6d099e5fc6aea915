package attest

import (
	"crypto/sha512"
	"encoding/hex"
	"fmt"
)

// Nonce length bounds for ReportData, in bytes.
const (
	MinNonceLen = 16
	MaxNonceLen = 64
)

// ReportData computes the 64-byte REPORT_DATA that seals a plan to a model identity and a
// verifier's nonce: SHA-512 over the framed tag "gelo/report-data/v1", the plan digest, the
// identity digest and the nonce (see the package documentation). The nonce must be 16 to 64
// bytes long.
func ReportData(planDigest [32]byte, identity Identity, nonce []byte) ([64]byte, error) {
	if err := checkNonce(nonce); err != nil {
		return [64]byte{}, err
	}
	return reportData(planDigest, identity.Digest, nonce), nil
}

func checkNonce(nonce []byte) error {
	if len(nonce) < MinNonceLen || len(nonce) > MaxNonceLen {
		return fmt.Errorf("nonce must be %d to %d bytes long, got %d", MinNonceLen, MaxNonceLen, len(nonce))
	}
	return nil
}

func reportData(plan [32]byte, identity Digest, nonce []byte) [64]byte {
	h := sha512.New()
	writeFrameString(h, reportDataTag)
	writeFrame(h, plan[:])
	writeFrame(h, identity[:])
	writeFrame(h, nonce)
	var out [64]byte
	copy(out[:], h.Sum(nil))
	return out
}

// Binding records, in clear, the inputs that an evidence's REPORT_DATA was computed from. It
// is not trusted on its own: VerifySealed first checks that it hashes to the signed
// REPORT_DATA, and only then uses it to say which input differs from the expected one.
type Binding struct {
	PlanDigest     Digest   `json:"plan_digest"`
	IdentityDigest Digest   `json:"identity_digest"`
	Nonce          HexBytes `json:"nonce"`
}

// ReportData recomputes the REPORT_DATA the binding stands for.
func (b *Binding) ReportData() ([64]byte, error) {
	if err := checkNonce(b.Nonce); err != nil {
		return [64]byte{}, fmt.Errorf("binding: %v", err)
	}
	return reportData(b.PlanDigest, b.IdentityDigest, b.Nonce), nil
}

// HexBytes is a byte slice whose text form is lower-case hex.
type HexBytes []byte

// MarshalText implements encoding.TextMarshaler.
func (b HexBytes) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(b)), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *HexBytes) UnmarshalText(t []byte) error {
	v, err := hex.DecodeString(string(t))
	if err != nil {
		return fmt.Errorf("not hex: %v", err)
	}
	*b = v
	return nil
}

// String returns the hex form.
func (b HexBytes) String() string { return hex.EncodeToString(b) }
