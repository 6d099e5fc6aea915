package passes

import "gelo/formats"

// The weight-format names, kept here while callers move to package
// formats (the one record of each format); they are its names, not a
// second table.
const (
	WeightsF32     = formats.F32
	WeightsBF16    = formats.BF16
	WeightsBF16Dot = formats.BF16Dot
	WeightsQ8_0    = formats.Q8_0
	WeightsQ4_0    = formats.Q4_0
	WeightsQ4_K    = formats.Q4_K
)

// WeightFormats lists the formats --weights takes (formats.PlanNames at
// start-up; a format registered later is in formats.PlanNames only).
var WeightFormats = formats.PlanNames()
