package tokenizer

import "golang.org/x/text/unicode/norm"

// EncodeOptions adjust Encode.
type EncodeOptions struct {
	// SpecialAsText makes added tokens marked special (<|im_start|>,
	// <|im_end|>, <|endoftext|>, ...) plain text, tokenized like any other
	// text, as Hugging Face's encode_special_tokens / split_special_tokens
	// do. Added tokens with special=false (for Qwen3 <think>, <tool_call>,
	// ...) are still recognised. Use it for untrusted text that must not
	// inject control tokens.
	SpecialAsText bool
	// AddedAsText makes every added token, special or not, plain text.
	AddedAsText bool
	// SkipPostProcessor leaves out the tokens the post_processor adds
	// (Hugging Face add_special_tokens=False). Qwen3's adds none.
	SkipPostProcessor bool
}

// Encode tokenizes text. Added tokens in text are recognised (unless
// tokenizer_config.json sets split_special_tokens, in which case special
// ones are plain text), and the post_processor's tokens are added.
func (t *Tokenizer) Encode(text string) []int {
	return t.EncodeWithOptions(text, EncodeOptions{SpecialAsText: t.config.SplitSpecialTokens})
}

// EncodeWithOptions tokenizes text as adjusted by o.
func (t *Tokenizer) EncodeWithOptions(text string, o EncodeOptions) []int {
	mode := addedAll
	if o.AddedAsText {
		mode = addedNone
	} else if o.SpecialAsText {
		mode = addedNonSpecial
	}
	sc := scratchPool.Get().(*scratch)
	e := encoder{t: t, sc: sc, out: sc.out[:0], mode: mode}
	if !o.SkipPostProcessor {
		for _, id := range t.postPre {
			e.out = append(e.out, int32(id))
		}
	}
	t.matchers[0][mode].split(text, e.rawText, e.token)
	if !o.SkipPostProcessor {
		for _, id := range t.postSuf {
			e.out = append(e.out, int32(id))
		}
	}
	ids := make([]int, len(e.out))
	for i, id := range e.out {
		ids[i] = int(id)
	}
	if cap(e.out) <= 1<<16 {
		sc.out = e.out
		scratchPool.Put(sc)
	}
	return ids
}

type encoder struct {
	t    *Tokenizer
	sc   *scratch
	out  []int32
	mode addedMode
}

func (e *encoder) token(id int) { e.out = append(e.out, int32(id)) }

// rawText handles text between non-normalized added tokens: normalize it,
// then split on normalized added tokens.
func (e *encoder) rawText(s string) {
	e.t.matchers[1][e.mode].split(e.t.normalize(s), e.text, e.token)
}

func (e *encoder) text(s string) { runPre(e.t.pre, s, e.word) }

func (e *encoder) word(w string) { e.out = e.t.appendWord(e.out, w, e.sc) }

// normalize applies the tokenizer.json normalizer.
func (t *Tokenizer) normalize(s string) string {
	if len(t.normForms) == 0 || isASCII(s) {
		return s // every normalization form leaves ASCII alone
	}
	for _, f := range t.normForms {
		if f == norm.NFC {
			s = nfc(s)
		} else {
			s = f.String(s)
		}
	}
	return s
}

// Normalize applies the tokenizer.json normalizer (NFC for Qwen3) to s.
func (t *Tokenizer) Normalize(s string) string { return t.normalize(s) }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
