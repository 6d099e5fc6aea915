package tokenizer

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScanner is a small, allocation-conscious reader for the two large
// parts of tokenizer.json (model.vocab and model.merges). encoding/json
// handles the rest of the file; these two account for nearly all of its
// 11 MB and are read here about ten times faster. Strings without escapes
// are returned as substrings of src, so they share its memory.
type jsonScanner struct {
	src string
	pos int
}

var errJSONEnd = errors.New("unexpected end of JSON")

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

// peek returns the next non-space byte without consuming it.
func (s *jsonScanner) peek() (byte, error) {
	s.skipSpace()
	if s.pos >= len(s.src) {
		return 0, errJSONEnd
	}
	return s.src[s.pos], nil
}

func (s *jsonScanner) expect(c byte) error {
	b, err := s.peek()
	if err != nil {
		return err
	}
	if b != c {
		return s.errorf("expected %q, found %q", c, b)
	}
	s.pos++
	return nil
}

// str reads a JSON string.
func (s *jsonScanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.pos
	for i := start; i < len(s.src); i++ {
		c := s.src[i]
		if c == '"' {
			s.pos = i + 1
			return s.src[start:i], nil
		}
		if c == '\\' {
			return s.strSlow(start)
		}
		if c < 0x20 {
			s.pos = i
			return "", s.errorf("control character in string")
		}
	}
	s.pos = len(s.src)
	return "", errJSONEnd
}

// strSlow decodes a string that holds escapes, starting after its quote.
func (s *jsonScanner) strSlow(start int) (string, error) {
	buf := make([]byte, 0, 16)
	i := start
	for i < len(s.src) {
		c := s.src[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return string(buf), nil
		case c < 0x20:
			s.pos = i
			return "", s.errorf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(s.src) {
			break
		}
		e := s.src[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(s.src, i)
			if !ok {
				s.pos = i
				return "", s.errorf("bad \\u escape")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if i+6 <= len(s.src) && s.src[i] == '\\' && s.src[i+1] == 'u' {
					r2, ok2 = hex4(s.src, i+2)
				}
				if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			s.pos = i - 1
			return "", s.errorf("bad escape \\%c", e)
		}
	}
	s.pos = len(s.src)
	return "", errJSONEnd
}

func hex4(src string, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	v, err := strconv.ParseUint(src[i:i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

// integer reads a JSON number that must be a non-negative integer.
func (s *jsonScanner) integer() (int, error) {
	s.skipSpace()
	start := s.pos
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.pos++
			continue
		}
		break
	}
	text := s.src[start:s.pos]
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil || v < 0 || v > 1<<31-1 {
		s.pos = start
		return 0, s.errorf("want a non-negative integer, found %q", text)
	}
	return int(v), nil
}

// vocabEntry is one "token": id pair of model.vocab, in file order.
type vocabEntry struct {
	tok string
	id  int
}

// parseVocab reads a JSON object of string keys and integer values.
func parseVocab(src string) ([]vocabEntry, error) {
	s := &jsonScanner{src: src}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	out := make([]vocabEntry, 0, len(src)/16)
	if b, err := s.peek(); err != nil {
		return nil, err
	} else if b == '}' {
		s.pos++
		return out, s.end()
	}
	for {
		k, err := s.str()
		if err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		v, err := s.integer()
		if err != nil {
			return nil, fmt.Errorf("token %q: %w", k, err)
		}
		out = append(out, vocabEntry{k, v})
		b, err := s.peek()
		if err != nil {
			return nil, err
		}
		s.pos++
		if b == '}' {
			return out, s.end()
		}
		if b != ',' {
			s.pos--
			return nil, s.errorf("expected ',' or '}', found %q", b)
		}
	}
}

// parseMerges reads model.merges: an array whose items are either "a b"
// strings or ["a", "b"] arrays.
func parseMerges(src string) ([][2]string, error) {
	s := &jsonScanner{src: src}
	if err := s.expect('['); err != nil {
		return nil, err
	}
	out := make([][2]string, 0, len(src)/12)
	if b, err := s.peek(); err != nil {
		return nil, err
	} else if b == ']' {
		s.pos++
		return out, s.end()
	}
	for {
		b, err := s.peek()
		if err != nil {
			return nil, err
		}
		var pair [2]string
		switch b {
		case '"':
			line, err := s.str()
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", len(out), err)
			}
			sp := -1
			for i := 0; i < len(line); i++ {
				if line[i] == ' ' {
					if sp >= 0 {
						sp = -2
						break
					}
					sp = i
				}
			}
			if sp < 0 {
				return nil, fmt.Errorf("[%d]: %q is not two tokens separated by one space", len(out), line)
			}
			pair = [2]string{line[:sp], line[sp+1:]}
		case '[':
			s.pos++
			for k := 0; k < 2; k++ {
				if k == 1 {
					if err := s.expect(','); err != nil {
						return nil, fmt.Errorf("[%d]: %w", len(out), err)
					}
				}
				if pair[k], err = s.str(); err != nil {
					return nil, fmt.Errorf("[%d]: %w", len(out), err)
				}
			}
			if err := s.expect(']'); err != nil {
				return nil, fmt.Errorf("[%d]: want a pair of two strings: %w", len(out), err)
			}
		default:
			return nil, fmt.Errorf("[%d]: %w", len(out), s.errorf("want a string or a pair, found %q", b))
		}
		out = append(out, pair)
		b, err = s.peek()
		if err != nil {
			return nil, err
		}
		s.pos++
		if b == ']' {
			return out, s.end()
		}
		if b != ',' {
			s.pos--
			return nil, s.errorf("expected ',' or ']', found %q", b)
		}
	}
}

func (s *jsonScanner) end() error {
	s.skipSpace()
	if s.pos != len(s.src) {
		return s.errorf("unexpected data after value")
	}
	return nil
}
