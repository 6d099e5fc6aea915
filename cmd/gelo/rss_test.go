package main

import "testing"

func TestStatusKB(t *testing.T) {
	status := []byte("Name:\tgelo\nVmHWM:\t  2048 kB\nVmRSS:\t    1024 kB\nThreads:\t3\n")
	if got := statusKB(status, "VmRSS:"); got != 1024<<10 {
		t.Errorf("VmRSS = %d", got)
	}
	if got := statusKB(status, "VmHWM:"); got != 2048<<10 {
		t.Errorf("VmHWM = %d", got)
	}
	for _, bad := range []string{"VmRSS:\t12 MB\n", "VmRSS:\t-3 kB\n", "VmRSS:\tx kB\n", "VmRSS:\n", ""} {
		if got := statusKB([]byte(bad), "VmRSS:"); got != 0 {
			t.Errorf("%q: %d, want 0", bad, got)
		}
	}
	if residentBytes() < 0 || peakResidentBytes() < 0 {
		t.Error("negative resident size")
	}
	if humanRSS(0) != "n/a" {
		t.Error("unknown RSS not n/a")
	}
}
