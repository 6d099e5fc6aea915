package ir

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// handIR is hand-written IR without a digest line.
const handIR = `gelo-ir v1
// a hand-written example
meta model = "toy"

graph g(n) {
  %0 = input {name="x"} : f32[n,4] tee secret
  %1 = weight {name="w"} : f32[4] unplaced public
  %2 = rms_norm %0, %1 {eps=1e-06} : f32[n,4] tee secret
  %3 = add %2, %0 : f32[n,4] tee secret
  return y=%3
}
`

func TestParseHandWritten(t *testing.T) {
	m, err := Parse(handIR)
	if err != nil {
		t.Fatal(err)
	}
	b := newBuilder(t, "g", "n")
	x := b.in("x", T(F32, "n", 4))
	y := b.op("rms_norm", Attrs{"eps": 1e-6}, x, b.w("w", 4))
	y = b.op("add", nil, y, x)
	b.g.Nodes[x].Place, b.g.Nodes[2].Place, b.g.Nodes[3].Place = TEE, TEE, TEE
	b.g.Outputs = []Output{{Name: "y", Value: y}}
	want := &Module{Meta: map[string]string{"model": "toy"}, Graphs: []*Graph{b.g}}
	if d := cmp.Diff(want, m); d != "" {
		t.Errorf("Parse differs (-want +got):\n%s", d)
	}
	// Free spacing is accepted.
	loose := strings.ReplaceAll(handIR, "f32[n,4] tee", "f32[ n , 4 ]   tee")
	loose = strings.ReplaceAll(loose, "%2, %0", "%2 ,%0")
	if m2, err := Parse(loose); err != nil {
		t.Errorf("loose spacing: %v", err)
	} else if d := cmp.Diff(m, m2); d != "" {
		t.Errorf("loose spacing parses differently:\n%s", d)
	}
}

