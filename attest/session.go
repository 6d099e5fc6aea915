package attest

import (
	"crypto/sha512"
	"fmt"
)

// SessionLabel is the TLS exporter label (RFC 8446 section 7.5) of an
// attested connection and the first frame of its REPORT_DATA.
const SessionLabel = "EXPORTER-gelo-attested-session-v1"

// SessionEKMLen is the length of the exported keying material.
const SessionEKMLen = 32

// SessionReportData computes the REPORT_DATA that binds evidence to one
// TLS session: SHA-512 over the framed SessionLabel, the connection's
// exported keying material for that label and the nonce (ekm), the nonce,
// the SHA-256 of the server certificate's public key (SubjectPublicKeyInfo)
// and the plan digest. The exporter is unique to the session, so evidence
// fetched on one connection does not verify on another (relay), the nonce
// makes it fresh (replay), and the key hash pins the key the session was
// made with (key substitution).
func SessionReportData(ekm, nonce []byte, pubKeySHA256, planDigest [32]byte) ([64]byte, error) {
	if err := checkNonce(nonce); err != nil {
		return [64]byte{}, err
	}
	if len(ekm) != SessionEKMLen {
		return [64]byte{}, fmt.Errorf("exported keying material must be %d bytes, got %d", SessionEKMLen, len(ekm))
	}
	h := sha512.New()
	writeFrameString(h, SessionLabel)
	writeFrame(h, ekm)
	writeFrame(h, nonce)
	writeFrame(h, pubKeySHA256[:])
	writeFrame(h, planDigest[:])
	var out [64]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}
