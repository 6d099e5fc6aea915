package attest

import (
	"bytes"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-sev-guest/abi"
	"github.com/google/go-sev-guest/kds"
	spb "github.com/google/go-sev-guest/proto/sevsnp"
	"github.com/google/go-sev-guest/validate"
	"github.com/google/go-sev-guest/verify"
	"github.com/google/go-sev-guest/verify/trust"
)

// Errors that Verify and VerifySealed wrap, for errors.Is.
var (
	// ErrSimulated: the evidence is simulated and the policy does not allow that.
	ErrSimulated = errors.New("evidence is simulated (signed by a test root); pass --allow-simulated to accept it")
	// ErrReportDataMismatch: the signed REPORT_DATA is not the expected one.
	ErrReportDataMismatch = errors.New("REPORT_DATA mismatch")
)

// TCB is an SEV-SNP trusted computing base version: the security patch levels of the AMD
// secure processor's boot loader, TEE and SNP firmware and of the CPU microcode.
type TCB struct {
	BootLoader uint8 `json:"bootloader"`
	TEE        uint8 `json:"tee"`
	SNP        uint8 `json:"snp"`
	Microcode  uint8 `json:"microcode"`
}

func (t TCB) parts() kds.TCBParts {
	return kds.TCBParts{BlSpl: t.BootLoader, TeeSpl: t.TEE, SnpSpl: t.SNP, UcodeSpl: t.Microcode}
}

func tcbFromVersion(v uint64) TCB {
	p := kds.DecomposeTCBVersion(kds.TCBVersion(v))
	return TCB{BootLoader: p.BlSpl, TEE: p.TeeSpl, SNP: p.SnpSpl, Microcode: p.UcodeSpl}
}

// String renders the TCB as "bl=3 tee=0 snp=20 ucode=209".
func (t TCB) String() string {
	return fmt.Sprintf("bl=%d tee=%d snp=%d ucode=%d", t.BootLoader, t.TEE, t.SNP, t.Microcode)
}

// Policy says what Verify accepts. The zero value accepts only hardware evidence, with the
// guest's debug bit off, any TCB and any measurement.
type Policy struct {
	// AllowSimulated accepts evidence signed by go-sev-guest's test root (the simulated device).
	AllowSimulated bool
	// AllowDebug accepts a guest whose policy lets the host debug it (read its memory).
	AllowDebug bool
	// MinimumTCB is the lowest REPORTED_TCB accepted, component by component.
	MinimumTCB TCB
	// Measurement, when not nil, is the 48-byte launch MEASUREMENT the report must carry.
	Measurement []byte
	// Now is the time at which certificates must be valid; zero means the current time.
	Now time.Time
}

// GuestPolicy is the decoded guest POLICY field of a report.
type GuestPolicy struct {
	Raw          uint64 `json:"raw"`
	ABIMajor     uint8  `json:"abi_major"`
	ABIMinor     uint8  `json:"abi_minor"`
	SMT          bool   `json:"smt"`
	MigrateMA    bool   `json:"migrate_ma"`
	Debug        bool   `json:"debug"`
	SingleSocket bool   `json:"single_socket"`
}

// Report is what Verify found, for display.
type Report struct {
	// Simulated is true when the chain ends at the test root (decided from the signatures,
	// not from the evidence's own label).
	Simulated bool `json:"simulated"`
	// Label is the evidence's label.
	Label string `json:"label"`
	// Root names the root of trust the signature chain verified against.
	Root string `json:"root"`
	// Signer is "VCEK" or "VLEK".
	Signer      string      `json:"signer"`
	Version     uint32      `json:"version"`
	ReportData  HexBytes    `json:"report_data"`
	Measurement HexBytes    `json:"measurement"`
	HostData    HexBytes    `json:"host_data"`
	ChipID      HexBytes    `json:"chip_id"`
	VMPL        uint32      `json:"vmpl"`
	GuestSVN    uint32      `json:"guest_svn"`
	Policy      GuestPolicy `json:"policy"`
	ReportedTCB TCB         `json:"reported_tcb"`
	CurrentTCB  TCB         `json:"current_tcb"`
	LaunchTCB   TCB         `json:"launch_tcb"`
	Firmware    string      `json:"firmware"`
}

