package cpuid

import (
	"os"
	"runtime"
	"slices"
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

// TestAMXNeedsTheCPUFlags: AMX is never reported where the kernel lists
// no AMX tile, int8 and bf16 support, and where it does, the kernel granted
// the tile state (an arch_prctl refusal would have left AMX false).
func TestAMXNeedsTheCPUFlags(t *testing.T) {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil || runtime.GOARCH != "amd64" {
		t.Skipf("no /proc/cpuinfo on %s (%v)", runtime.GOARCH, err)
	}
	var flags []string
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = strings.Fields(v)
			break
		}
	}
	listed := slices.Contains(flags, "amx_tile") && slices.Contains(flags, "amx_int8") && slices.Contains(flags, "amx_bf16")
	if AMX && !listed {
		t.Fatalf("AMX reported, but /proc/cpuinfo lists no amx_tile, amx_int8 and amx_bf16")
	}
	t.Logf("AMX %v (the kernel lists the flags: %v)", AMX, listed)
}
