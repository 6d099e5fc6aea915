package serve

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"gelo/attest"
)

// Attestation is what POST /v1/attestation binds: the attester (real or
// simulated), the plan and the server's TLS key.
type Attestation struct {
	Attester   attest.Attester
	PlanDigest [32]byte
	// Plan is the encoded plan file, sent so that the client can read the
	// security level (and anything else) of the plan the digest names.
	Plan []byte
	// Security is the plan's level, as a convenience for clients that do
	// not decode Plan (it is bound only through Plan).
	Security string
	// KeySHA256 is the SHA-256 of the TLS certificate's
	// SubjectPublicKeyInfo (TLSConfig sets it).
	KeySHA256 [32]byte
}

// TLSConfig makes a fresh ECDSA P-256 key and a self-signed certificate
// for it (the key never leaves the process: clients trust it through the
// attestation, not a CA), TLS 1.3 only, and records the key's hash in a.
func (a *Attestation) TLSConfig() (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tls key: %w", err)
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "gelo attested server"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tls certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tls certificate: %w", err)
	}
	a.KeySHA256 = sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		MaxVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		NextProtos:   []string{"http/1.1"}, // one connection, one attestation
	}, nil
}

// AttestationRequest is the body of POST /v1/attestation.
type AttestationRequest struct {
	Nonce string `json:"nonce"` // hex, 16 to 64 bytes
}

// AttestationResponse is its answer. Evidence is attest's evidence file
// (its "simulated" field and label say when it is simulated).
type AttestationResponse struct {
	Evidence   json.RawMessage `json:"evidence"`
	Simulated  bool            `json:"simulated"`
	PlanDigest string          `json:"plan_digest"`
	KeySHA256  string          `json:"key_sha256"`
	Security   string          `json:"security"`
	Plan       []byte          `json:"plan,omitempty"`
}

func (s *Server) handleAttestation(w http.ResponseWriter, r *http.Request) {
	a := s.opt.Attest
	if r.TLS == nil {
		s.writeError(w, badRequest("", "attestation needs a TLS connection: its evidence is bound to the session's exported keying material"))
		return
	}
	body, e := s.body(w, r)
	if e != nil {
		s.writeError(w, e)
		return
	}
	var req AttestationRequest
	if e := decodeStrict(body, &req); e != nil {
		s.writeError(w, e)
		return
	}
	nonce, err := hex.DecodeString(req.Nonce)
	if err != nil || len(nonce) < attest.MinNonceLen || len(nonce) > attest.MaxNonceLen {
		s.writeError(w, badRequest("nonce", "nonce must be %d to %d bytes of hex", attest.MinNonceLen, attest.MaxNonceLen))
		return
	}
	ekm, err := r.TLS.ExportKeyingMaterial(attest.SessionLabel, nonce, attest.SessionEKMLen)
	if err != nil {
		s.writeError(w, badRequest("", "exporting keying material: %v", err))
		return
	}
	rd, err := attest.SessionReportData(ekm, nonce, a.KeySHA256, a.PlanDigest)
	clear(ekm)
	if err != nil {
		s.writeError(w, badRequest("nonce", "%v", err))
		return
	}
	ev, err := a.Attester.Attest(rd)
	if err != nil {
		s.log.Error("attestation failed", "err", err)
		s.writeError(w, &apiError{Status: http.StatusInternalServerError, Message: "attestation failed", Type: "server_error"})
		return
	}
	data, err := attest.MarshalEvidence(ev)
	if err != nil {
		s.writeError(w, &apiError{Status: http.StatusInternalServerError, Message: "attestation failed", Type: "server_error"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(AttestationResponse{Evidence: data, Simulated: ev.Simulated, PlanDigest: hex.EncodeToString(a.PlanDigest[:]),
		KeySHA256: hex.EncodeToString(a.KeySHA256[:]), Security: a.Security, Plan: a.Plan})
}
