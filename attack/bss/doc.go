// Package bss holds blind-source-separation attacks (FastICA, JADE, SOBI and
// its multi-observation variant, anchor-ICA) and the metrics that score them,
// for the attack harness to run against what the device saw.
//
// Axis convention (used by every function here): an observation U is m x N,
// m mixtures (rows) by N samples (columns), modelled as U = A X with X an
// n x N matrix whose ROWS are the hidden sources. In gelo the payload
// U = A [H; S] is s x d: the s rows are mixtures, the d columns (the hidden
// width) are the samples, and the sources are the rows of X = [H; S]. A
// successful separation therefore returns rows of X up to permutation, sign
// and scale; MatchedCosines scores that with an optimal one-to-one assignment
// and |cos|, so the ambiguities cost nothing.
//
// Every random choice takes an explicit seed (math/rand/v2 PCG), so the same
// inputs give the same figures. Bad shapes are errors, never panics.
package bss
