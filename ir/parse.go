package ir

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ParseError is a parse failure on one line of the text.
type ParseError struct {
	Line int // 1-based
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *ParseError) Unwrap() error { return e.Err }

// Parse reads the text form written by Print (grammar in print.go) and
// returns the module. It is the inverse of Print: Parse(Print(m)) equals m
// for every valid m, with empty Meta and Attrs maps read back as empty
// (non-nil) maps and empty slices as nil.
//
// When the digest line is present the body must hash to it; hand-written
// IR may leave it out. Every node is checked against the op table as it is
// read: its operands must be defined above it, its declared type must be
// the inferred one and its secrecy the derived one. The first problem is
// returned as a *ParseError naming the line.
func Parse(text string) (*Module, error) {
	p := newParser(text)
	if err := p.header(); err != nil {
		return nil, err
	}
	m := &Module{Meta: map[string]string{}}
	metaLine := map[string]int{}
	graphLine := map[string]int{}
	for p.next() {
		sc := p.scanner()
		switch kw := sc.keyword(); kw {
		case "meta":
			k, v, err := p.meta(sc)
			if err != nil {
				return nil, err
			}
			if first, dup := metaLine[k]; dup {
				return nil, p.errorf("meta %s is set twice (first on line %d)", nameText(k), first)
			}
			metaLine[k] = p.line
			m.Meta[k] = v
		case "graph":
			start := p.line
			g, err := p.graph(sc)
			if err != nil {
				return nil, err
			}
			if first, dup := graphLine[g.Name]; dup {
				return nil, &ParseError{Line: start, Err: fmt.Errorf("graph %s is defined twice (first on line %d)", nameText(g.Name), first)}
			}
			graphLine[g.Name] = start
			m.Graphs = append(m.Graphs, g)
		default:
			return nil, p.errorf("expected meta or graph, found %s", quoteFound(kw, sc))
		}
	}
	// The line checks above cover every rule; this is a safety net that
	// keeps Parse from ever returning a module the validator refuses.
	if err := ValidateModule(m); err != nil {
		return nil, fmt.Errorf("parsed module is invalid: %w", err)
	}
	return m, nil
}

// ParseGraph reads one graph block as written by PrintGraph (no header, no
// meta). It suits tests and hand-written examples.
func ParseGraph(text string) (*Graph, error) {
	p := newParser(text)
	var g *Graph
	for p.next() {
		sc := p.scanner()
		kw := sc.keyword()
		if kw != "graph" {
			return nil, p.errorf("expected graph, found %s", quoteFound(kw, sc))
		}
		if g != nil {
			return nil, p.errorf("a second graph; ParseGraph reads one (use Parse for a module)")
		}
		var err error
		if g, err = p.graph(sc); err != nil {
			return nil, err
		}
	}
	if g == nil {
		return nil, &ParseError{Line: p.line, Err: errors.New("expected graph, found end of text")}
	}
	if err := Validate(g); err != nil {
		return nil, fmt.Errorf("parsed graph is invalid: %w", err)
	}
	return g, nil
}

// parser walks the text line by line; blank and comment lines are skipped.
type parser struct {
	lines []string
	line  int // 1-based number of the current line; 0 before the first
	text  string
}

func newParser(text string) *parser {
	return &parser{lines: strings.Split(text, "\n"), text: text}
}

// next advances to the next line with content.
func (p *parser) next() bool {
	for p.line < len(p.lines) {
		p.line++
		s := strings.TrimSpace(p.lines[p.line-1])
		if s != "" && !strings.HasPrefix(s, "//") {
			return true
		}
	}
	return false
}

func (p *parser) scanner() *scanner { return &scanner{s: p.lines[p.line-1], line: p.line} }

func (p *parser) errorf(format string, args ...any) error {
	return &ParseError{Line: p.line, Err: fmt.Errorf(format, args...)}
}