// String renders the report as a few lines; for simulated evidence the first line says
// "SIMULATED".
func (r *Report) String() string {
	var b strings.Builder
	if r.Simulated {
		fmt.Fprintf(&b, "attestation: SIMULATED (signed by %s; not AMD hardware)\n", r.Root)
	} else {
		fmt.Fprintf(&b, "attestation: AMD SEV-SNP hardware (chain verified to %s)\n", r.Root)
	}
	fmt.Fprintf(&b, "  label:        %s\n", r.Label)
	fmt.Fprintf(&b, "  report:       version %d, signed by %s, VMPL %d, guest SVN %d\n", r.Version, r.Signer, r.VMPL, r.GuestSVN)
	fmt.Fprintf(&b, "  measurement:  %s\n", r.Measurement)
	fmt.Fprintf(&b, "  report data:  %s\n", r.ReportData)
	fmt.Fprintf(&b, "  policy:       0x%x (ABI %d.%d, debug=%v, smt=%v, migration agent=%v)\n",
		r.Policy.Raw, r.Policy.ABIMajor, r.Policy.ABIMinor, r.Policy.Debug, r.Policy.SMT, r.Policy.MigrateMA)
	fmt.Fprintf(&b, "  TCB:          reported %v; current %v; launch %v\n", r.ReportedTCB, r.CurrentTCB, r.LaunchTCB)
	fmt.Fprintf(&b, "  firmware:     %s\n", r.Firmware)
	return b.String()
}

// Verify checks evidence against the REPORT_DATA the caller expects and a policy:
//
//  1. the report's structure (size, reserved fields, policy encoding);
//  2. the signature chain, with go-sev-guest's verify package and no network: the endorsement
//     key certificate (VCEK or VLEK) must chain to AMD's embedded root for the report's product
//     line, or, only when pol.AllowSimulated, to go-sev-guest's test root; the ARK and ASK in
//     the evidence are not trusted; the report's signature must verify under that key;
//  3. REPORT_DATA must equal want;
//  4. the guest policy and TCB, with go-sev-guest's validate package: debug off unless
//     pol.AllowDebug, no migration agent, REPORTED_TCB equal to the certificate's TCB and at
//     least pol.MinimumTCB, committed firmware equal to current, and MEASUREMENT equal to
//     pol.Measurement when that is set.
//
// It does not check certificate revocation (no network), HOST_DATA, ID blocks or VMPL.
func Verify(ev *Evidence, want [64]byte, pol Policy) (*Report, error) {
	return verifyEvidence(ev, want, pol, nil)
}

// VerifySealed is Verify for evidence made by Seal: the expected REPORT_DATA is computed from
// planDigest, identity and nonce, and when it does not match, the evidence's binding (once it
// is checked against the signed REPORT_DATA) says which of the three differs, so that a stale
// nonce is reported as a stale nonce.
func VerifySealed(ev *Evidence, planDigest [32]byte, identity Identity, nonce []byte, pol Policy) (*Report, error) {
	want, err := ReportData(planDigest, identity, nonce)
	if err != nil {
		return nil, err
	}
	explain := func(got [64]byte) string {
		b := ev.Binding
		if b == nil {
			return "the evidence records no binding, so which input differs is unknown"
		}
		rd, err := b.ReportData()
		if err != nil || rd != got {
			return "the evidence's recorded binding does not hash to its signed REPORT_DATA, so which input differs is unknown"
		}
		var parts []string
		if b.PlanDigest != Digest(planDigest) {
			parts = append(parts, fmt.Sprintf("plan digest differs: evidence was sealed for plan %s, expected plan %s",
				b.PlanDigest, Digest(planDigest)))
		}
		if b.IdentityDigest != identity.Digest {
			parts = append(parts, fmt.Sprintf("model identity differs: evidence was sealed for model %s, expected model %s",
				b.IdentityDigest, identity.Digest))
		}
		if !bytes.Equal(b.Nonce, nonce) {
			parts = append(parts, fmt.Sprintf("nonce differs: evidence was sealed with nonce %x, expected nonce %x (stale or replayed evidence)",
				[]byte(b.Nonce), nonce))
		}
		return strings.Join(parts, "; ")
	}
	return verifyEvidence(ev, want, pol, explain)
}

