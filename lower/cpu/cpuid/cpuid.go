// Package cpuid names the CPU's vendor, for the few kernel choices that
// measure differently on Intel and AMD parts with the same instruction
// set (software prefetch hints: see L2Prefetch), and says whether the
// process may use AMX tiles (AMX), which the OS must grant.
package cpuid

import (
	"fmt"
	"os"
	"strings"
)

// Vendor is the CPUID vendor string ("GenuineIntel", "AuthenticAMD", ...),
// or "" where it is not read (other architectures, -tags purego).
var Vendor = vendor()

// L2Prefetch reports whether the streaming kernels prefetch into L2
// (PREFETCHT1) rather than with the hint each was tuned with on the AMD
// EPYC kinds (T0, or NTA for the 16-bit attention scores, or none for the
// AVX-512 V sums). On the Intel Xeon kind T1 streamed a cold q4_0 decode
// step's weights and the decode attention's cache 1.4-1.8x faster than
// those hints; on AMD Zen 4 T1 and T2 fill L2 only and are reported to be
// dropped at times, and the AMD kinds' figures were measured with the
// hints kept there. The vendor picks, unless GELO_PREFETCH says t1 or
// tuned: the T1 kernels were written after the last AMD measurements, so
// a session there can time both in one binary. Only speed depends on it:
// a prefetch changes no result. PrefetchChoice says in words what picked.
var L2Prefetch, PrefetchChoice = l2Prefetch(Vendor, os.Getenv("GELO_PREFETCH"))

// l2Prefetch is L2Prefetch and PrefetchChoice for a vendor and a
// GELO_PREFETCH value: t1 or tuned (any case) choose, anything else
// leaves it to the vendor (a value not understood is named in the choice,
// so that a typo shows where the choice is printed).
func l2Prefetch(vendor, env string) (bool, string) {
	byVendor := vendor == "GenuineIntel"
	switch v := strings.ToLower(strings.TrimSpace(env)); v {
	case "t1":
		return true, "GELO_PREFETCH=t1"
	case "tuned":
		return false, "GELO_PREFETCH=tuned"
	case "":
		return byVendor, "by the CPU vendor"
	default:
		return byVendor, fmt.Sprintf("by the CPU vendor (GELO_PREFETCH=%q not understood: t1 or tuned)", env)
	}
}
