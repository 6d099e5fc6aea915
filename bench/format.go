package bench

import (
	"fmt"
	"slices"
	"time"
)

// Short prints a duration with three significant digits (1.23ms, 12.3ms,
// 123ms): the tables' time format, which the CLI's other verbs share.
func Short(d time.Duration) string {
	for _, unit := range []time.Duration{time.Second, time.Millisecond, time.Microsecond} {
		if d >= unit {
			r := unit / 100
			for lim := 10 * unit; d >= lim && r < unit; lim *= 10 {
				r *= 10
			}
			return d.Round(r).String()
		}
	}
	return d.String()
}

// median is the middle of d (the upper one of an even count); d is left
// as it was.
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// pct is a over b as a signed percentage change (0 when b is 0).
func pct(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return 100 * (float64(a)/float64(b) - 1)
}

// human prints a byte count per token in B, KiB or MiB.
func human(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
