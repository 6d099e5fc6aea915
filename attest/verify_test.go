package attest

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-sev-guest/kds"
	sevdata "github.com/google/go-sev-guest/verify/testdata"
	"github.com/google/go-sev-guest/verify/trust"
)

// The simulated attester and one sealed evidence are built once and shared.
var fixture = sync.OnceValues(func() (*sealFixture, error) {
	a, err := NewSimulatedAttester(42)
	if err != nil {
		return nil, err
	}
	m := newTestModel()
	id, err := ComputeIdentity(m.input())
	if err != nil {
		return nil, err
	}
	f := &sealFixture{attester: a, identity: id, nonce: testNonce(7)}
	f.plan[0], f.plan[31] = 0xaa, 0x55
	f.evidence, err = Seal(a, f.plan, id, f.nonce)
	if err != nil {
		return nil, err
	}
	f.file, err = MarshalEvidence(f.evidence)
	return f, err
})

type sealFixture struct {
	attester Attester
	identity Identity
	plan     [32]byte
	nonce    []byte
	evidence *Evidence
	file     []byte
}

func getFixture(t *testing.T) *sealFixture {
	t.Helper()
	f, err := fixture()
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return f
}

// freshEvidence returns a deep copy of the fixture's evidence, via its file form.
func freshEvidence(t *testing.T) *Evidence {
	t.Helper()
	ev, err := UnmarshalEvidence(getFixture(t).file)
	if err != nil {
		t.Fatalf("UnmarshalEvidence: %v", err)
	}
	return ev
}

var allowSim = Policy{AllowSimulated: true}

func TestSimulatedRoundTrip(t *testing.T) {
	f := getFixture(t)
	if !f.attester.Simulated() {
		t.Fatal("simulated attester says it is not simulated")
	}
	ev := freshEvidence(t)
	if !ev.Simulated || !strings.Contains(ev.Label, "simulated") || !strings.HasPrefix(ev.String(), "SIMULATED") {
		t.Fatalf("simulated evidence not labelled: %v / %q", ev.Simulated, ev.String())
	}
	if !bytes.Contains(f.file, []byte(`"kind": "simulated"`)) || !bytes.Contains(f.file, []byte("SIMULATED evidence")) {
		t.Fatalf("evidence file does not say simulated in plain words:\n%s", f.file)
	}
	if len(ev.VCEK) == 0 || len(ev.ASK) == 0 || len(ev.ARK) == 0 || len(ev.VLEK) != 0 {
		t.Fatalf("certificate chain: vcek %d ask %d ark %d vlek %d bytes", len(ev.VCEK), len(ev.ASK), len(ev.ARK), len(ev.VLEK))
	}

	// Deterministic encoding.
	again, err := MarshalEvidence(ev)
	if err != nil || !bytes.Equal(again, f.file) {
		t.Fatalf("re-marshalling differs (err %v)", err)
	}

	rep, err := VerifySealed(ev, f.plan, f.identity, f.nonce, allowSim)
	if err != nil {
		t.Fatalf("VerifySealed: %v", err)
	}
	if !rep.Simulated || !strings.HasPrefix(rep.String(), "attestation: SIMULATED") {
		t.Fatalf("report not marked simulated:\n%s", rep)
	}
	if !bytes.Equal(rep.Measurement, SimulatedMeasurement()) || rep.ReportedTCB != SimulatedTCB || rep.Policy.Debug || rep.VMPL != 0 || rep.Signer != "VCEK" {
		t.Fatalf("unexpected report:\n%s", rep)
	}
	want, _ := ReportData(f.plan, f.identity, f.nonce)
	if !bytes.Equal(rep.ReportData, want[:]) {
		t.Fatal("report data in the report differs from the sealed one")
	}
	// Plain Verify with the REPORT_DATA and a full policy.
	pol := Policy{AllowSimulated: true, MinimumTCB: SimulatedTCB, Measurement: SimulatedMeasurement()}
	if _, err := Verify(ev, want, pol); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	// A second simulated device with another seed verifies too, with another chip ID.
	b, err := NewSimulatedAttester(43)
	if err != nil {
		t.Fatal(err)
	}
	ev2, err := b.Attest(want)
	if err != nil {
		t.Fatal(err)
	}
	rep2, err := Verify(ev2, want, allowSim)
	if err != nil {
		t.Fatalf("Verify seed 43: %v", err)
	}
	if bytes.Equal(rep2.ChipID, rep.ChipID) {
		t.Fatal("different seeds give the same chip ID")
	}
}

