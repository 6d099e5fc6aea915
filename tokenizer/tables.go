package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// bmpInfo caches, for every code point of the Basic Multilingual Plane, its
// pre-tokenizer class (low 3 bits) and whether it is NFC-inert (infoNFCSafe).
// It is built once, by the first tokenizer loaded (about a millisecond), so
// that importing the package costs nothing.
var (
	tablesOnce sync.Once
	bmpInfo    []uint8
)

const infoNFCSafe = 0x8

func ensureTables() { tablesOnce.Do(buildTables) }

func buildTables() {
	t := make([]uint8, 0x10000)
	var buf [4]byte
	for r := rune(0); r < 0x10000; r++ {
		var c uint8
		switch {
		case r < 0x80:
			c = asciiClass[r]
		case unicode.IsLetter(r):
			c = clsLetter
		case unicode.IsNumber(r):
			c = clsNumber
		case unicode.IsSpace(r):
			c = clsSpace
		}
		if r >= 0xD800 && r <= 0xDFFF {
			t[r] = c
			continue
		}
		n := utf8.EncodeRune(buf[:], r)
		if computeNFCSafe(string(buf[:n])) {
			c |= infoNFCSafe
		}
		t[r] = c
	}
	bmpInfo = t
}

// computeNFCSafe reports whether the character in s is unchanged by NFC and
// never combines with, or reorders around, what precedes it. A string of
// such characters is in NFC, and each of them starts a new normalization
// segment.
func computeNFCSafe(s string) bool {
	p := norm.NFC.PropertiesString(s)
	return p.BoundaryBefore() && norm.NFC.String(s) == s
}

func nfcSafe(r rune, s string) bool {
	if r < 0x10000 && bmpInfo != nil {
		return bmpInfo[r]&infoNFCSafe != 0
	}
	return computeNFCSafe(s)
}

// nfc returns norm.NFC.String(s), faster on text that is mostly in NFC
// already: it runs the normalizer only on the stretches around characters
// that are not NFC-inert, each starting at the last inert character before
// them (the only one they could combine with) and ending before the next
// inert character.
func nfc(s string) string {
	var out []byte
	done := 0  // s[:done] has been written to out
	prev := -1 // start of the previous rune, if it is inert and >= done
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			prev = i
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if n > 1 && nfcSafe(r, s[i:i+n]) {
			prev = i
			i += n
			continue
		}
		start := i
		if prev >= done {
			start = prev
		}
		j := i + n
		for j < len(s) {
			if s[j] < utf8.RuneSelf {
				break
			}
			r, n := utf8.DecodeRuneInString(s[j:])
			if n > 1 && nfcSafe(r, s[j:j+n]) {
				break
			}
			j += n
		}
		// The stretch takes the inert character after it along:
		// norm.NFC leaves a combining mark after an invalid byte
		// undecomposed at the end of its input, and decomposes it when
		// more follows, so the stretch must not end where s goes on.
		if j < len(s) {
			_, n := utf8.DecodeRuneInString(s[j:])
			j += n
		}
		if out == nil {
			out = make([]byte, 0, len(s)+16)
		}
		out = append(out, s[done:start]...)
		out = norm.NFC.AppendString(out, s[start:j])
		done, prev, i = j, -1, j
	}
	if out == nil {
		return s
	}
	return string(append(out, s[done:]...))
}