func TestParseErrors(t *testing.T) {
	printed := Print(blockModule(t, 128))
	for _, tc := range []struct {
		name, old, new string // edit of handIR (or of printed when old starts with "P:")
		want           string
	}{
		{"no header", "gelo-ir v1", "gelo v1", `line 1: expected header "gelo-ir v1", found "gelo v1"`},
		{"version", "gelo-ir v1", "gelo-ir v2", `line 1: unsupported format version "v2" (this build reads v1)`},
		{"unknown op", "= add", "= addd", `line 9: unknown op "addd"`},
		{"undefined operand", "add %2, %0", "add %2, %9", "line 9: operand %9 is not defined before use"},
		{"self operand", "add %2, %0", "add %3, %0", "line 9: operand %3 is not defined before use"},
		{"bad type", "f32[n,4] tee secret\n  %1", "f32[n, tee secret\n  %1", `line 6: bad type "f32[n,"`},
		{"bad dtype", "f32[4] unplaced", "f31[4] unplaced", `line 7: bad type "f31[4]": unknown dtype "f31"`},
		{"type mismatch", "f32[n,4] tee secret\n  return", "f32[n,5] tee secret\n  return",
			"line 9: %3 = add: declared type f32[n,5], inferred f32[n,4]"},
		{"secrecy mismatch", "unplaced public", "unplaced secret", "line 7: %1 = weight: declared secrecy secret, derived public"},
		{"placement", "unplaced public", "gpu public", `line 7: unknown placement "gpu"`},
		{"numbering", "%1 = weight", "%2 = weight", "line 7: expected value %1 (values are numbered in order), found %2"},
		{"int for float", "eps=1e-06", "eps=1", `line 8: %2 = rms_norm: rms_norm: attribute "eps" must be float, got int64`},
		{"unknown attr", "eps=1e-06", "eps=1e-06, epss=2.0", `line 8: %2 = rms_norm: rms_norm: unknown attribute "epss"`},
		{"missing attr", " {eps=1e-06}", "", `line 8: %2 = rms_norm: rms_norm: missing attribute "eps" (float)`},
		{"duplicate attr", "eps=1e-06", "eps=1e-06, eps=2.0", `line 8: attribute eps is given twice`},
		{"bad literal", "eps=1e-06", "eps=1e-0x6", `line 8: bad attribute value "1e-0x6" (attribute eps)`},
		{"int range", "eps=1e-06", "eps=99999999999999999999", `line 8: integer 99999999999999999999 is out of range (attribute eps)`},
		{"bad string", `{name="x"}`, `{name="x}`, `line 6: bad string "\"x} : f32[n,4] tee secret"`},
		{"operand count", "add %2, %0", "add %2", "line 9: %3 = add: add takes 2 operands, got 1"},
		{"missing type", ": f32[n,4] tee secret\n  return", "\n  return", `line 9: expected ":" before the type, found end of line`},
		{"short type", "f32[n,4] tee secret\n  return", "f32[n,4] tee\n  return", `line 9: expected TYPE PLACEMENT SECRECY after ':', found "f32[n,4] tee"`},
		{"param", "f32[n,4] tee secret\n  %1", "f32[m,4] tee secret\n  %1", "line 6: symbolic dim m is not a parameter of graph g(n)"},
		{"dup param", "g(n)", "g(n, n)", "line 5: parameter n is listed twice"},
		{"output undefined", "y=%3", "y=%4", "line 10: output y refers to %4, which is not defined"},
		{"output twice", "y=%3", "y=%3, y=%2", "line 10: output y is returned twice"},
		{"node after return", "  return y=%3\n", "  return y=%3\n  %4 = add %3, %3 : f32[n,4] tee secret\n", "line 11: node after return"},
		{"unclosed", "}\n", "", "line 11: graph g is not closed: expected }, found end of text"},
		{"junk", "meta model", "metal model", `line 3: expected meta or graph, found "metal"`},
		{"dup meta", "meta model = \"toy\"\n", "meta model = \"toy\"\nmeta model = \"x\"\n", "line 4: meta model is set twice (first on line 3)"},
		{"dup graph", "}\n", "}\ngraph g() {\n}\n", "line 12: graph g is defined twice (first on line 5)"},
		{"empty output name", "y=%3", `""=%3`, "line 10: expected output name, found an empty name"},
		{"trailing", "y=%3\n}", "y=%3\n} x", `line 11: unexpected "x" at end of line`},
		{"digest mismatch", "P:place", "P:plaice", "line 2: digest mismatch: header says sha256:"},
		{"bad digest", "P:digest sha256:", "P:digest sha1:", `line 2: bad digest "sha1:`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, old := handIR, tc.old
			if o, ok := strings.CutPrefix(old, "P:"); ok {
				src, old = printed, o
			}
			if !strings.Contains(src, old) {
				t.Fatalf("test edit %q not found", old)
			}
			text := strings.Replace(src, old, strings.TrimPrefix(tc.new, "P:"), 1)
			_, err := Parse(text)
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", text)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
			if pe := (*ParseError)(nil); !errors.As(err, &pe) {
				t.Errorf("error %v is not a *ParseError", err)
			}
		})
	}
}

func TestParseDigestOptional(t *testing.T) {
	printed := Print(blockModule(t, 128))
	lines := strings.SplitN(printed, "\n", 3)
	noDigest := lines[0] + "\n" + lines[2]
	a, err := Parse(printed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(noDigest)
	if err != nil {
		t.Fatalf("without digest line: %v", err)
	}
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("digest line changes the module:\n%s", d)
	}
	if !strings.Contains(lines[2], "mul") {
		t.Fatal("unexpected layout")
	}
	if _, err := Parse(""); err == nil || !strings.Contains(err.Error(), "line 1: expected header") {
		t.Errorf("empty text: %v", err)
	}
}

func TestParseType(t *testing.T) {
	for in, want := range map[string]Type{
		"f32[n,64]":     T(F32, "n", 64),
		"i32[]":         {DType: I32},
		"bf16[ B, T ]":  T(BF16, "B", "T"),
		"f16[0,_x1,7]":  T(F16, 0, "_x1", 7),
		"i32[007]":      T(I32, 7),
		"f32[10000000]": T(F32, 10000000),
	} {
		got, err := ParseType(in)
		if err != nil {
			t.Errorf("ParseType(%q): %v", in, err)
			continue
		}
		if !got.Equal(want) {
			t.Errorf("ParseType(%q) = %v, want %v", in, got, want)
		}
	}
	for _, in := range []string{"", "f32", "f32[", "f32[n,]", "f32[-1]", "f32[1x]", "q8[1]", "f32[n][1]", "f32[99999999999999999999]", "f32[a.b]"} {
		if _, err := ParseType(in); err == nil {
			t.Errorf("ParseType(%q) succeeded", in)
		}
	}
}
