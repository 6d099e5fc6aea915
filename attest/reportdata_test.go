package attest

import (
	"encoding/hex"
	"strings"
	"testing"
)

func testNonce(b byte) []byte {
	n := make([]byte, 16)
	for i := range n {
		n[i] = b + byte(i)
	}
	return n
}

func TestReportDataKnownAnswer(t *testing.T) {
	id := mustIdentity(t, IdentityInput{
		Config:    []byte(`{"hidden_size":2}`),
		Tensors:   []TensorInput{{Name: "w", DType: "F32", Shape: []int{2}, Data: []byte{0, 0, 128, 63, 0, 0, 0, 64}}},
		Tokenizer: []byte("tok"),
		Flags:     map[string]string{"qk_norm": "true"},
	})
	var plan [32]byte
	for i := range plan {
		plan[i] = byte(i)
	}
	rd, err := ReportData(plan, id, testNonce(100))
	if err != nil {
		t.Fatal(err)
	}
	// Computed by a separate implementation of the documented framing.
	const want = "86f29b907a506b4459b5650c5ae625c78ee9b6d789c13a79414cd87c08f1f069" +
		"8bb9aff90e936c8a5d88158b31d305ca5094510c60f6e6c5daa3ad677f5dc9b1"
	if got := hex.EncodeToString(rd[:]); got != want {
		t.Fatalf("ReportData = %s, want %s", got, want)
	}
}

func TestReportDataInputs(t *testing.T) {
	m := newTestModel()
	id := mustIdentity(t, m.input())
	var plan [32]byte
	plan[0] = 1
	nonce := testNonce(1)
	base, err := ReportData(plan, id, nonce)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ReportData(plan, id, nonce)
	if again != base {
		t.Fatal("ReportData is not deterministic")
	}

	plan2 := plan
	plan2[31] = 9
	c := m.clone()
	c.flags["qk_norm"] = "false"
	id2 := mustIdentity(t, c.input())
	longer := append(testNonce(1), 0)
	for name, got := range map[string][64]byte{
		"plan":         must64(ReportData(plan2, id, nonce)),
		"identity":     must64(ReportData(plan, id2, nonce)),
		"nonce":        must64(ReportData(plan, id, testNonce(2))),
		"nonce length": must64(ReportData(plan, id, longer)),
	} {
		if got == base {
			t.Errorf("changing the %s does not change REPORT_DATA", name)
		}
	}

	for _, n := range []int{0, 15, 65, 200} {
		if _, err := ReportData(plan, id, make([]byte, n)); err == nil || !strings.Contains(err.Error(), "nonce must be 16 to 64 bytes") {
			t.Errorf("nonce of %d bytes: %v", n, err)
		}
	}
	for _, n := range []int{16, 32, 64} {
		if _, err := ReportData(plan, id, make([]byte, n)); err != nil {
			t.Errorf("nonce of %d bytes: %v", n, err)
		}
	}
}

func must64(v [64]byte, err error) [64]byte {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSessionReportData: every input changes the session REPORT_DATA, and
// bad lengths are refused.
func TestSessionReportData(t *testing.T) {
	ekm := make([]byte, SessionEKMLen)
	nonce := make([]byte, 32)
	var key, plan [32]byte
	base, err := SessionReportData(ekm, nonce, key, plan)
	if err != nil {
		t.Fatal(err)
	}
	ekm2 := append([]byte{}, ekm...)
	ekm2[0] = 1
	nonce2 := append([]byte{}, nonce...)
	nonce2[0] = 1
	key2, plan2 := key, plan
	key2[0], plan2[0] = 1, 1
	for name, args := range map[string]struct {
		ekm, nonce []byte
		key, plan  [32]byte
	}{"ekm": {ekm2, nonce, key, plan}, "nonce": {ekm, nonce2, key, plan}, "key": {ekm, nonce, key2, plan}, "plan": {ekm, nonce, key, plan2}} {
		got, err := SessionReportData(args.ekm, args.nonce, args.key, args.plan)
		if err != nil {
			t.Fatal(err)
		}
		if got == base {
			t.Errorf("changing the %s leaves REPORT_DATA unchanged", name)
		}
	}
	if _, err := SessionReportData(ekm[:8], nonce, key, plan); err == nil {
		t.Error("short exported keying material accepted")
	}
	if _, err := SessionReportData(ekm, nonce[:4], key, plan); err == nil {
		t.Error("short nonce accepted")
	}
}