func verifyEvidence(ev *Evidence, want [64]byte, pol Policy, explain func(got [64]byte) string) (*Report, error) {
	if err := checkEvidence(ev); err != nil {
		return nil, fmt.Errorf("evidence: %v", err)
	}
	if pol.Measurement != nil && len(pol.Measurement) != abi.MeasurementSize {
		return nil, fmt.Errorf("policy measurement must be %d bytes, got %d", abi.MeasurementSize, len(pol.Measurement))
	}
	if ev.Simulated && !pol.AllowSimulated {
		return nil, ErrSimulated
	}
	rep, err := abi.ReportToProto(ev.Report)
	if err != nil {
		return nil, fmt.Errorf("attestation report is malformed: %v", err)
	}
	if err := abi.ValidateReportFormat(ev.Report); err != nil {
		return nil, fmt.Errorf("attestation report is malformed: %v", err)
	}
	info, err := abi.ParseSignerInfo(rep.GetSignerInfo())
	if err != nil {
		return nil, fmt.Errorf("attestation report is malformed: SIGNER_INFO: %v", err)
	}
	switch info.SigningKey {
	case abi.VcekReportSigner:
		if len(ev.VCEK) == 0 {
			return nil, errors.New("evidence carries no VCEK certificate, so its signature cannot be checked (this verifier does not fetch certificates from AMD)")
		}
	case abi.VlekReportSigner:
		if len(ev.VLEK) == 0 {
			return nil, errors.New("the report is VLEK-signed but the evidence carries no VLEK certificate")
		}
	default:
		return nil, fmt.Errorf("the report is signed by %v, which this verifier does not accept", info.SigningKey)
	}
	attestation := func() *spb.Attestation {
		return &spb.Attestation{
			Report: rep,
			CertificateChain: &spb.CertificateChain{
				VcekCert: ev.VCEK,
				VlekCert: ev.VLEK,
				AskCert:  ev.ASK,
				ArkCert:  ev.ARK,
				Extras:   map[string][]byte{},
			},
		}
	}
	now := pol.Now
	if now.IsZero() {
		now = time.Now()
	}

	// 2. The signature chain: AMD's roots first, then the test root.
	simulated := false
	root := ""
	amdErr := verify.SnpAttestation(attestation(), &verify.Options{DisableCertFetching: true, Now: now})
	if amdErr == nil {
		root = "AMD's embedded ARK for " + productLineOf(rep, ev, info.SigningKey)
	} else {
		roots, err := simulatedRoots()
		if err != nil {
			return nil, err
		}
		ek, ekName := ev.VCEK, "VCEK"
		if info.SigningKey == abi.VlekReportSigner {
			ek, ekName = ev.VLEK, "VLEK"
		}
		if chainErr := chainsTo(roots, ek, info.SigningKey, now); chainErr != nil {
			if ev.Simulated {
				return nil, fmt.Errorf("evidence says it is simulated, but its %s certificate does not chain to the test root either: %v", ekName, chainErr)
			}
			return nil, fmt.Errorf("attestation does not verify against AMD's roots: %v", amdErr)
		}
		simulated, root = true, "go-sev-guest's test-only ARK (simulated)"
		if !pol.AllowSimulated {
			// ev.Simulated is false here (true was refused above): the file was relabelled.
			return nil, fmt.Errorf("%w (its file does not say so: it was relabelled)", ErrSimulated)
		}
		if !ev.Simulated {
			return nil, errors.New("evidence is simulated (signed by a test root) but its file says hardware: it was relabelled")
		}
		if err := verify.SnpAttestation(attestation(), &verify.Options{DisableCertFetching: true, Now: now, TrustedRoots: roots}); err != nil {
			return nil, fmt.Errorf("simulated evidence does not verify against the test root (the report or its certificate was altered): %v", err)
		}
	}
	if !simulated && ev.Simulated {
		return nil, errors.New("evidence file says simulated but its chain verifies to AMD's root: it was relabelled")
	}

	// 3. REPORT_DATA.
	var got [64]byte
	copy(got[:], rep.GetReportData())
	if got != want {
		msg := fmt.Sprintf("%v: evidence binds %s, plan+identity+nonce give %s",
			ErrReportDataMismatch, hex.EncodeToString(got[:]), hex.EncodeToString(want[:]))
		if explain != nil {
			msg += " (" + explain(got) + ")"
		}
		return nil, &reportDataError{msg: msg}
	}
	// The binding is not signed: read it only if it hashes to what is.
	if b := ev.Binding; b != nil {
		if rd, err := b.ReportData(); err != nil || rd != got {
			return nil, errors.New("the evidence's recorded binding (plan, identity, nonce: not signed) does not hash to its signed REPORT_DATA: the file was edited")
		}
	}

	// 4. Guest policy, TCB, measurement.
	gp, err := abi.ParseSnpPolicy(rep.GetPolicy())
	if err != nil {
		return nil, fmt.Errorf("attestation report is malformed: %v", err)
	}
	if gp.Debug && !pol.AllowDebug {
		return nil, errors.New("guest policy allows debugging (the host can read and change the guest's memory); the policy does not allow debug guests")
	}
	vopts := &validate.Options{
		GuestPolicy: abi.SnpPolicy{SMT: true, Debug: pol.AllowDebug, SingleSocket: false},
		MinimumTCB:  pol.MinimumTCB.parts(),
		Measurement: pol.Measurement,
	}
	if err := validate.SnpAttestation(attestation(), vopts); err != nil {
		return nil, fmt.Errorf("attestation report does not meet the policy: %v", err)
	}

	signer := "VCEK"
	if info.SigningKey == abi.VlekReportSigner {
		signer = "VLEK"
	}
	return &Report{
		Simulated:   simulated,
		Label:       ev.Label,
		Root:        root,
		Signer:      signer,
		Version:     rep.GetVersion(),
		ReportData:  bytes.Clone(rep.GetReportData()),
		Measurement: bytes.Clone(rep.GetMeasurement()),
		HostData:    bytes.Clone(rep.GetHostData()),
		ChipID:      bytes.Clone(rep.GetChipId()),
		VMPL:        rep.GetVmpl(),
		GuestSVN:    rep.GetGuestSvn(),
		Policy: GuestPolicy{
			Raw: rep.GetPolicy(), ABIMajor: gp.ABIMajor, ABIMinor: gp.ABIMinor,
			SMT: gp.SMT, MigrateMA: gp.MigrateMA, Debug: gp.Debug, SingleSocket: gp.SingleSocket,
		},
		ReportedTCB: tcbFromVersion(rep.GetReportedTcb()),
		CurrentTCB:  tcbFromVersion(rep.GetCurrentTcb()),
		LaunchTCB:   tcbFromVersion(rep.GetLaunchTcb()),
		Firmware:    fmt.Sprintf("%d.%d build %d", rep.GetCurrentMajor(), rep.GetCurrentMinor(), rep.GetCurrentBuild()),
	}, nil
}

