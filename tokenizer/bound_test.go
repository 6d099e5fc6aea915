package tokenizer

import (
	"strings"
	"testing"
)

// TestMinTokensIsALowerBound: MinTokens never exceeds what Encode gives,
// on texts built to make tokens long (runs the merges join, whitespace
// runs, composed and decomposed accents, Hangul jamo), and grows with the
// length, so a prompt far over a context is refused from its length.
func TestMinTokensIsALowerBound(t *testing.T) {
	tok := loadQwen(t)
	texts := []string{
		"", "a", strings.Repeat(" ", 5000), strings.Repeat("\n", 3000), strings.Repeat("=", 4000),
		strings.Repeat("hello world ", 300), strings.Repeat("e\u0301", 2000), strings.Repeat("\u1100\u1161\u11a8", 1500),
		strings.Repeat("-", 1<<16),
	}
	for _, s := range texts {
		if lo, n := tok.MinTokens(s), len(tok.Encode(s)); lo > n {
			t.Errorf("%.20q (%d bytes): MinTokens %d > %d tokens", s, len(s), lo, n)
		}
	}
	if big := strings.Repeat("x", 10<<20); tok.MinTokens(big) < 4096 {
		t.Errorf("a 10 MB prompt: MinTokens %d, under a 4096-token context", tok.MinTokens(big))
	}
}