// header reads the version line and, when present, checks the digest line
// against the body below it.
func (p *parser) header() error {
	p.line = 1
	first := strings.TrimSpace(p.lines[0])
	want := strings.TrimSpace(header())
	if first != want {
		if v, ok := strings.CutPrefix(first, magic+" "); ok {
			return p.errorf("unsupported format version %q (this build reads v%d)", v, FormatVersion)
		}
		return p.errorf("expected header %q, found %q", want, clip(first))
	}
	if len(p.lines) < 2 {
		return nil
	}
	second := strings.TrimSpace(p.lines[1])
	rest, ok := strings.CutPrefix(second, "digest")
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return nil // no digest line: hand-written IR
	}
	p.line = 2
	said := strings.TrimSpace(rest)
	if !strings.HasPrefix(said, digestPrefix) || len(said) != len(digestPrefix)+64 || !isHex(said[len(digestPrefix):]) {
		return p.errorf("bad digest %q: want %s followed by 64 hex digits", clip(said), digestPrefix)
	}
	body := ""
	if i := strings.IndexByte(p.text, '\n'); i >= 0 {
		if j := strings.IndexByte(p.text[i+1:], '\n'); j >= 0 {
			body = p.text[i+1+j+1:]
		}
	}
	if got := digestOf(body); got != said {
		return p.errorf("digest mismatch: header says %s, body hashes to %s", said, got)
	}
	return nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && !('a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// meta reads `meta NAME = "value"` after the keyword.
func (p *parser) meta(sc *scanner) (string, string, error) {
	k, err := sc.name("meta key")
	if err != nil {
		return "", "", err
	}
	if err := sc.expect('=', "after meta key"); err != nil {
		return "", "", err
	}
	if sc.peek() != '"' {
		return "", "", sc.errorf("expected quoted meta value, found %s", sc.found())
	}
	v, err := sc.quoted()
	if err != nil {
		return "", "", err
	}
	if err := sc.end(); err != nil {
		return "", "", err
	}
	return k, v, nil
}

// graph reads a graph block whose first line is in sc, after the keyword.
func (p *parser) graph(sc *scanner) (*Graph, error) {
	name, err := sc.name("graph name")
	if err != nil {
		return nil, err
	}
	g := &Graph{Name: name}
	params := map[string]bool{}
	if err := sc.expect('(', "after graph name"); err != nil {
		return nil, err
	}
	if !sc.accept(')') {
		for {
			w := sc.word()
			if !isIdent(w) {
				return nil, sc.errorf("expected a parameter name, found %s", quoteFound(w, sc))
			}
			if params[w] {
				return nil, sc.errorf("parameter %s is listed twice", w)
			}
			params[w] = true
			g.Params = append(g.Params, w)
			if sc.accept(')') {
				break
			}
			if err := sc.expect(',', "between parameters"); err != nil {
				return nil, err
			}
		}
	}
	if err := sc.expect('{', "after parameters"); err != nil {
		return nil, err
	}
	if err := sc.end(); err != nil {
		return nil, err
	}
	returned := false
	for p.next() {
		sc := p.scanner()
		switch {
		case sc.peek() == '%':
			if returned {
				return nil, sc.errorf("node after return")
			}
			n, err := p.node(sc, g, params)
			if err != nil {
				return nil, err
			}
			g.Nodes = append(g.Nodes, n)
		case sc.peek() == '}':
			sc.pos++
			if err := sc.end(); err != nil {
				return nil, err
			}
			return g, nil
		default:
			kw := sc.keyword()
			if kw != "return" {
				return nil, sc.errorf("expected a node, return or }, found %s", quoteFound(kw, sc))
			}
			if returned {
				return nil, sc.errorf("second return")
			}
			returned = true
			if err := p.outputs(sc, g); err != nil {
				return nil, err
			}
		}
	}
	return nil, &ParseError{Line: p.line, Err: fmt.Errorf("graph %s is not closed: expected }, found end of text", nameText(g.Name))}
}

// outputs reads `return a=%1, b=%2` after the keyword.
func (p *parser) outputs(sc *scanner, g *Graph) error {
	seen := map[string]bool{}
	for !sc.atEnd() {
		if len(g.Outputs) > 0 {
			if err := sc.expect(',', "between outputs"); err != nil {
				return err
			}
		}
		name, err := sc.name("output name")
		if err != nil {
			return err
		}
		if err := sc.expect('=', "after output name"); err != nil {
			return err
		}
		v, err := sc.value()
		if err != nil {
			return err
		}
		if int(v) >= len(g.Nodes) {
			return sc.errorf("output %s refers to %v, which is not defined", nameText(name), v)
		}
		if seen[name] {
			return sc.errorf("output %s is returned twice", nameText(name))
		}
		seen[name] = true
		g.Outputs = append(g.Outputs, Output{Name: name, Value: v})
	}
	return nil
}

// node reads one node line and checks it against the op table and the
// nodes above it.
func (p *parser) node(sc *scanner, g *Graph, params map[string]bool) (*Node, error) {
	id, err := sc.value()
	if err != nil {
		return nil, err
	}
	if want := ValueID(len(g.Nodes)); id != want {
		return nil, sc.errorf("expected value %v (values are numbered in order), found %v", want, id)
	}
	if err := sc.expect('=', "after "+id.String()); err != nil {
		return nil, err
	}
	op, err := sc.name("op name")
	if err != nil {
		return nil, err
	}
	if Op(op) == nil {
		return nil, sc.errorf("unknown op %q", op)
	}
	n := &Node{ID: id, Op: op, Attrs: Attrs{}}
	if sc.peek() == '%' {
		for {
			v, err := sc.value()
			if err != nil {
				return nil, err
			}
			if v >= id {
				return nil, sc.errorf("operand %v is not defined before use", v)
			}
			n.Inputs = append(n.Inputs, v)
			if !sc.accept(',') {
				break
			}
		}
	}
	if sc.accept('{') && !sc.accept('}') {
		for {
			k, err := sc.name("attribute name")
			if err != nil {
				return nil, err
			}
			if err := sc.expect('=', "after attribute name"); err != nil {
				return nil, err
			}
			v, err := sc.literal()
			if err != nil {
				return nil, fmt.Errorf("%w (attribute %s)", err, nameText(k))
			}
			if _, dup := n.Attrs[k]; dup {
				return nil, sc.errorf("attribute %s is given twice", nameText(k))
			}
			n.Attrs[k] = v
			if sc.accept('}') {
				break
			}
			if err := sc.expect(',', "between attributes"); err != nil {
				return nil, err
			}
		}
	}
	if err := sc.expect(':', "before the type"); err != nil {
		return nil, err
	}
	fields := strings.Fields(sc.rest())
	if len(fields) < 3 {
		return nil, sc.errorf("expected TYPE PLACEMENT SECRECY after ':', found %q", clip(strings.Join(fields, " ")))
	}
	typText := strings.Join(fields[:len(fields)-2], "")
	t, err := ParseType(typText)
	if err != nil {
		return nil, sc.errorf("%w", err)
	}
	for _, d := range t.Shape {
		if d.IsSym() && !params[d.Sym] {
			return nil, sc.errorf("symbolic dim %s is not a parameter of graph %s%s", d.Sym, nameText(g.Name), paramsText(g.Params))
		}
	}
	if n.Place, err = ParsePlacement(fields[len(fields)-2]); err != nil {
		return nil, sc.errorf("%w", err)
	}
	sec, err := ParseSecrecy(fields[len(fields)-1])
	if err != nil {
		return nil, sc.errorf("%w", err)
	}
	n.Type = t
	inferred, err := safeInferType(g, n)
	if err != nil {
		return nil, sc.errorf("%s: %w", describe(n), err)
	}
	if !inferred.Equal(t) {
		return nil, sc.errorf("%s: declared type %v, inferred %v", describe(n), t, inferred)
	}
	n.Secrecy = InferSecrecy(g, n)
	if n.Secrecy != sec {
		return nil, sc.errorf("%s: declared secrecy %v, derived %v", describe(n), sec, n.Secrecy)
	}
	return n, nil
}

// ParseType reads a printed type such as f32[n,64] or i32[].
func ParseType(s string) (Type, error) {
	bad := func() (Type, error) { return Type{}, fmt.Errorf("bad type %q", clip(s)) }
	open := strings.IndexByte(s, '[')
	if open < 0 || !strings.HasSuffix(s, "]") {
		return bad()
	}
	dt, err := ParseDType(strings.TrimSpace(s[:open]))
	if err != nil {
		return Type{}, fmt.Errorf("bad type %q: %w", clip(s), err)
	}
	t := Type{DType: dt}
	inner := strings.TrimSpace(s[open+1 : len(s)-1])
	if inner == "" {
		return t, nil
	}
	for _, f := range strings.Split(inner, ",") {
		f = strings.TrimSpace(f)
		switch {
		case isIdent(f):
			t.Shape = append(t.Shape, S(f))
		case f != "" && strings.Trim(f, "0123456789") == "":
			size, err := strconv.Atoi(f)
			if err != nil {
				return bad()
			}
			t.Shape = append(t.Shape, D(size))
		default:
			return bad()
		}
	}
	return t, nil
}

// safeInferType is InferType that turns a panicking type rule (from an op
// registered elsewhere) into an error, so parsing and validation never
// crash on odd IR.
func safeInferType(g *Graph, n *Node) (t Type, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("type rule of %s panicked: %v", n.Op, r)
		}
	}()
	return InferType(g, n)
}