type reportDataError struct{ msg string }

func (e *reportDataError) Error() string { return e.msg }
func (e *reportDataError) Unwrap() error { return ErrReportDataMismatch }

func productLineOf(rep *spb.Report, ev *Evidence, key abi.ReportSigner) string {
	if fms := rep.GetCpuid1EaxFms(); fms != 0 {
		return kds.ProductLineFromFms(fms)
	}
	ek := ev.VCEK
	if key == abi.VlekReportSigner {
		ek = ev.VLEK
	}
	if cert, err := x509.ParseCertificate(ek); err == nil {
		if exts, err := kds.CertificateExtensions(cert, key); err == nil {
			if p, err := kds.ParseProductName(exts.ProductName, key); err == nil {
				return kds.ProductLine(p)
			}
		}
	}
	return "the certificate's product line"
}

// chainsTo checks only that the endorsement key certificate chains to one of the roots.
func chainsTo(roots map[string][]*trust.AMDRootCerts, der []byte, key abi.ReportSigner, now time.Time) error {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	var lastErr error = errors.New("no roots")
	for _, rs := range roots {
		for _, r := range rs {
			opts := r.X509Options(now, key)
			if opts == nil {
				continue
			}
			if _, err := cert.Verify(*opts); err != nil {
				lastErr = err
				continue
			}
			return nil
		}
	}
	return lastErr
}
