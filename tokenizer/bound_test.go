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

// TestMinTokensStrippingAddedToken: an added token with rstrip takes in
// the spaces after it, so one token covers any length: no bound.
func TestMinTokensStrippingAddedToken(t *testing.T) {
	const tj = `{"added_tokens":[{"id":2,"content":"<x>","rstrip":true}],` +
		`"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":false},"decoder":{"type":"ByteLevel"},` +
		`"model":{"type":"BPE","vocab":{"a":0,"Ġ":1},"merges":[]}}`
	tok, err := Parse([]byte(tj), nil, "tok.json", "")
	if err != nil {
		t.Fatal(err)
	}
	s := "<x>" + strings.Repeat(" ", 1000)
	if lo, n := tok.MinTokens(s), len(tok.Encode(s)); lo > n {
		t.Fatalf("MinTokens %d > %d tokens", lo, n)
	}
}
