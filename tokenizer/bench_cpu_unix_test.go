//go:build unix

package tokenizer

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the CPU time this process has used, all threads together.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a "MB/cpu-s" metric: throughput per CPU second, which
// stays meaningful on a machine whose cores are shared with other work.
func reportCPU(b *testing.B, start time.Duration, bytesPerOp int) {
	el := cpuTime() - start
	if el > 0 {
		b.ReportMetric(float64(bytesPerOp)*float64(b.N)/1e6/el.Seconds(), "MB/cpu-s")
	}
}
