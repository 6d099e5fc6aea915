//go:build !linux

package attest

import (
	"fmt"
	"runtime"
)

// NewAttester fails outside Linux: the SEV-SNP guest interfaces are Linux kernel interfaces.
func NewAttester() (Attester, error) {
	return nil, fmt.Errorf("no SEV-SNP guest interface on %s (only Linux guests expose one); only a simulated attester is available here", runtime.GOOS)
}
