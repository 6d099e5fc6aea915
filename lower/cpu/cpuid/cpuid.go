// Package cpuid names the CPU's vendor, for the few kernel choices that
// measure differently on Intel and AMD parts with the same instruction
// set (software prefetch hints: see L2Prefetch), and says whether the
// process may use AMX tiles (AMX), which the OS must grant.
package cpuid

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
// hints kept there. Only speed depends on it: a prefetch changes no
// result.
var L2Prefetch = Vendor == "GenuineIntel"