func TestRefuseSimulated(t *testing.T) {
	f := getFixture(t)
	ev := freshEvidence(t)
	_, err := VerifySealed(ev, f.plan, f.identity, f.nonce, Policy{})
	if !errors.Is(err, ErrSimulated) || !strings.Contains(err.Error(), "evidence is simulated (signed by a test root); pass --allow-simulated to accept it") {
		t.Fatalf("got %v", err)
	}
	// Relabelled as hardware: the chain still gives it away.
	ev.Simulated = false
	ev.Label = "AMD SEV-SNP hardware report via /dev/sev-guest"
	_, err = VerifySealed(ev, f.plan, f.identity, f.nonce, Policy{})
	if !errors.Is(err, ErrSimulated) || !strings.Contains(err.Error(), "relabelled") {
		t.Fatalf("relabelled evidence: %v", err)
	}
	_, err = VerifySealed(ev, f.plan, f.identity, f.nonce, allowSim)
	if err == nil || !strings.Contains(err.Error(), "its file says hardware") {
		t.Fatalf("relabelled evidence with AllowSimulated: %v", err)
	}
}

func TestBindingMismatch(t *testing.T) {
	f := getFixture(t)
	otherPlan := f.plan
	otherPlan[5] ^= 1
	c := newTestModel()
	c.flags["weights"] = "bf16"
	otherID := mustIdentity(t, c.input())

	cases := []struct {
		name     string
		plan     [32]byte
		id       Identity
		nonce    []byte
		contains []string
		excludes []string
	}{
		{"stale nonce", f.plan, f.identity, testNonce(8),
			[]string{"REPORT_DATA mismatch: evidence binds ", "nonce differs: evidence was sealed with nonce", "stale or replayed"},
			[]string{"plan digest differs", "model identity differs"}},
		{"other plan", otherPlan, f.identity, f.nonce,
			[]string{"plan digest differs: evidence was sealed for plan " + Digest(f.plan).String()},
			[]string{"nonce differs", "model identity differs"}},
		{"other model", f.plan, otherID, f.nonce,
			[]string{"model identity differs: evidence was sealed for model " + f.identity.Digest.String() + ", expected model " + otherID.Digest.String()},
			[]string{"nonce differs", "plan digest differs"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := VerifySealed(freshEvidence(t), tc.plan, tc.id, tc.nonce, allowSim)
			if !errors.Is(err, ErrReportDataMismatch) {
				t.Fatalf("got %v", err)
			}
			for _, s := range tc.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message lacks %q: %v", s, err)
				}
			}
			for _, s := range tc.excludes {
				if strings.Contains(err.Error(), s) {
					t.Errorf("message wrongly says %q: %v", s, err)
				}
			}
		})
	}

	// Without a binding, the mismatch is still found, and the message says why it is vague.
	ev := freshEvidence(t)
	ev.Binding = nil
	_, err := VerifySealed(ev, f.plan, f.identity, testNonce(9), allowSim)
	if !errors.Is(err, ErrReportDataMismatch) || !strings.Contains(err.Error(), "records no binding") {
		t.Fatalf("no binding: %v", err)
	}
	// A forged binding (claiming the expected inputs) does not hash to the signed data.
	ev = freshEvidence(t)
	ev.Binding.Nonce = testNonce(9)
	_, err = VerifySealed(ev, f.plan, f.identity, testNonce(9), allowSim)
	if !errors.Is(err, ErrReportDataMismatch) || !strings.Contains(err.Error(), "does not hash to its signed REPORT_DATA") {
		t.Fatalf("forged binding: %v", err)
	}
	// An edited binding on evidence that still verifies (REPORT_DATA matches
	// the verifier's inputs) is refused: unsigned fields are cross-checked.
	ev = freshEvidence(t)
	ev.Binding.Nonce = testNonce(9)
	if _, err = VerifySealed(ev, f.plan, f.identity, f.nonce, allowSim); err == nil || !strings.Contains(err.Error(), "the file was edited") {
		t.Fatalf("edited binding on matching evidence: %v", err)
	}
	if _, err = VerifySealed(freshEvidence(t), f.plan, f.identity, f.nonce, allowSim); err != nil {
		t.Fatalf("the unedited evidence: %v", err)
	}
	// Plain Verify with a wrong REPORT_DATA.
	var want [64]byte
	_, err = Verify(freshEvidence(t), want, allowSim)
	if !errors.Is(err, ErrReportDataMismatch) {
		t.Fatalf("Verify with zero REPORT_DATA: %v", err)
	}
	// A bad nonce length is refused before anything else.
	if _, err := VerifySealed(freshEvidence(t), f.plan, f.identity, []byte("short"), allowSim); err == nil || !strings.Contains(err.Error(), "nonce must be") {
		t.Fatalf("short nonce: %v", err)
	}
}

