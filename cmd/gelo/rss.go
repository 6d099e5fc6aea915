package main

import "gelo/bench"

// residentBytes is the process's resident set in bytes, or 0 where it
// cannot be read (bench.ResidentBytes: one reader of /proc/self/status).
func residentBytes() int64 { return bench.ResidentBytes() }

// peakResidentBytes is the process's peak resident set, or 0.
func peakResidentBytes() int64 { return bench.PeakResidentBytes() }

// humanRSS prints a resident size, n/a where it was not read.
func humanRSS(n int64) string { return bench.HumanRSS(n) }
