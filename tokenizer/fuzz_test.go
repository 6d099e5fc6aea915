package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzEncodeDecode checks, for any input:
//   - Encode never panics, in every EncodeOptions mode;
//   - DecodeBytes(Encode(s)) == NFC(s) byte for byte, even for invalid
//     UTF-8 (invalid bytes are encoded through their byte tokens);
//   - for valid UTF-8 s, Decode(Encode(s)) == NFC(s); for invalid s, Decode
//     returns NFC(s) with each maximal invalid subsequence replaced by U+FFFD;
//   - streaming decode gives the same text as Decode.
//
// It uses the Qwen3 tokenizer when the shared files are there, and a small
// synthetic one otherwise.
func FuzzEncodeDecode(f *testing.F) {
	tok := fuzzTokenizer(f)
	for _, c := range loadReference(f).Cases {
		if len(c.Text) < 200 {
			f.Add(c.Text)
		}
	}
	f.Add("\xff\xfe<|im_end|>\xe4\xbd")
	f.Add("e<|endoftext|>\u0301")
	f.Fuzz(func(t *testing.T, s string) {
		want := norm.NFC.String(s)
		for _, o := range []EncodeOptions{{}, {SpecialAsText: true}, {AddedAsText: true}} {
			ids := tok.EncodeWithOptions(s, o)
			if got := string(tok.DecodeBytes(ids)); got != want {
				t.Fatalf("%+v: DecodeBytes(Encode(%q)) = %q, want %q", o, s, got, want)
			}
			d := tok.Decode(ids)
			if utf8.ValidString(s) && d != want {
				t.Fatalf("%+v: Decode(Encode(%q)) = %q, want %q", o, s, d, want)
			}
			if lw := lossy(want); d != lw {
				t.Fatalf("%+v: Decode(Encode(%q)) = %q, want %q", o, s, d, lw)
			}
			sd := tok.NewStreamDecoder()
			var b strings.Builder
			for _, id := range ids {
				b.WriteString(sd.Push(id))
			}
			b.WriteString(sd.Flush())
			if b.String() != d {
				t.Fatalf("%+v: stream decode %q, Decode %q", o, b.String(), d)
			}
		}
	})
}

func fuzzTokenizer(tb testing.TB) *Tokenizer {
	if qwenDir() != "" {
		return loadQwen(tb)
	}
	tk, err := New(tinyTokenizerJSON([][2]string{{"a", "b"}, {" ", "t"}, {" t", "h"}, {"\xe4", "\xbd"}}, nil, false, nil), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return tk
}
