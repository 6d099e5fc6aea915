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
	want := cpuinfoField(t, "vendor_id")
	if want == "" {
		t.Skip("/proc/cpuinfo names no vendor_id")
	}
	if vendor() != "" && Vendor != want {
		t.Fatalf("Vendor = %q, /proc/cpuinfo says %q", Vendor, want)
	}
	if want, _ := l2Prefetch(Vendor, os.Getenv("GELO_PREFETCH")); L2Prefetch != want {
		t.Fatalf("L2Prefetch = %v for vendor %q, GELO_PREFETCH=%q", L2Prefetch, Vendor, os.Getenv("GELO_PREFETCH"))
	}
	t.Logf("vendor %q, L2Prefetch %v (%s)", Vendor, L2Prefetch, PrefetchChoice)
}

// TestAMXNeedsTheCPUFlags: AMX is never reported where the kernel lists
// no AMX tile, int8 and bf16 support (where it does, AMX also needs the
// kernel to grant the tile state, which this test cannot tell apart).
func TestAMXNeedsTheCPUFlags(t *testing.T) {
	flags := strings.Fields(cpuinfoField(t, "flags"))
	listed := slices.Contains(flags, "amx_tile") && slices.Contains(flags, "amx_int8") && slices.Contains(flags, "amx_bf16")
	if AMX && !listed {
		t.Fatalf("AMX reported, but /proc/cpuinfo lists no amx_tile, amx_int8 and amx_bf16")
	}
	t.Logf("AMX %v (the kernel lists the flags: %v)", AMX, listed)
}

// cpuinfoField returns the first value of key in /proc/cpuinfo ("" if it
// names none), skipping the test where there is no such file or the CPU is
// not amd64.
func cpuinfoField(t *testing.T, key string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil || runtime.GOARCH != "amd64" {
		t.Skipf("no /proc/cpuinfo on %s (%v)", runtime.GOARCH, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestAMXWanted: GELO_AMX=0, off or false (any case, spaces around)
// turn AMX off; unset or anything else leaves it to the CPU and the kernel.
func TestAMXWanted(t *testing.T) {
	for env, want := range map[string]bool{"": true, "1": true, "on": true, "0": false, "off": false, "FALSE": false, " 0 ": false} {
		if got := amxWanted(env); got != want {
			t.Errorf("GELO_AMX=%q: wanted %v, got %v", env, want, got)
		}
	}
}

// TestL2PrefetchChoice: GELO_PREFETCH=t1 or tuned (any case, spaces
// around) overrides the vendor's choice; unset or anything else leaves it,
// and a value not understood is named in the choice.
func TestL2PrefetchChoice(t *testing.T) {
	for _, c := range []struct {
		vendor, env string
		want        bool
		says        string
	}{
		{"GenuineIntel", "", true, "vendor"},
		{"AuthenticAMD", "", false, "vendor"},
		{"AuthenticAMD", "T1", true, "GELO_PREFETCH=t1"},
		{"AuthenticAMD", " t1 ", true, "GELO_PREFETCH=t1"},
		{"GenuineIntel", "tuned", false, "GELO_PREFETCH=tuned"},
		{"GenuineIntel", "nta", true, `"nta" not understood`},
		{"AuthenticAMD", "l2", false, `"l2" not understood`},
	} {
		got, says := l2Prefetch(c.vendor, c.env)
		if got != c.want || !strings.Contains(says, c.says) {
			t.Errorf("vendor %s, GELO_PREFETCH=%q: got %v (%q), want %v (saying %q)", c.vendor, c.env, got, says, c.want, c.says)
		}
	}
}