func TestTamperedReport(t *testing.T) {
	f := getFixture(t)
	positions := []struct {
		field string
		off   int
	}{
		{"version", 0x00},
		{"policy (ABI minor)", 0x08},
		{"policy (debug bit)", 0x0A},
		{"policy (reserved)", 0x0F},
		{"vmpl", 0x30},
		{"current TCB", 0x38},
		{"signer info", 0x48},
		{"report data (first)", 0x50},
		{"report data (last)", 0x8F},
		{"measurement (first)", 0x90},
		{"measurement (last)", 0xBF},
		{"host data", 0xC0},
		{"reported TCB", 0x180},
		{"chip id", 0x1A0},
		{"reserved", 0x300},
		{"signature r (first)", 0x2A0},
		{"signature r (last)", 0x2A0 + 0x47},
		{"signature s", 0x2E8},
		{"signature padding", 0x2A0 + 0x90},
		{"last byte", 0x49F},
	}
	for _, p := range positions {
		for _, mask := range []byte{0x01, 0x80} {
			ev := freshEvidence(t)
			ev.Report[p.off] ^= mask
			rep, err := VerifySealed(ev, f.plan, f.identity, f.nonce, allowSim)
			if err == nil {
				t.Errorf("%s at 0x%x ^ 0x%02x: accepted (%v)", p.field, p.off, mask, rep)
				continue
			}
			msg := err.Error()
			if !strings.Contains(msg, "signature") && !strings.Contains(msg, "malformed") && !strings.Contains(msg, "does not verify") {
				t.Errorf("%s at 0x%x: unclear message: %v", p.field, p.off, err)
			}
		}
	}
	// Swapping the VCEK for another simulated chip's. Every simulated chip shares go-sev-guest's
	// one test VCEK key, so the signature still verifies; the chip ID in the certificate does not
	// match the report's.
	other, err := NewSimulatedAttester(99)
	if err != nil {
		t.Fatal(err)
	}
	var rd [64]byte
	ev2, err := other.Attest(rd)
	if err != nil {
		t.Fatal(err)
	}
	ev := freshEvidence(t)
	ev.VCEK = ev2.VCEK
	if _, err := VerifySealed(ev, f.plan, f.identity, f.nonce, allowSim); err == nil || !strings.Contains(err.Error(), "CHIP_ID") {
		t.Fatalf("foreign VCEK: %v", err)
	}
	ev.VCEK = nil
	if _, err := VerifySealed(ev, f.plan, f.identity, f.nonce, allowSim); err == nil || !strings.Contains(err.Error(), "no VCEK certificate") {
		t.Fatalf("missing VCEK: %v", err)
	}
	if _, err := Verify(nil, rd, allowSim); err == nil {
		t.Fatal("nil evidence accepted")
	}
}