// scanner reads tokens from one line.
type scanner struct {
	s    string
	pos  int
	line int
}

func (sc *scanner) errorf(format string, args ...any) error {
	return &ParseError{Line: sc.line, Err: fmt.Errorf(format, args...)}
}

func (sc *scanner) skip() {
	for sc.pos < len(sc.s) && (sc.s[sc.pos] == ' ' || sc.s[sc.pos] == '\t' || sc.s[sc.pos] == '\r') {
		sc.pos++
	}
}

func (sc *scanner) atEnd() bool {
	sc.skip()
	return sc.pos >= len(sc.s)
}

func (sc *scanner) peek() byte {
	if sc.atEnd() {
		return 0
	}
	return sc.s[sc.pos]
}

func (sc *scanner) accept(c byte) bool {
	if sc.peek() == c && c != 0 {
		sc.pos++
		return true
	}
	return false
}

func (sc *scanner) expect(c byte, where string) error {
	if !sc.accept(c) {
		return sc.errorf("expected %q %s, found %s", string(c), where, sc.found())
	}
	return nil
}

// end checks that nothing but space is left on the line.
func (sc *scanner) end() error {
	if !sc.atEnd() {
		return sc.errorf("unexpected %s at end of line", sc.found())
	}
	return nil
}

// found describes what is at the cursor, for messages.
func (sc *scanner) found() string {
	if sc.atEnd() {
		return "end of line"
	}
	return strconv.Quote(clip(sc.s[sc.pos:]))
}

