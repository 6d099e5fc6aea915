//go:build linux

package attest

import (
	"fmt"
	"os"
	"sync"

	"github.com/google/go-sev-guest/client"
)

// Where the Linux kernel exposes the SEV-SNP guest interfaces.
const (
	sevGuestPath    = "/dev/sev-guest"
	configfsTSMPath = "/sys/kernel/config/tsm/report"
)

type hardwareAttester struct {
	mu  sync.Mutex
	qp  client.QuoteProvider
	via string
}

// NewAttester returns an attester on the real SEV-SNP guest interface: configfs-tsm when the
// kernel offers it for sev_guest, /dev/sev-guest otherwise. It fails, saying why, on a machine
// that is not an SEV-SNP guest; it never falls back to the simulated device.
func NewAttester() (Attester, error) {
	_, tsmErr := os.Stat(configfsTSMPath)
	if tsmErr == nil {
		tsm := &client.LinuxConfigFsQuoteProvider{}
		if tsm.IsSupported() {
			return &hardwareAttester{qp: tsm, via: "configfs-tsm (" + configfsTSMPath + ")"}, nil
		}
	}
	if _, err := os.Stat(sevGuestPath); err != nil {
		return nil, fmt.Errorf("no SEV-SNP guest interface on this machine: %s: %v; %s: %v "+
			"(this is not an SEV-SNP confidential VM; only a simulated attester is available here)",
			sevGuestPath, err, configfsTSMPath, statErr(tsmErr))
	}
	d, err := client.OpenDevice()
	if err != nil {
		return nil, fmt.Errorf("%s exists but cannot be opened: %v", sevGuestPath, err)
	}
	d.Close()
	return &hardwareAttester{qp: &client.LinuxIoctlQuoteProvider{}, via: sevGuestPath}, nil
}

func statErr(err error) string {
	if err == nil {
		return "present, but its provider is not sev_guest"
	}
	return err.Error()
}

func (a *hardwareAttester) Simulated() bool { return false }

func (a *hardwareAttester) Attest(reportData [64]byte) (*Evidence, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	raw, err := a.qp.GetRawQuote(reportData)
	if err != nil {
		return nil, fmt.Errorf("SEV-SNP attestation through %s failed: %v", a.via, err)
	}
	return evidenceFromQuote(raw, reportData, false, "AMD SEV-SNP hardware report via "+a.via)
}