func TestPolicyChecks(t *testing.T) {
	var rd [64]byte
	rd[3] = 3
	dbg, err := NewSimulatedAttesterWith(SimulatedOptions{Seed: 5, Debug: true})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := dbg.Attest(rd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ev, rd, allowSim); err == nil || !strings.Contains(err.Error(), "allows debugging") {
		t.Fatalf("debug guest: %v", err)
	}
	rep, err := Verify(ev, rd, Policy{AllowSimulated: true, AllowDebug: true})
	if err != nil || !rep.Policy.Debug {
		t.Fatalf("debug guest with AllowDebug: %v", err)
	}

	ev = freshEvidence(t)
	want := must64(ev.ReportData())
	high := SimulatedTCB
	high.SNP++
	if _, err := Verify(ev, want, Policy{AllowSimulated: true, MinimumTCB: high}); err == nil || !strings.Contains(err.Error(), "TCB") {
		t.Fatalf("minimum TCB: %v", err)
	}
	otherM := bytes.Repeat([]byte{1}, 48)
	if _, err := Verify(ev, want, Policy{AllowSimulated: true, Measurement: otherM}); err == nil || !strings.Contains(err.Error(), "MEASUREMENT") {
		t.Fatalf("measurement: %v", err)
	}
	if _, err := Verify(ev, want, Policy{AllowSimulated: true, Measurement: []byte{1}}); err == nil || !strings.Contains(err.Error(), "policy measurement must be 48 bytes") {
		t.Fatalf("short measurement: %v", err)
	}
	m2, err := NewSimulatedAttesterWith(SimulatedOptions{Seed: 6, Measurement: otherM, TCB: TCB{BootLoader: 4, SNP: 22, Microcode: 210}})
	if err != nil {
		t.Fatal(err)
	}
	ev3, err := m2.Attest(rd)
	if err != nil {
		t.Fatal(err)
	}
	rep, err = Verify(ev3, rd, Policy{AllowSimulated: true, Measurement: otherM, MinimumTCB: high})
	if err != nil || rep.ReportedTCB.SNP != 22 {
		t.Fatalf("custom measurement and TCB: %v", err)
	}
	if _, err := NewSimulatedAttesterWith(SimulatedOptions{Measurement: []byte{1}}); err == nil {
		t.Fatal("short simulated measurement accepted")
	}
}

