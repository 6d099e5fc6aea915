package ir

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

const (
	magic        = "gelo-ir"
	digestPrefix = "sha256:"
)

// Print returns the text form of m: the header with its digest, then the
// body (meta lines, then each graph). It never fails and never panics;
// IR that does not validate prints as it is and may not parse back.
//
// The text form, read back by Parse, in EBNF:
//
//	module  = header { blank | comment | meta | graph } .
//	header  = "gelo-ir" "v1" NL [ "digest" digest NL ] .
//	digest  = "sha256:" hex64 .       (over every byte after the digest line)
//	meta    = "meta" name "=" string NL .
//	graph   = "graph" name "(" [ ident { "," ident } ] ")" "{" NL
//	          { node NL } [ "return" [ output { "," output } ] NL ] "}" NL .
//	node    = value "=" name [ value { "," value } ] [ attrs ] ":" type placement secrecy .
//	attrs   = "{" [ name "=" literal { "," name "=" literal } ] "}" .
//	literal = int | float | string | "true" | "false" | "[" [ int { "," int } ] "]" .
//	type    = dtype "[" [ dim { "," dim } ] "]" .   (f32[n,64]; a scalar is f32[])
//	dim     = decimal | ident .                      (ident must be a graph param)
//	output  = name "=" value .
//	value   = "%" decimal .                          (the node's index in its graph)
//	name    = [A-Za-z_][A-Za-z0-9_.-]* | string .    (quoted when not of the first form)
//	ident   = [A-Za-z_][A-Za-z0-9_]* .
//	comment = "//" { any } NL .                      (whole lines only)
//
// dtype is f32, bf16, f16, i32, q8_0, q4_0, q4_k, int8 or u32 (see DTypes); placement is unplaced, tee or device;
// secrecy is public or secret. int is a decimal int64 (-3, 42). float is a
// float64 in strconv 'g' form that always reads as a float: 0.125, 1e-06,
// 1e+06, 10000.0 (an integral value gets ".0"), NaN, +Inf, -Inf. string is
// Go-quoted (strconv.Quote), so any bytes survive. Spaces and tabs between
// tokens are free; a printed module has no comments and no extra space.
//
// Meta keys are printed sorted, graphs in module order, nodes in value
// order and attributes sorted by name, so equal modules print the same
// bytes and two dumps diff line by line (see Diff for a structural diff).
func Print(m *Module) string {
	body := printBody(m)
	return header() + "digest " + digestOf(body) + "\n" + body
}

// PrintGraph returns the text of one graph block, without a header.
// ParseGraph reads it back.
func PrintGraph(g *Graph) string {
	var b strings.Builder
	writeGraph(&b, g)
	return b.String()
}

// Digest returns "sha256:<hex>" over m's canonical printed body, the same
// value Print writes in its digest line.
func Digest(m *Module) string { return digestOf(printBody(m)) }

// GraphDigest returns "sha256:<hex>" over PrintGraph(g).
func GraphDigest(g *Graph) string { return digestOf(PrintGraph(g)) }

func header() string { return magic + " v" + strconv.Itoa(FormatVersion) + "\n" }

func digestOf(body string) string {
	sum := sha256.Sum256([]byte(body))
	return digestPrefix + hex.EncodeToString(sum[:])
}

func printBody(m *Module) string {
	var b strings.Builder
	if m == nil {
		return ""
	}
	for _, k := range sortedKeys(m.Meta) {
		b.WriteString("meta ")
		b.WriteString(nameText(k))
		b.WriteString(" = ")
		b.WriteString(strconv.Quote(m.Meta[k]))
		b.WriteByte('\n')
	}
	for _, g := range m.Graphs {
		b.WriteByte('\n')
		writeGraph(&b, g)
	}
	return b.String()
}

func writeGraph(b *strings.Builder, g *Graph) {
	if g == nil {
		b.WriteString("graph <nil>\n")
		return
	}
	b.WriteString(graphHeader(g))
	b.WriteString(" {\n")
	for _, n := range g.Nodes {
		b.WriteString("  ")
		b.WriteString(nodeText(n))
		b.WriteByte('\n')
	}
	b.WriteString("  return")
	for i, o := range g.Outputs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		b.WriteString(outputText(o))
	}
	b.WriteString("\n}\n")
}

// graphHeader is "graph NAME(p, q)".
func graphHeader(g *Graph) string {
	return "graph " + nameText(g.Name) + paramsText(g.Params)
}

func paramsText(ps []string) string {
	return "(" + strings.Join(ps, ", ") + ")"
}

func outputText(o Output) string { return nameText(o.Name) + "=" + o.Value.String() }

// nodeText is one node's line without indentation:
// %3 = rms_norm %2, %1 {eps=1e-06} : f32[n,64] tee secret.
func nodeText(n *Node) string {
	if n == nil {
		return "<nil node>"
	}
	var b strings.Builder
	b.WriteString(n.ID.String())
	b.WriteString(" = ")
	b.WriteString(nameText(n.Op))
	for i, v := range n.Inputs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		b.WriteString(v.String())
	}
	if len(n.Attrs) > 0 {
		b.WriteString(" {")
		for i, k := range n.Attrs.Keys() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(nameText(k))
			b.WriteByte('=')
			b.WriteString(attrText(n.Attrs[k]))
		}
		b.WriteByte('}')
	}
	b.WriteString(" : ")
	b.WriteString(n.Type.String())
	b.WriteByte(' ')
	b.WriteString(n.Place.String())
	b.WriteByte(' ')
	b.WriteString(n.Secrecy.String())
	return b.String()
}

// describe names a node the way messages do: "%12 = matmul".
func describe(n *Node) string {
	if n == nil {
		return "<nil node>"
	}
	return n.ID.String() + " = " + nameText(n.Op)
}

// attrText prints an attribute value so that Parse reads back the same Go
// value and type. A value of any other Go type prints as <T value>, which
// does not parse: the validator reports it.
func attrText(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return floatText(x)
	case string:
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case []int64:
		var b strings.Builder
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.FormatInt(e, 10))
		}
		b.WriteByte(']')
		return b.String()
	}
	return fmt.Sprintf("<%T %v>", v, v)
}

// floatText prints f in the shortest form that round-trips, marked as a
// float: an integral value such as 10000 gets a ".0" so that it does not
// read back as an int.
func floatText(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if strings.ContainsAny(s, ".eEnN") { // 1.5, 1e+06, NaN, +Inf
		return s
	}
	return s + ".0"
}

// nameText prints a graph, meta, attribute, op or output name bare when it
// is ident-like and quoted otherwise, so any string survives a round trip.
func nameText(s string) string {
	if isName(s) {
		return s
	}
	return strconv.Quote(s)
}

func isName(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// isIdent reports whether s can be a symbolic dim or graph param.
func isIdent(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isIdentStart(c) && !isDigit(c) {
			return false
		}
	}
	return true
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isNameByte(c byte) bool   { return isIdentStart(c) || isDigit(c) || c == '.' || c == '-' }

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
