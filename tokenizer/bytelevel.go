package tokenizer

import "unicode/utf8"

// byteToRune is the GPT-2 byte-to-unicode table: printable bytes map to
// themselves and the others to code points from U+0100 upwards, so that every
// byte has a visible, non-whitespace representation in the vocabulary.
var byteToRune [256]rune

// runeToByte is the inverse of byteToRune; entries are -1 for runes that are
// not part of the table. Every rune of the table is below 0x144.
var runeToByte [0x144]int16

func init() {
	for i := range runeToByte {
		runeToByte[i] = -1
	}
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = int16(b)
	}
}

// byteLevelDecode maps a token in its byte-level form ("Ġhello") back to the
// raw bytes it stands for (" hello"). ok is false when the token holds a rune
// outside the byte-level alphabet, in which case Hugging Face's ByteLevel
// decoder uses the token's own UTF-8 bytes, and so do we.
func byteLevelDecode(tok string) (raw string, ok bool) {
	buf := make([]byte, 0, len(tok))
	for _, r := range tok {
		if r < 0 || int(r) >= len(runeToByte) || runeToByte[r] < 0 {
			return tok, false
		}
		buf = append(buf, byte(runeToByte[r]))
	}
	return string(buf), true
}

// byteLevelEncode maps raw bytes to their byte-level form.
func byteLevelEncode(raw string) string {
	buf := make([]byte, 0, 2*len(raw))
	for i := 0; i < len(raw); i++ {
		buf = utf8.AppendRune(buf, byteToRune[raw[i]])
	}
	return string(buf)
}
