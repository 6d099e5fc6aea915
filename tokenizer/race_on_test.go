//go:build race

package tokenizer

// raceEnabled is true when tests run under the race detector, which slows
// them several times over.
const raceEnabled = true
