package tokenizer

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

var qwenRE = func() func(string) []string {
	re, err := compileSplit(QwenPattern)
	if err != nil {
		panic(err)
	}
	return func(s string) []string {
		var out []string
		splitRegexp(re, s, false, func(p string) { out = append(out, p) })
		return out
	}
}()

func scanQwen(s string) []string {
	ensureTables()
	var out []string
	for i := 0; i < len(s); {
		j := qwenNext(s, i)
		if j <= i || j > len(s) {
			panic("qwenNext made no progress")
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// scannerAlphabet holds characters of every class the pattern tells apart.
var scannerAlphabet = []string{
	"a", "b", "s", "t", "r", "e", "v", "m", "l", "d", "S", "T", "R", "E", "V", "M", "L", "D", "x", "Z",
	"é", "ß", "中", "ж", "ـ", "ǅ", "ʰ", "𝕳", // letters (Ll, Lu, Lo, Lm, Lt)
	"0", "7", "٣", "½", "Ⅻ", "①", // numbers (Nd, No, Nl)
	" ", " ", " ", "\t", "\v", "\f", "\u00a0", "\u3000", "\u2003", "\u0085", "\u2028", // spaces
	"\n", "\r", "\r\n", "\n\n", // newlines
	"'", "'", "\"", ".", ",", "!", "-", "_", "$", "<", "|", ">", "😀", "\u0301", "\u200d", "\ufeff", "\ufffd", // other
	"\xff", "\xe4\xbd", "\x80", // invalid UTF-8
}

func randomScannerString(r *rand.Rand) string {
	var b strings.Builder
	n := r.IntN(24)
	for i := 0; i < n; i++ {
		b.WriteString(scannerAlphabet[r.IntN(len(scannerAlphabet))])
	}
	return b.String()
}

// TestQwenScannerMatchesRegexp2 shows that the hand-written scanner cuts text
// exactly as the regexp2 engine running QwenPattern does.
func TestQwenScannerMatchesRegexp2(t *testing.T) {
	var inputs []string
	for _, c := range loadReference(t).Cases {
		inputs = append(inputs, c.Text)
	}
	inputs = append(inputs, "", "'", "'s", "'S'", "''ll", "x'Ll", "'ree", " 's", " 'x", " !!\n\n", "a \n\n b",
		"  \t x", " \u00a0x", "\u00a0 x", "\r\n\r\n  ", "x  ", "x \t", "1 2  3", " \u0301a", "\u0301a", "$abc",
		"\xff\xffabc", " \xff", "\xffabc")
	r := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		inputs = append(inputs, randomScannerString(r))
	}
	for _, s := range inputs {
		got, want := scanQwen(s), qwenRE(s)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n scanner %q\n regexp2 %q", s, got, want)
		}
	}
}

func FuzzQwenScanner(f *testing.F) {
	f.Add("Hello world's 123  \n\n x")
	f.Add("\t'LL\u00a0\u3000😀\xff")
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 50; i++ {
		f.Add(randomScannerString(r))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		got, want := scanQwen(s), qwenRE(s)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n scanner %q\n regexp2 %q", s, got, want)
		}
		if strings.Join(got, "") != s {
			t.Fatalf("pieces do not cover %q", s)
		}
	})
}

// TestGenericSplit covers the regexp2 path for patterns other than Qwen's.
func TestGenericSplit(t *testing.T) {
	re, err := compileSplit(gpt2Pattern)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	splitRegexp(re, "Hello world's  123\n\n", false, func(p string) { got = append(got, p) })
	want := []string{"Hello", " world", "'s", " ", " 123", "\n\n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gpt2 split = %q, want %q", got, want)
	}
	re2, _ := compileSplit(`\d+`)
	got = nil
	splitRegexp(re2, "ab12cd345é", true, func(p string) { got = append(got, p) })
	if want := []string{"ab", "cd", "é"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Removed split = %q, want %q", got, want)
	}
	if !utf8.ValidString("é") {
		t.Fatal()
	}
}

// FuzzMerge checks that the array and heap merge loops agree on any word.
func FuzzMerge(f *testing.F) {
	tok := fuzzTokenizer(f)
	f.Add("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	f.Add(" the quick brown fox")
	f.Add("\xe4\xbd\xa0\xe5\xa5\xbd\xff")
	f.Fuzz(func(t *testing.T, w string) {
		if len(w) > 512 {
			return
		}
		sc := new(scratch)
		a := tok.mergeSmall(nil, w, sc)
		b := tok.mergeHeap(nil, w, sc)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: small %v, heap %v", w, a, b)
		}
	})
}
