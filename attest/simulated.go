package attest

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-sev-guest/abi"
	labi "github.com/google/go-sev-guest/client/linuxabi"
	"github.com/google/go-sev-guest/kds"
	spb "github.com/google/go-sev-guest/proto/sevsnp"
	sevtest "github.com/google/go-sev-guest/testing"
	"github.com/google/go-sev-guest/verify/trust"
	"google.golang.org/protobuf/proto"
)

// simMu serialises every call into go-sev-guest's testing package, whose certificate and
// signature code shares one math/rand source that is not safe for concurrent use.
var simMu sync.Mutex

// The simulated machine: an AMD Milan (B1 stepping), the product go-sev-guest's fake device
// defaults to.
var (
	simProduct     = abi.DefaultSevProduct()
	simProductName = kds.ProductName(simProduct)
	simProductLine = kds.ProductLine(simProduct)
	// simRootTime is when the verifier's copy of the test ARK and ASK certificates begins to
	// be valid; they are valid for 25 years.
	simRootTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
)

// SimulatedTCB is the TCB every simulated report carries unless SimulatedOptions says
// otherwise: plausible Milan values.
var SimulatedTCB = TCB{BootLoader: 3, TEE: 0, SNP: 20, Microcode: 209}

// SimulatedMeasurement returns the MEASUREMENT every simulated report carries unless
// SimulatedOptions says otherwise: SHA-384 of "gelo/simulated-measurement/v1".
func SimulatedMeasurement() []byte {
	h := sha512.Sum384([]byte("gelo/simulated-measurement/v1"))
	return h[:]
}

// SimulatedOptions configures a simulated device. The zero value (apart from Seed) gives the
// defaults: debug off, SimulatedTCB, SimulatedMeasurement.
type SimulatedOptions struct {
	// Seed derives the simulated chip's CHIP_ID (and so its VCEK certificate) and REPORT_ID.
	Seed int64
	// Debug sets the guest policy's DEBUG bit, which Verify refuses unless Policy.AllowDebug.
	Debug bool
	// TCB overrides SimulatedTCB when not zero.
	TCB TCB
	// Measurement overrides SimulatedMeasurement when not nil; it must be 48 bytes.
	Measurement []byte
}

type simulatedAttester struct {
	mu       sync.Mutex
	qp       *sevtest.QuoteProvider
	template *spb.Report
	label    string
}

// NewSimulatedAttester builds a simulated SEV-SNP guest with the default options and the
// given seed. See NewSimulatedAttesterWith.
func NewSimulatedAttester(seed int64) (Attester, error) {
	return NewSimulatedAttesterWith(SimulatedOptions{Seed: seed})
}

