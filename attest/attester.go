package attest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/google/go-sev-guest/abi"
)

// Attester produces evidence whose REPORT_DATA is the given 64 bytes.
type Attester interface {
	// Attest asks the (real or simulated) SEV-SNP secure processor for a signed report.
	Attest(reportData [64]byte) (*Evidence, error)
	// Simulated reports whether the evidence comes from the simulated device.
	Simulated() bool
}

// Seal computes the REPORT_DATA for plan, identity and nonce, obtains evidence for it from a,
// and records the binding in the evidence so that VerifySealed can say which input differs.
func Seal(a Attester, planDigest [32]byte, identity Identity, nonce []byte) (*Evidence, error) {
	if a == nil {
		return nil, errors.New("seal: no attester")
	}
	rd, err := ReportData(planDigest, identity, nonce)
	if err != nil {
		return nil, fmt.Errorf("seal: %v", err)
	}
	ev, err := a.Attest(rd)
	if err != nil {
		return nil, fmt.Errorf("seal: %v", err)
	}
	ev.Binding = &Binding{
		PlanDigest:     planDigest,
		IdentityDigest: identity.Digest,
		Nonce:          bytes.Clone(nonce),
	}
	return ev, nil
}

// evidenceFromQuote splits a raw quote (an ATTESTATION_REPORT followed by the host's
// certificate table, as go-sev-guest's quote providers return it) into Evidence, and checks
// that the report carries the REPORT_DATA that was asked for.
func evidenceFromQuote(raw []byte, want [64]byte, simulated bool, label string) (*Evidence, error) {
	if len(raw) < abi.ReportSize {
		return nil, fmt.Errorf("attestation quote is %d bytes, shorter than an SEV-SNP report (%d)", len(raw), abi.ReportSize)
	}
	ev := &Evidence{
		Simulated: simulated,
		Label:     label,
		Report:    bytes.Clone(raw[:abi.ReportSize]),
	}
	if got := ev.Report[0x50:0x90]; !bytes.Equal(got, want[:]) {
		return nil, fmt.Errorf("the secure processor returned a report with REPORT_DATA %x, asked for %x", got, want)
	}
	if certs := raw[abi.ReportSize:]; len(certs) > 0 {
		table := new(abi.CertTable)
		if err := table.Unmarshal(certs); err != nil {
			return nil, fmt.Errorf("the host's certificate table is malformed: %v", err)
		}
		get := func(guid string) []byte {
			b, err := table.GetByGUIDString(guid)
			if err != nil {
				return nil
			}
			return bytes.Clone(b)
		}
		// Keep the endorsement key certificate of the key that signed the report.
		if isVlekSigned(ev.Report) {
			ev.VLEK = get(abi.VlekGUID)
		} else {
			ev.VCEK = get(abi.VcekGUID)
		}
		ev.ASK = get(abi.AskGUID)
		ev.ARK = get(abi.ArkGUID)
	}
	if err := checkEvidence(ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// isVlekSigned reports whether the report's SIGNER_INFO names the VLEK.
func isVlekSigned(report []byte) bool {
	raw, err := abi.ReportSignerInfo(report)
	if err != nil {
		return false
	}
	info, err := abi.ParseSignerInfo(raw)
	return err == nil && info.SigningKey == abi.VlekReportSigner
}
