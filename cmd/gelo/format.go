package main

import (
	"time"

	"gelo/bench"
)

// short prints a duration with three significant digits, as the bench
// tables do (bench.Short: one format for every verb's timings).
func short(d time.Duration) string { return bench.Short(d) }