func TestEvidenceFileErrors(t *testing.T) {
	f := getFixture(t)
	good := string(f.file)
	cases := []struct {
		name string
		data string
		want string
	}{
		{"empty", "", "empty"},
		{"garbage", "\x00\x01garbage", "not valid evidence JSON"},
		{"truncated", good[:len(good)/2], "not valid evidence JSON"},
		{"trailing", good + "{}", "trailing data"},
		{"wrong format", strings.Replace(good, EvidenceFormat, "other-format", 1), `format is "other-format"`},
		{"future version", strings.Replace(good, `"version": 1`, `"version": 2`, 1), "version is 2; this build reads version 1"},
		{"unknown field", strings.Replace(good, `"version": 1,`, `"version": 1, "extra": 1,`, 1), "unknown field"},
		{"kind flipped", strings.Replace(good, `"kind": "simulated"`, `"kind": "hardware"`, 1), "inconsistent"},
		{"simulated flipped", strings.Replace(good, `"simulated": true`, `"simulated": false`, 1), "inconsistent"},
		{"notice dropped", strings.Replace(good, SimulatedNotice, "", 1), "inconsistent"},
		{"label without simulated", strings.Replace(good, `"label": "simulated SEV-SNP device`, `"label": "SEV-SNP device`, 1), "must say so in its label"},
		{"short report", `{"format":"gelo-sev-snp-evidence","version":1,"kind":"hardware","simulated":false,"notice":"` + HardwareNotice + `","label":"x","report":"AAAA"}`, "attestation report is 3 bytes"},
		{"bad vcek", strings.Replace(good, `"vcek": "`, `"vcek": "AAAA`, 1), "VCEK certificate does not parse"},
		{"bad nonce", strings.Replace(good, `"nonce": "0708`, `"nonce": "`, 1), "binding: nonce must be"},
		{"huge", good + strings.Repeat(" ", maxEvidenceFile), "more than the"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.data == good {
				t.Fatal("test case did not change the file")
			}
			_, err := UnmarshalEvidence([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Every truncation is refused.
	for n := 0; n < len(good); n += 97 {
		if _, err := UnmarshalEvidence([]byte(good[:n])); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", n)
		}
	}
	if _, err := MarshalEvidence(&Evidence{Report: []byte{1}}); err == nil {
		t.Fatal("MarshalEvidence accepted a 1-byte report")
	}
}

func TestNewAttesterHere(t *testing.T) {
	if _, err := os.Stat(sevGuestPath); err == nil {
		t.Skip("this machine has /dev/sev-guest")
	}
	a, err := NewAttester()
	if err == nil {
		t.Fatalf("NewAttester on a machine without SEV-SNP returned %T", a)
	}
	if !strings.Contains(err.Error(), "/dev/sev-guest") || !strings.Contains(err.Error(), "simulated") {
		t.Fatalf("unhelpful error: %v", err)
	}
}

func FuzzUnmarshalEvidence(f *testing.F) {
	fx, err := fixture()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fx.file)
	f.Add(fx.file[:len(fx.file)/3])
	f.Add([]byte(`{"format":"gelo-sev-snp-evidence","version":1}`))
	f.Add([]byte("null"))
	f.Add([]byte{})
	if hw, err := MarshalEvidence(&Evidence{Label: "hardware", Report: sevdata.AttestationBytes, VCEK: sevdata.VcekBytes}); err == nil {
		f.Add(hw)
	}
	want := must64(fx.evidence.ReportData())
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := UnmarshalEvidence(data)
		if err != nil {
			if ev != nil {
				t.Fatal("evidence returned with an error")
			}
			return
		}
		out, err := MarshalEvidence(ev)
		if err != nil {
			t.Fatalf("accepted evidence does not marshal: %v", err)
		}
		back, err := UnmarshalEvidence(out)
		if err != nil {
			t.Fatalf("re-marshalled evidence does not unmarshal: %v", err)
		}
		if again, _ := MarshalEvidence(back); !bytes.Equal(again, out) {
			t.Fatal("marshalling is not stable")
		}
		// Whatever parses must verify or be refused, without a panic.
		_, _ = Verify(ev, want, allowSim)
	})
}

// TestVerifyRandomMutations flips random bits in a sealed evidence file: whatever still parses
// must be refused (or, if only the unsigned label or binding changed, accepted) without a
// panic. It runs in every plain "go test", unlike the fuzz target's mutations.
func TestVerifyRandomMutations(t *testing.T) {
	f := getFixture(t)
	want := must64(f.evidence.ReportData())
	r := rand.New(rand.NewSource(1))
	n := 300
	if testing.Short() {
		n = 50
	}
	for i := 0; i < n; i++ {
		data := bytes.Clone(f.file)
		for k := 0; k < 1+r.Intn(3); k++ {
			data[r.Intn(len(data))] ^= byte(1 << r.Intn(8))
		}
		ev, err := UnmarshalEvidence(data)
		if err != nil {
			continue
		}
		rep, err := Verify(ev, want, allowSim)
		if err == nil && !bytes.Equal(ev.Report, f.evidence.Report) {
			t.Fatalf("mutation %d: altered report accepted: %v", i, rep)
		}
		_, _ = Verify(ev, want, Policy{})
	}
}