func (sc *scanner) rest() string {
	r := sc.s[sc.pos:]
	sc.pos = len(sc.s)
	return r
}

// word reads a run of literal bytes: letters, digits and _ . + -.
func (sc *scanner) word() string {
	sc.skip()
	start := sc.pos
	for sc.pos < len(sc.s) && (isNameByte(sc.s[sc.pos]) || sc.s[sc.pos] == '+') {
		sc.pos++
	}
	return sc.s[start:sc.pos]
}

// keyword reads the leading word of a line.
func (sc *scanner) keyword() string {
	sc.skip()
	start := sc.pos
	for sc.pos < len(sc.s) && isNameByte(sc.s[sc.pos]) {
		sc.pos++
	}
	return sc.s[start:sc.pos]
}

// name reads an ident-like name or a non-empty quoted string.
func (sc *scanner) name(what string) (string, error) {
	if sc.peek() == '"' {
		start := sc.pos
		s, err := sc.quoted()
		if err == nil && s == "" {
			sc.pos = start
			return "", sc.errorf("expected %s, found an empty name", what)
		}
		return s, err
	}
	start := sc.pos
	for sc.pos < len(sc.s) && isNameByte(sc.s[sc.pos]) {
		sc.pos++
	}
	w := sc.s[start:sc.pos]
	if !isName(w) {
		sc.pos = start
		return "", sc.errorf("expected %s, found %s", what, sc.found())
	}
	return w, nil
}

func (sc *scanner) quoted() (string, error) {
	q, err := strconv.QuotedPrefix(sc.s[sc.pos:])
	if err != nil || q[0] != '"' {
		return "", sc.errorf("bad string %s", sc.found())
	}
	s, err := strconv.Unquote(q)
	if err != nil {
		return "", sc.errorf("bad string %s: %w", sc.found(), err)
	}
	sc.pos += len(q)
	return s, nil
}

// value reads %N.
func (sc *scanner) value() (ValueID, error) {
	if !sc.accept('%') {
		return 0, sc.errorf("expected a value %%N, found %s", sc.found())
	}
	start := sc.pos
	for sc.pos < len(sc.s) && isDigit(sc.s[sc.pos]) {
		sc.pos++
	}
	n, err := strconv.Atoi(sc.s[start:sc.pos])
	if err != nil || n < 0 {
		sc.pos = start - 1
		return 0, sc.errorf("bad value %s", sc.found())
	}
	return ValueID(n), nil
}

// literal reads an attribute value: int64, float64, string, bool or []int64.
func (sc *scanner) literal() (any, error) {
	switch sc.peek() {
	case '"':
		return sc.quoted()
	case '[':
		sc.pos++
		list := []int64{}
		if sc.accept(']') {
			return list, nil
		}
		for {
			w := sc.word()
			v, err := strconv.ParseInt(w, 10, 64)
			if err != nil {
				return nil, sc.errorf("expected an int in list, found %s", quoteFound(w, sc))
			}
			list = append(list, v)
			if sc.accept(']') {
				return list, nil
			}
			if err := sc.expect(',', "between list elements"); err != nil {
				return nil, err
			}
		}
	}
	w := sc.word()
	switch w {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "":
		return nil, sc.errorf("expected an attribute value, found %s", sc.found())
	}
	i, err := strconv.ParseInt(w, 10, 64)
	if err == nil {
		return i, nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return nil, sc.errorf("integer %s is out of range", w)
	}
	f, err := strconv.ParseFloat(w, 64)
	if err != nil {
		return nil, sc.errorf("bad attribute value %q", clip(w))
	}
	return f, nil
}

// quoteFound describes a token just read (or, when empty, what follows).
func quoteFound(w string, sc *scanner) string {
	if w == "" {
		return sc.found()
	}
	return strconv.Quote(clip(w))
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