// NewSimulatedAttesterWith builds a simulated SEV-SNP guest: go-sev-guest's fake sev-guest
// device, whose reports are signed by a VCEK that go-sev-guest's test-only AMD root (ARK) and
// signing key (ASK) certify. The keys are go-sev-guest's fixed test keys; the VCEK certificate
// carries the chip ID derived from the seed and the chosen TCB, as a real one from AMD's key
// distribution service would. Its evidence is labelled simulated, and Verify accepts it only
// with Policy.AllowSimulated.
func NewSimulatedAttesterWith(opts SimulatedOptions) (Attester, error) {
	tcb := opts.TCB
	if tcb == (TCB{}) {
		tcb = SimulatedTCB
	}
	measurement := opts.Measurement
	if measurement == nil {
		measurement = SimulatedMeasurement()
	}
	if len(measurement) != abi.MeasurementSize {
		return nil, fmt.Errorf("simulated measurement must be %d bytes, got %d", abi.MeasurementSize, len(measurement))
	}
	tcbVersion, err := kds.ComposeTCBParts(tcb.parts())
	if err != nil {
		return nil, fmt.Errorf("simulated TCB %v: %v", tcb, err)
	}

	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], uint64(opts.Seed))
	var chipID [abi.ChipIDSize]byte
	chipSum := sha512.Sum512(append([]byte("gelo/simulated-chip-id/v1"), seed[:]...))
	copy(chipID[:], chipSum[:])
	reportID := sha256.Sum256(append([]byte("gelo/simulated-report-id/v1"), seed[:]...))

	simMu.Lock()
	now := time.Now().UTC().Truncate(24 * time.Hour)
	b := &sevtest.AmdSignerBuilder{
		Keys:             sevtest.DefaultAmdKeys(),
		ProductName:      simProductName,
		CSPID:            "gelo-simulated",
		ArkCreationTime:  now,
		AskCreationTime:  now,
		AsvkCreationTime: now,
		VcekCreationTime: now,
		VlekCreationTime: now,
		HWID:             chipID,
		TCB:              tcbVersion,
		VcekCustom: sevtest.CertOverride{
			Extensions: sevtest.CustomExtensions(tcb.parts(), chipID[:], "", simProductName),
		},
	}
	signer, err := b.TestOnlyCertChain()
	var certs []byte
	if err == nil {
		certs, err = signer.CertTableBytes()
	}
	simMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("building the simulated AMD certificate chain: %v", err)
	}

	policy := abi.SnpPolicy{ABIMajor: 1, ABIMinor: 55, SMT: true, Debug: opts.Debug}
	template := &spb.Report{
		Version:          3,
		GuestSvn:         1,
		Policy:           abi.SnpPolicyToBytes(policy),
		FamilyId:         fixed16("gelo-simulated"),
		ImageId:          fixed16("gelo-plan"),
		Vmpl:             0,
		SignatureAlgo:    abi.SignEcdsaP384Sha384,
		CurrentTcb:       uint64(tcbVersion),
		PlatformInfo:     1, // SMT enabled
		SignerInfo:       abi.ComposeSignerInfo(abi.SignerInfo{SigningKey: abi.VcekReportSigner}),
		ReportData:       make([]byte, abi.ReportDataSize),
		Measurement:      bytes.Clone(measurement),
		HostData:         make([]byte, abi.HostDataSize),
		IdKeyDigest:      make([]byte, abi.IDKeyDigestSize),
		AuthorKeyDigest:  make([]byte, abi.AuthorKeyDigestSize),
		ReportId:         reportID[:],
		ReportIdMa:       bytes.Repeat([]byte{0xff}, abi.ReportIDMASize), // no migration agent
		ReportedTcb:      uint64(tcbVersion),
		Cpuid1EaxFms:     abi.MaskedCpuid1EaxFromSevProduct(simProduct),
		ChipId:           chipID[:],
		CommittedTcb:     uint64(tcbVersion),
		CurrentBuild:     21,
		CurrentMinor:     55,
		CurrentMajor:     1,
		CommittedBuild:   21,
		CommittedMinor:   55,
		CommittedMajor:   1,
		LaunchTcb:        uint64(tcbVersion),
		Signature:        make([]byte, abi.SignatureSize),
		LaunchMitVector:  0,
		CurrentMitVector: 0,
	}
	device := &sevtest.Device{
		ReportDataRsp: map[string]any{},
		Certs:         certs,
		Signer:        signer,
		SevProduct:    simProduct,
	}
	label := fmt.Sprintf("simulated SEV-SNP device (go-sev-guest test-only signer, seed %d; not hardware)", opts.Seed)
	if opts.Debug {
		label += ", debug policy"
	}
	return &simulatedAttester{
		qp:       &sevtest.QuoteProvider{Device: device},
		template: template,
		label:    label,
	}, nil
}

func fixed16(s string) []byte {
	b := make([]byte, 16)
	copy(b, s)
	return b
}

func (a *simulatedAttester) Simulated() bool { return true }

// Attest programs the fake device with an unsigned report carrying reportData, and asks it
// for the quote: the fake AMD secure processor signs the report with the test VCEK and
// appends the certificate table, as the real one does.
func (a *simulatedAttester) Attest(reportData [64]byte) (*Evidence, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	rep := proto.Clone(a.template).(*spb.Report)
	rep.ReportData = reportData[:]
	raw, err := abi.ReportToAbiBytes(rep)
	if err != nil {
		return nil, fmt.Errorf("simulated device: building the report: %v", err)
	}
	var resp labi.SnpReportRespABI
	copy(resp.Data[:], raw)
	key := hex.EncodeToString(reportData[:])
	a.qp.Device.ReportDataRsp[key] = &sevtest.GetReportResponse{Resp: resp}
	simMu.Lock()
	quote, err := a.qp.GetRawQuote(reportData)
	simMu.Unlock()
	delete(a.qp.Device.ReportDataRsp, key)
	if err != nil {
		return nil, fmt.Errorf("simulated device: %v", err)
	}
	return evidenceFromQuote(quote, reportData, true, a.label)
}

// simulatedRoots returns the test ARK and ASK as trusted roots, for Verify with
// Policy.AllowSimulated. They are built once from go-sev-guest's fixed test keys.
var simulatedRoots = sync.OnceValues(func() (map[string][]*trust.AMDRootCerts, error) {
	simMu.Lock()
	defer simMu.Unlock()
	signer, err := sevtest.DefaultTestOnlyCertChain(simProductName, simRootTime)
	if err != nil {
		return nil, fmt.Errorf("building the simulated root certificates: %v", err)
	}
	return map[string][]*trust.AMDRootCerts{
		simProductLine: {{
			Product:     simProductLine,
			ProductLine: simProductLine,
			ProductCerts: &trust.ProductCerts{
				Ark:  signer.Ark,
				Ask:  signer.Ask,
				Asvk: signer.Asvk,
			},
		}},
	}, nil
})
