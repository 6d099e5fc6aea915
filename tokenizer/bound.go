package tokenizer

// normShrink bounds how many bytes of text one byte of its NFC (or other)
// normalization can stand for: composition replaces a sequence by one
// character at most three times shorter (Hangul jamo L+V+T, 9 bytes, to
// one 3-byte syllable; a letter and a combining mark, 3 bytes, to 2).
const normShrink = 3

// MinTokens is a lower bound on the number of tokens Encode gives for
// text, computed from its length alone: every token covers at most the
// longest token's bytes of the normalized text, which is at least a third
// as long as text. A caller with a token budget (a context) checks it
// first, so a prompt far over the budget costs nothing to refuse instead
// of being tokenized in full. It is 0 (no bound) for a tokenizer with an
// added token that strips the spaces beside it, since one such token
// covers any number of bytes.
func (t *Tokenizer) MinTokens(text string) int {
	return len(text) / (normShrink * max(t.maxTokenBytes, 1))
}
