package tokenizer

import "unicode/utf8"

// DecodeOptions adjust Decode.
type DecodeOptions struct {
	// SkipSpecialTokens leaves out added tokens marked special, as Hugging
	// Face's skip_special_tokens does.
	SkipSpecialTokens bool
}

// Decode turns ids back into text. Ids that are not in the vocabulary are
// skipped. The result is valid UTF-8: each maximal invalid byte subsequence
// (for example the first half of a character split across tokens) becomes
// U+FFFD, as in Hugging Face's decoder.
func (t *Tokenizer) Decode(ids []int) string {
	return t.DecodeWithOptions(ids, DecodeOptions{})
}

// DecodeWithOptions is Decode adjusted by o.
func (t *Tokenizer) DecodeWithOptions(ids []int, o DecodeOptions) string {
	b := t.appendBytes(nil, ids, o.SkipSpecialTokens)
	if utf8.Valid(b) {
		return string(b)
	}
	out, _ := appendLossy(make([]byte, 0, len(b)+8), b, true)
	return string(out)
}

// DecodeBytes returns the exact bytes that ids stand for, which need not be
// valid UTF-8. Ids that are not in the vocabulary are skipped.
func (t *Tokenizer) DecodeBytes(ids []int) []byte {
	return t.appendBytes(nil, ids, false)
}

func (t *Tokenizer) appendBytes(dst []byte, ids []int, skipSpecial bool) []byte {
	for _, id := range ids {
		if id < 0 || id >= len(t.idKind) {
			continue
		}
		switch t.idKind[id] {
		case kindNone:
			continue
		case kindSpecial:
			if skipSpecial {
				continue
			}
		}
		dst = append(dst, t.idToBytes[id]...)
	}
	return dst
}

// appendLossy appends src to dst as valid UTF-8, replacing each maximal
// subpart of an ill-formed sequence with U+FFFD (the Unicode "best
// practice" that Rust's from_utf8_lossy and WHATWG TextDecoder follow). When
// final is false, an incomplete but so far valid sequence at the end of src
// is left unconsumed, and n tells how many bytes were used.
func appendLossy(dst, src []byte, final bool) (out []byte, n int) {
	i := 0
	for i < len(src) {
		c := src[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		need, lo, hi := seqInfo(c)
		if need == 0 {
			dst = append(dst, "\uFFFD"...)
			i++
			continue
		}
		k := 1 // bytes of src[i:] that form a valid prefix
		for k < need && i+k < len(src) {
			b := src[i+k]
			l, h := byte(0x80), byte(0xBF)
			if k == 1 {
				l, h = lo, hi
			}
			if b < l || b > h {
				break
			}
			k++
		}
		switch {
		case k == need:
			dst = append(dst, src[i:i+k]...)
		case i+k == len(src) && !final:
			return dst, i
		default:
			dst = append(dst, "\uFFFD"...)
		}
		i += k
	}
	return dst, i
}

// seqInfo returns the length of the UTF-8 sequence that lead byte c starts
// (0 if c cannot start one) and the allowed range of its second byte.
func seqInfo(c byte) (need int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 2, 0x80, 0xBF
	case c == 0xE0:
		return 3, 0xA0, 0xBF
	case c == 0xED:
		return 3, 0x80, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		return 3, 0x80, 0xBF
	case c == 0xF0:
		return 4, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 4, 0x80, 0xBF
	case c == 0xF4:
		return 4, 0x80, 0x8F
	}
	return 0, 0, 0
}

// StreamDecoder decodes ids one at a time, as a model generates them. Push
// returns only complete, valid UTF-8 text: the bytes of a character that is
// split across tokens are held back until the character is complete. The
// concatenation of all Push results and the final Flush equals Decode of all
// the ids. A StreamDecoder is not safe for concurrent use.
type StreamDecoder struct {
	t    *Tokenizer
	buf  []byte
	skip bool
}

// NewStreamDecoder returns a StreamDecoder that keeps special tokens.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// NewStreamDecoderWithOptions returns a StreamDecoder adjusted by o.
func (t *Tokenizer) NewStreamDecoderWithOptions(o DecodeOptions) *StreamDecoder {
	return &StreamDecoder{t: t, skip: o.SkipSpecialTokens}
}

// Push adds one id and returns the text that became complete.
func (d *StreamDecoder) Push(id int) string {
	d.buf = d.t.appendBytes(d.buf, []int{id}, d.skip)
	if len(d.buf) == 0 {
		return ""
	}
	out, n := appendLossy(nil, d.buf, false)
	d.buf = d.buf[:copy(d.buf, d.buf[n:])]
	return string(out)
}

// Flush returns whatever is held back, with an incomplete character
// replaced by U+FFFD, and empties the decoder.
func (d *StreamDecoder) Flush() string {
	if len(d.buf) == 0 {
		return ""
	}
	out, _ := appendLossy(nil, d.buf, true)
	d.buf = d.buf[:0]
	return string(out)
}

// Pending reports how many bytes are held back.
func (d *StreamDecoder) Pending() int { return len(d.buf) }
