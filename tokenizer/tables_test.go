package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// nfcAlphabet mixes inert characters with ones that compose, decompose,
// reorder or are invalid UTF-8.
var nfcAlphabet = []string{
	"a", "e", "o", "A", " ", "\n", "é", "e\u0301", "\u0301", "\u0323", "\u0302", "\u0308", "\u0345", "ο", "\u0313",
	"가", "\u1100", "\u1161", "\u11a8", "か", "\u3099", "\u2126", "Å", "\u212b", "ﬁ", "中", "😀", "👍🏽", "\u0f73",
	"\U0001d15e", "\U0002f800", "\U000110ab", "\U00011099\U000110ba", "\xff", "\xcc", "\x81", "\u0cc6\u0cc2", "ǅ",
}

func TestNFCFastPath(t *testing.T) {
	ensureTables()
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 30000; i++ {
		var b strings.Builder
		for n := r.IntN(12); n > 0; n-- {
			b.WriteString(nfcAlphabet[r.IntN(len(nfcAlphabet))])
		}
		s := b.String()
		if got, want := nfc(s), norm.NFC.String(s); got != want {
			t.Fatalf("nfc(%q) = %q, want %q", s, got, want)
		}
	}
	// Every BMP code point, alone and after a base letter.
	for c := rune(0x80); c < 0x10000; c++ {
		if !utf8.ValidRune(c) {
			continue
		}
		for _, s := range []string{string(c), "e" + string(c), string(c) + "\u0301", "\u1100" + string(c)} {
			if got, want := nfc(s), norm.NFC.String(s); got != want {
				t.Fatalf("nfc(%q) = %q, want %q", s, got, want)
			}
		}
	}
}

func FuzzNFC(f *testing.F) {
	ensureTables()
	for _, s := range nfcAlphabet {
		f.Add("x" + s + "y")
	}
	// A combining mark after an invalid byte: norm.NFC decomposes it only
	// when more input follows (the fast path used to cut the input there).
	f.Add("\xf5\u0344" + "0")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := nfc(s), norm.NFC.String(s); got != want {
			t.Fatalf("nfc(%q) = %q, want %q", s, got, want)
		}
	})
}

func TestClassTable(t *testing.T) {
	ensureTables()
	saved := bmpInfo
	defer func() { bmpInfo = saved }()
	var b strings.Builder
	for c := rune(0); c < 0x10000; c++ {
		if utf8.ValidRune(c) {
			b.WriteRune(c)
		}
	}
	s := b.String()
	for i := 0; i < len(s); {
		c1, n1 := classAt(s, i)
		bmpInfo = nil
		c2, n2 := classAt(s, i)
		bmpInfo = saved
		if c1 != c2 || n1 != n2 {
			r, _ := utf8.DecodeRuneInString(s[i:])
			t.Fatalf("U+%04X: table %d, unicode %d", r, c1, c2)
		}
		i += n1
	}
}
