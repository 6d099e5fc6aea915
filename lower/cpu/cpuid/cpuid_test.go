package cpuid

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestVendorMatchesProcCPUInfo checks the vendor read by CPUID against the
// kernel's own reading, where Linux gives one.
func TestVendorMatchesProcCPUInfo(t *testing.T) {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil || runtime.GOARCH != "amd64" {
		t.Skipf("no /proc/cpuinfo on %s (%v)", runtime.GOARCH, err)
	}
	want := ""
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "vendor_id" {
			want = strings.TrimSpace(v)
			break
		}
	}
	if want == "" {
		t.Skip("/proc/cpuinfo names no vendor_id")
	}
	if vendor() != "" && Vendor != want {
		t.Fatalf("Vendor = %q, /proc/cpuinfo says %q", Vendor, want)
	}
	if L2Prefetch != (Vendor == "GenuineIntel") {
		t.Fatalf("L2Prefetch = %v for vendor %q", L2Prefetch, Vendor)
	}
	t.Logf("vendor %q, L2Prefetch %v", Vendor, L2Prefetch)
}
