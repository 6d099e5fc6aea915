package tokenizer

// VocabSize returns one more than the largest token id, added tokens
// included (151669 for Qwen3; the model's embedding table may be larger).
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// ModelVocabSize returns the size of model.vocab alone (151643 for Qwen3).
func (t *Tokenizer) ModelVocabSize() int { return t.modelVocab }

// IDToToken returns the token with the given id as tokenizer.json writes it
// (byte-level form for vocabulary tokens, e.g. "Ġhello"; content for added
// tokens).
func (t *Tokenizer) IDToToken(id int) (string, bool) {
	if id < 0 || id >= len(t.idKind) || t.idKind[id] == kindNone {
		return "", false
	}
	return t.idToTok[id], true
}

// TokenToID returns the id of a token given as tokenizer.json writes it;
// added tokens take precedence over the model vocabulary.
func (t *Tokenizer) TokenToID(tok string) (int, bool) {
	if id, ok := t.addedByContent[tok]; ok {
		return id, true
	}
	if id, ok := t.vocab[tok]; ok {
		return int(id), true
	}
	return 0, false
}

// TokenBytes returns the bytes that the token with the given id decodes to.
func (t *Tokenizer) TokenBytes(id int) ([]byte, bool) {
	if id < 0 || id >= len(t.idKind) || t.idKind[id] == kindNone {
		return nil, false
	}
	return []byte(t.idToBytes[id]), true
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int) bool {
	return id >= 0 && id < len(t.idKind) && t.idKind[id] == kindSpecial
}

// AddedTokens returns a copy of tokenizer.json's added_tokens.
func (t *Tokenizer) AddedTokens() []AddedToken {
	return append([]AddedToken(nil), t.added...)
}

// SpecialTokenIDs returns the ids of the added tokens marked special, in
// increasing order.
func (t *Tokenizer) SpecialTokenIDs() []int {
	return t.sortedIDs(func(a AddedToken) bool { return a.Special })
}

// Config returns what was read from tokenizer_config.json (the zero Config
// when there was none).
func (t *Tokenizer) Config() Config {
	c := t.config
	c.AdditionalSpecialTokens = append([]string(nil), c.AdditionalSpecialTokens...)
	return c
}

func idOK(id int) (int, bool) { return id, id >= 0 }

// BOSTokenID returns the id of tokenizer_config.json's bos_token.
func (t *Tokenizer) BOSTokenID() (int, bool) { return idOK(t.bosID) }

// EOSTokenID returns the id of tokenizer_config.json's eos_token
// (<|im_end|> for Qwen3).
func (t *Tokenizer) EOSTokenID() (int, bool) { return idOK(t.eosID) }

// PadTokenID returns the id of tokenizer_config.json's pad_token
// (<|endoftext|> for Qwen3).
func (t *Tokenizer) PadTokenID() (int, bool) { return idOK(t.padID) }

// UnkTokenID returns the id of tokenizer_config.json's unk_token.
func (t *Tokenizer) UnkTokenID() (int, bool) { return idOK(t.unkTokID) }
