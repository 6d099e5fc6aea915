package bench

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"gelo/passes"
)

// ResidentBytes is the process's resident set (VmRSS of
// /proc/self/status) in bytes, or 0 where it cannot be read: the weights
// suite's memory column, and what the CLI prints after a generation.
func ResidentBytes() int64 { return selfStatusKB("VmRSS:") }

// PeakResidentBytes is the process's peak resident set (VmHWM), or 0.
func PeakResidentBytes() int64 { return selfStatusKB("VmHWM:") }

// HumanRSS prints a resident size, n/a where it was not read.
func HumanRSS(n int64) string {
	if n <= 0 {
		return "n/a"
	}
	return passes.HumanBytes(n)
}

// selfStatusKB is statusKB of /proc/self/status, 0 where it cannot be read.
func selfStatusKB(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return statusKB(b, key)
}

// statusKB reads a "Key:   N kB" line of a /proc status file as bytes.
func statusKB(status []byte, key string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, key) {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, key))
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		return n << 10
	}
	return 0
}
