package attest

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/google/go-sev-guest/abi"
)

// Evidence file format identifiers.
const (
	EvidenceFormat  = "gelo-sev-snp-evidence"
	EvidenceVersion = 1
)

// Kinds of evidence, as the file's "kind" field spells them.
const (
	KindSimulated = "simulated"
	KindHardware  = "hardware"
)

// Notices written into every evidence file, so that a person reading the file sees at once
// what it is.
const (
	SimulatedNotice = "SIMULATED evidence: signed by go-sev-guest's test-only AMD keys on a simulated " +
		"SEV-SNP device, not by AMD hardware. It proves nothing about where the plan ran."
	HardwareNotice = "AMD SEV-SNP hardware evidence: an attestation report from the guest's AMD secure processor."
)

// Limits on what UnmarshalEvidence accepts.
const (
	maxEvidenceFile = 1 << 20
	maxCertLen      = 64 << 10
	maxLabelLen     = 1024
)

// Evidence is one attestation: the raw SEV-SNP ATTESTATION_REPORT and the certificates that
// endorse its signing key, plus a label. Simulated and Label describe where the evidence came
// from; they are not trusted by Verify, which decides from the signature chain whether the
// evidence is simulated.
type Evidence struct {
	// Simulated is true for evidence from the simulated device.
	Simulated bool
	// Label says in words where the evidence came from; for simulated evidence it says
	// "simulated".
	Label string
	// Report is the raw ATTESTATION_REPORT, exactly abi.ReportSize (1184) bytes.
	Report []byte
	// VCEK is the DER certificate of the key that signed the report (versioned chip
	// endorsement key). Empty when the host supplied none and the report is VLEK-signed.
	VCEK []byte
	// VLEK is the DER certificate of a versioned loaded endorsement key, for reports signed
	// by one (some cloud hosts); usually empty.
	VLEK []byte
	// ASK and ARK are the AMD signing key and root key certificates (DER) as the host supplied
	// them. Verify does not trust them: it anchors on AMD's published roots (or the test root).
	ASK []byte
	ARK []byte
	// Binding, when present, records the plan digest, identity digest and nonce the
	// REPORT_DATA was computed from (see Seal and VerifySealed).
	Binding *Binding
}

// Kind returns KindSimulated or KindHardware.
func (ev *Evidence) Kind() string {
	if ev.Simulated {
		return KindSimulated
	}
	return KindHardware
}

// String describes the evidence in one line; for simulated evidence it begins with
// "SIMULATED".
func (ev *Evidence) String() string {
	if ev == nil {
		return "no evidence"
	}
	if ev.Simulated {
		return "SIMULATED SEV-SNP evidence (test-only signer, not hardware): " + ev.Label
	}
	return "SEV-SNP hardware evidence: " + ev.Label
}

// ReportData returns the REPORT_DATA field of the raw report, or an error when the report is
// too short to hold one.
func (ev *Evidence) ReportData() ([64]byte, error) {
	var out [64]byte
	if ev == nil || len(ev.Report) < 0x90 {
		return out, errors.New("evidence has no attestation report")
	}
	copy(out[:], ev.Report[0x50:0x90])
	return out, nil
}

// evidenceFile is the on-disk form. Field order is the file's order; encoding/json keeps it,
// so the encoding is deterministic.
type evidenceFile struct {
	Format    string   `json:"format"`
	Version   int      `json:"version"`
	Kind      string   `json:"kind"`
	Simulated bool     `json:"simulated"`
	Notice    string   `json:"notice"`
	Label     string   `json:"label"`
	Report    []byte   `json:"report"`
	VCEK      []byte   `json:"vcek,omitempty"`
	VLEK      []byte   `json:"vlek,omitempty"`
	ASK       []byte   `json:"ask,omitempty"`
	ARK       []byte   `json:"ark,omitempty"`
	Binding   *Binding `json:"binding,omitempty"`
}

