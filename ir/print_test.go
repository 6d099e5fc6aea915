package ir

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrintGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		m    *Module
	}{
		{"block.golden", blockModule(t, 128)},
		{"attrs.golden", attrsModule(t)},
	} {
		t.Run(tc.file, func(t *testing.T) {
			if err := ValidateModule(tc.m); err != nil {
				t.Fatalf("test module is invalid: %v", err)
			}
			text := Print(tc.m)
			golden(t, tc.file, text)
			if again := Print(tc.m); again != text {
				t.Fatal("printing twice gave different text")
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	for name, m := range map[string]*Module{
		"block": blockModule(t, 128),
		"attrs": attrsModule(t),
		"empty": {Meta: map[string]string{}},
	} {
		t.Run(name, func(t *testing.T) {
			text := Print(m)
			got, err := Parse(text)
			if err != nil {
				t.Fatalf("Parse(Print(m)): %v\n%s", err, text)
			}
			if d := cmp.Diff(m, got, equalOpts); d != "" {
				t.Errorf("Parse(Print(m)) differs (-want +got):\n%s", d)
			}
			if again := Print(got); again != text {
				t.Errorf("Print(Parse(Print(m))) differs:\n%s", cmp.Diff(text, again))
			}
		})
	}
}

func TestRoundTripGraph(t *testing.T) {
	g, _ := blockGraph(t, "decode", 96)
	text := PrintGraph(g)
	got, err := ParseGraph(text)
	if err != nil {
		t.Fatalf("ParseGraph: %v\n%s", err, text)
	}
	if d := cmp.Diff(g, got); d != "" {
		t.Errorf("ParseGraph(PrintGraph(g)) differs (-want +got):\n%s", d)
	}
}

func TestFloatsStayFloats(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{int64(1000000), "1000000"},
		{1000000.0, "1e+06"},
		{10000.0, "10000.0"},
		{-3.0, "-3.0"},
		{0.0, "0.0"},
		{1e-06, "1e-06"},
		{0.125, "0.125"},
		{[]int64{}, "[]"},
		{[]int64{1, -2}, "[1, -2]"},
		{"a\"b", `"a\"b"`},
		{true, "true"},
		{int32(3), "<int32 3>"},
		{nil, "<<nil> <nil>>"},
	} {
		if got := attrText(tc.v); got != tc.want {
			t.Errorf("attrText(%#v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

func TestDigest(t *testing.T) {
	m := blockModule(t, 128)
	text := Print(m)
	lines := strings.SplitN(text, "\n", 3)
	if lines[1] != "digest "+Digest(m) {
		t.Errorf("digest line %q, Digest(m) %q", lines[1], Digest(m))
	}
	m2 := blockModule(t, 128)
	if Digest(m) != Digest(m2) {
		t.Error("equal modules have different digests")
	}
	if GraphDigest(m.Graphs[0]) == GraphDigest(m.Graphs[1]) {
		t.Error("prefill and decode have the same graph digest")
	}
	m2.Graphs[1].Nodes[0].Place = Device
	if Digest(m) == Digest(m2) || GraphDigest(m.Graphs[0]) != GraphDigest(m2.Graphs[0]) {
		t.Error("a placement change in decode must change the module digest and only decode's graph digest")
	}
}

// TestPrintNeverPanics prints IR that breaks every rule.
func TestPrintNeverPanics(t *testing.T) {
	bad := &Module{
		Meta: map[string]string{"": "", "k\x00": "\xff"},
		Graphs: []*Graph{nil, {
			Name:   "",
			Params: []string{"", "a b"},
			Nodes: []*Node{
				nil,
				{ID: 7, Op: "no such op", Inputs: []ValueID{-1, 99}, Attrs: Attrs{"x": struct{}{}, "": nil},
					Type: Type{DType: DType(99), Shape: Shape{{Size: -1}, {Sym: "a,b"}}}, Place: Placement(9), Secrecy: Secrecy(4)},
			},
			Outputs: []Output{{Name: "", Value: -5}},
		}},
	}
	text := Print(bad)
	for _, want := range []string{"graph <nil>", "<nil node>", `%7 = "no such op" %-1, %99`, "dtype(99)[-1,a,b]", "placement(9) secrecy(4)", `""=%-5`} {
		if !strings.Contains(text, want) {
			t.Errorf("printed text lacks %q:\n%s", want, text)
		}
	}
	Print(nil)
	PrintGraph(nil)
	Digest(nil)
	if _, err := Parse(text); err == nil {
		t.Error("Parse accepted the printed broken module")
	}
}
