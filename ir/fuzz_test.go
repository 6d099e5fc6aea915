package ir

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse: Parse never panics, and whatever it accepts prints to text
// that parses back to an equal module and prints identically.
func FuzzParse(f *testing.F) {
	for _, m := range []*Module{blockModule(f, 128), attrsModule(f), {}} {
		text := Print(m)
		f.Add(text)
		// Without the digest line, so that mutations are not all refused
		// as digest mismatches.
		lines := strings.SplitN(text, "\n", 3)
		f.Add(lines[0] + "\n" + lines[2])
	}
	f.Add(handIR)
	f.Add("gelo-ir v1\ngraph g() {\n  %0 = input {name=\"x\"} : f32[] tee secret\n  return x=%0\n}\n")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := Parse(text)
		if err != nil {
			if strings.Contains(err.Error(), "parsed module is invalid") {
				t.Fatalf("the parser's line checks missed what the validator found: %v\ninput:\n%s", err, text)
			}
			return
		}
		printed := Print(m)
		m2, err := Parse(printed)
		if err != nil {
			t.Fatalf("Parse(Print(Parse(x))): %v\ninput:\n%s\nprinted:\n%s", err, text, printed)
		}
		if d := cmp.Diff(m, m2, equalOpts); d != "" {
			t.Fatalf("Parse(Print(m)) differs (-m +m2):\n%s", d)
		}
		if again := Print(m2); again != printed {
			t.Fatalf("printing is not stable:\n%s", cmp.Diff(printed, again))
		}
		_ = Diff(m, m2)
	})
}
