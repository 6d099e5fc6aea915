//go:build !unix

package tokenizer

import (
	"testing"
	"time"
)

func cpuTime() time.Duration { return 0 }

func reportCPU(b *testing.B, start time.Duration, bytesPerOp int) {}