// MarshalEvidence encodes evidence as a JSON document (byte fields in base64, digests in hex)
// with a format name, a version and a plain-words notice; the same evidence always gives the
// same bytes. It refuses evidence that UnmarshalEvidence would refuse.
func MarshalEvidence(ev *Evidence) ([]byte, error) {
	if err := checkEvidence(ev); err != nil {
		return nil, err
	}
	f := evidenceFile{
		Format:    EvidenceFormat,
		Version:   EvidenceVersion,
		Kind:      ev.Kind(),
		Simulated: ev.Simulated,
		Notice:    HardwareNotice,
		Label:     ev.Label,
		Report:    ev.Report,
		VCEK:      ev.VCEK,
		VLEK:      ev.VLEK,
		ASK:       ev.ASK,
		ARK:       ev.ARK,
		Binding:   ev.Binding,
	}
	if ev.Simulated {
		f.Notice = SimulatedNotice
	}
	out, err := json.MarshalIndent(&f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding evidence: %v", err)
	}
	return append(out, '\n'), nil
}

// UnmarshalEvidence decodes a file written by MarshalEvidence. It checks the format name and
// version, that kind, simulated and notice agree, the report's length, that each certificate
// parses, and the binding's nonce length; it never panics on bad input.
func UnmarshalEvidence(data []byte) (*Evidence, error) {
	if len(data) == 0 {
		return nil, errors.New("evidence file is empty")
	}
	if len(data) > maxEvidenceFile {
		return nil, fmt.Errorf("evidence file is %d bytes, more than the %d allowed", len(data), maxEvidenceFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f evidenceFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("evidence file is not valid evidence JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("evidence file has trailing data after the JSON document")
	}
	if f.Format != EvidenceFormat {
		return nil, fmt.Errorf("evidence file format is %q, want %q", f.Format, EvidenceFormat)
	}
	if f.Version != EvidenceVersion {
		return nil, fmt.Errorf("evidence file version is %d; this build reads version %d", f.Version, EvidenceVersion)
	}
	switch {
	case f.Kind == KindSimulated && f.Simulated && f.Notice == SimulatedNotice:
	case f.Kind == KindHardware && !f.Simulated && f.Notice == HardwareNotice:
	default:
		return nil, fmt.Errorf("evidence file is inconsistent: kind %q, simulated=%v and its notice do not agree", f.Kind, f.Simulated)
	}
	ev := &Evidence{
		Simulated: f.Simulated,
		Label:     f.Label,
		Report:    f.Report,
		VCEK:      f.VCEK,
		VLEK:      f.VLEK,
		ASK:       f.ASK,
		ARK:       f.ARK,
		Binding:   f.Binding,
	}
	if err := checkEvidence(ev); err != nil {
		return nil, fmt.Errorf("evidence file: %v", err)
	}
	return ev, nil
}

// checkEvidence checks the structure of evidence (not its signatures).
func checkEvidence(ev *Evidence) error {
	if ev == nil {
		return errors.New("no evidence")
	}
	if len(ev.Report) != abi.ReportSize {
		return fmt.Errorf("attestation report is %d bytes, an SEV-SNP report is %d", len(ev.Report), abi.ReportSize)
	}
	if len(ev.Label) > maxLabelLen || !utf8.ValidString(ev.Label) {
		return fmt.Errorf("label is not UTF-8 text of at most %d bytes", maxLabelLen)
	}
	if ev.Simulated && !strings.Contains(strings.ToLower(ev.Label), "simulated") {
		return fmt.Errorf("simulated evidence must say so in its label; label is %q", ev.Label)
	}
	for _, c := range []struct {
		name string
		der  []byte
	}{{"VCEK", ev.VCEK}, {"VLEK", ev.VLEK}, {"ASK", ev.ASK}, {"ARK", ev.ARK}} {
		if len(c.der) == 0 {
			continue
		}
		if len(c.der) > maxCertLen {
			return fmt.Errorf("%s certificate is %d bytes, more than the %d allowed", c.name, len(c.der), maxCertLen)
		}
		if _, err := x509.ParseCertificate(c.der); err != nil {
			return fmt.Errorf("%s certificate does not parse: %v", c.name, err)
		}
	}
	if ev.Binding != nil {
		if err := checkNonce(ev.Binding.Nonce); err != nil {
			return fmt.Errorf("binding: %v", err)
		}
	}
	return nil
}