// amdEvidence is a genuine AMD-signed report from a Milan guest (go-sev-guest's test data:
// REPORT_DATA 01 02 03 04 05 00..., a debug-enabled guest policy) with its real VCEK, ASK and
// ARK. Its VCEK is valid from 2022-09-24 to 2029-09-24.
func amdEvidence(t *testing.T) (*Evidence, [64]byte, Policy) {
	t.Helper()
	ask, ark, err := kds.ParseProductCertChain(trust.AskArkMilanVcekBytes)
	if err != nil {
		t.Fatal(err)
	}
	ev := &Evidence{
		Label:  "AMD SEV-SNP hardware report (go-sev-guest test data)",
		Report: bytes.Clone(sevdata.AttestationBytes),
		VCEK:   bytes.Clone(sevdata.VcekBytes),
		ASK:    ask,
		ARK:    ark,
	}
	var want [64]byte
	copy(want[:], []byte{1, 2, 3, 4, 5})
	return ev, want, Policy{AllowDebug: true, Now: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)}
}

func TestHardwareEvidence(t *testing.T) {
	ev, want, pol := amdEvidence(t)
	rep, err := Verify(ev, want, pol)
	if err != nil {
		t.Fatalf("genuine AMD evidence: %v", err)
	}
	if rep.Simulated || !strings.Contains(rep.Root, "AMD's embedded ARK for Milan") || !strings.HasPrefix(rep.String(), "attestation: AMD SEV-SNP hardware") {
		t.Fatalf("report:\n%s", rep)
	}
	if rep.ReportedTCB != (TCB{BootLoader: 2, SNP: 5, Microcode: 68}) {
		t.Fatalf("TCB %v", rep.ReportedTCB)
	}

	// The file form round-trips and says hardware.
	file, err := MarshalEvidence(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(file, []byte(`"kind": "hardware"`)) || !bytes.Contains(file, []byte(`"simulated": false`)) || bytes.Contains(file, []byte("SIMULATED")) {
		t.Fatalf("hardware evidence file:\n%s", file)
	}
	back, err := UnmarshalEvidence(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(back, want, pol); err != nil {
		t.Fatal(err)
	}

	// Debug guests are refused by default.
	strict := pol
	strict.AllowDebug = false
	if _, err := Verify(ev, want, strict); err == nil || !strings.Contains(err.Error(), "allows debugging") {
		t.Fatalf("debug guest: %v", err)
	}
	// Outside the VCEK's validity.
	late := pol
	late.Now = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := Verify(ev, want, late); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired VCEK: %v", err)
	}
	// A flipped REPORT_DATA byte breaks AMD's signature.
	bad, _, _ := amdEvidence(t)
	bad.Report[0x51] ^= 1
	if _, err := Verify(bad, want, pol); err == nil || !strings.Contains(err.Error(), "does not verify against AMD's roots") {
		t.Fatalf("tampered hardware evidence: %v", err)
	}
	// Labelled simulated although AMD signed it.
	relabel, _, _ := amdEvidence(t)
	relabel.Simulated, relabel.Label = true, "simulated"
	pol.AllowSimulated = true
	if _, err := Verify(relabel, want, pol); err == nil || !strings.Contains(err.Error(), "says simulated but its chain verifies to AMD's root") {
		t.Fatalf("relabelled hardware evidence: %v", err)
	}
	// The simulated VCEK cannot stand in for AMD's.
	mixed, _, _ := amdEvidence(t)
	mixed.VCEK = freshEvidence(t).VCEK
	if _, err := Verify(mixed, want, pol); err == nil {
		t.Fatal("AMD report with a simulated VCEK accepted")
	}
}
