package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// QwenPattern is the pre-tokenizer split pattern of Qwen2 and Qwen3. Its
// look-ahead (\s+(?!\S)) is beyond Go's regexp package; Tokenizer runs it with
// the hand-written scanner qwenNext, which tests show to be equivalent to the
// regexp2 (.NET-style backtracking) engine running this pattern.
const QwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// gpt2Pattern is the split pattern of a ByteLevel pre-tokenizer with
// use_regex true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// preStep is one pre-tokenization step: it cuts a piece into smaller pieces.
type preStep struct {
	scanner        func(s string, i int) int // next piece end; nil when re is used
	re             *regexp2.Regexp
	removeMatches  bool // Split behaviour "Removed"
	addPrefixSpace bool // ByteLevel add_prefix_space
}

func parsePreTokenizer(r json.RawMessage) ([]preStep, error) {
	if isNull(r) {
		return nil, errors.New("missing (want ByteLevel, or Split and ByteLevel)")
	}
	steps, byteLevel, err := parsePreSteps(r)
	if err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, errors.New("no ByteLevel pre-tokenizer: only byte-level BPE is supported")
	}
	return steps, nil
}

func parsePreSteps(r json.RawMessage) (steps []preStep, byteLevel bool, err error) {
	var p struct {
		Type           string            `json:"type"`
		Pretokenizers  []json.RawMessage `json:"pretokenizers"`
		AddPrefixSpace bool              `json:"add_prefix_space"`
		UseRegex       *bool             `json:"use_regex"`
		Behavior       string            `json:"behavior"`
		Invert         bool              `json:"invert"`
		Pattern        struct {
			Regex  *string `json:"Regex"`
			String *string `json:"String"`
		} `json:"pattern"`
	}
	if err := json.Unmarshal(r, &p); err != nil {
		return nil, false, err
	}
	switch p.Type {
	case "Sequence":
		for i, sub := range p.Pretokenizers {
			s, bl, err := parsePreSteps(sub)
			if err != nil {
				return nil, false, fmt.Errorf("pretokenizers[%d]: %w", i, err)
			}
			steps = append(steps, s...)
			byteLevel = byteLevel || bl
		}
		return steps, byteLevel, nil
	case "ByteLevel":
		// use_regex defaults to true in Hugging Face tokenizers.
		useRegex := p.UseRegex == nil || *p.UseRegex
		if p.AddPrefixSpace {
			steps = append(steps, preStep{addPrefixSpace: true})
		}
		if useRegex {
			re, err := compileSplit(gpt2Pattern)
			if err != nil {
				return nil, false, err
			}
			steps = append(steps, preStep{re: re})
		}
		return steps, true, nil
	case "Split":
		if p.Invert {
			return nil, false, errors.New("invert: true is not supported")
		}
		var st preStep
		switch p.Behavior {
		case "Isolated":
		case "Removed":
			st.removeMatches = true
		default:
			return nil, false, fmt.Errorf("behavior: %q is not supported (want Isolated or Removed)", p.Behavior)
		}
		switch {
		case p.Pattern.Regex != nil:
			if *p.Pattern.Regex == QwenPattern && !st.removeMatches {
				st.scanner = qwenNext
			} else if st.re, err = compileSplit(*p.Pattern.Regex); err != nil {
				return nil, false, fmt.Errorf("pattern.Regex: %w", err)
			}
		case p.Pattern.String != nil:
			if *p.Pattern.String == "" {
				return nil, false, errors.New("pattern.String: empty")
			}
			st.re = regexp2.MustCompile(regexp2.Escape(*p.Pattern.String), regexp2.None)
		default:
			return nil, false, errors.New("pattern: want Regex or String")
		}
		return append(steps, st), false, nil
	}
	return nil, false, fmt.Errorf("type %q is not supported (want Sequence, Split or ByteLevel)", p.Type)
}

func compileSplit(pattern string) (re *regexp2.Regexp, err error) {
	// A malformed pattern must give an error, even if the engine panics.
	defer func() {
		if r := recover(); r != nil {
			re, err = nil, fmt.Errorf("cannot compile %q: %v", pattern, r)
		}
	}()
	return regexp2.Compile(pattern, regexp2.None)
}

// run applies steps[k:] to piece and calls emit for every final piece.
func runPre(steps []preStep, piece string, emit func(string)) {
	if len(steps) == 0 {
		if piece != "" {
			emit(piece)
		}
		return
	}
	st, rest := &steps[0], steps[1:]
	switch {
	case st.scanner != nil:
		for i := 0; i < len(piece); {
			j := st.scanner(piece, i)
			runPre(rest, piece[i:j], emit)
			i = j
		}
	case st.re != nil:
		splitRegexp(st.re, piece, st.removeMatches, func(p string) { runPre(rest, p, emit) })
	case st.addPrefixSpace:
		if piece != "" && piece[0] != ' ' {
			piece = " " + piece
		}
		runPre(rest, piece, emit)
	default:
		runPre(rest, piece, emit)
	}
}

// splitRegexp cuts s at the matches of re: matches and the text between them
// become pieces (matches are dropped when remove is set). Empty matches are
// ignored, as in Hugging Face tokenizers.
func splitRegexp(re *regexp2.Regexp, s string, remove bool, emit func(string)) {
	if s == "" {
		return
	}
	// regexp2 works on runes and reports rune offsets; map them to bytes.
	// Both regexp2 and this loop turn each invalid byte into one rune.
	offs := make([]int, 0, len(s)+1)
	for i := range s {
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	prev := 0
	m, err := re.FindStringMatch(s)
	for err == nil && m != nil {
		start, end := offs[m.Index], offs[m.Index+m.Length]
		if end > start {
			if start > prev {
				emit(s[prev:start])
			}
			if !remove {
				emit(s[start:end])
			}
			prev = end
		}
		m, err = re.FindNextMatch(m)
	}
	if prev < len(s) {
		emit(s[prev:])
	}
}

// Character classes used by the Qwen scanner.
const (
	clsOther   uint8 = iota // none of the below (also invalid UTF-8 bytes)
	clsLetter               // \p{L}
	clsNumber               // \p{N}
	clsSpace                // \s other than \r and \n
	clsNewline              // \r or \n
)

var asciiClass [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			asciiClass[c] = clsLetter
		case c >= '0' && c <= '9':
			asciiClass[c] = clsNumber
		case c == '\r' || c == '\n':
			asciiClass[c] = clsNewline
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			asciiClass[c] = clsSpace
		}
	}
}

// classAt returns the class of the character at s[i] and its length in bytes.
func classAt(s string, i int) (uint8, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if n == 1 { // invalid byte
		return clsOther, 1
	}
	if r < 0x10000 && bmpInfo != nil {
		return bmpInfo[r] & 7, n
	}
	switch {
	case unicode.IsLetter(r):
		return clsLetter, n
	case unicode.IsNumber(r):
		return clsNumber, n
	case unicode.IsSpace(r):
		return clsSpace, n
	}
	return clsOther, n
}

// contraction reports the length of an (ASCII case-insensitive) 's 't 're 've
// 'm 'll or 'd at s[i] (which holds the apostrophe), or 0.
func contraction(s string, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return 3
		}
	}
	return 0
}

// qwenNext returns the end of the piece of s that starts at i (i < len(s)),
// as QwenPattern would match it.
func qwenNext(s string, i int) int {
	c0, n0 := classAt(s, i)
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if s[i] == '\'' {
		if n := contraction(s, i); n > 0 {
			return i + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	j := -1
	if c0 == clsLetter {
		j = i + n0
	} else if (c0 == clsOther || c0 == clsSpace) && i+n0 < len(s) {
		if c1, n1 := classAt(s, i+n0); c1 == clsLetter {
			j = i + n0 + n1
		}
	}
	if j >= 0 {
		for j < len(s) {
			c, n := classAt(s, j)
			if c != clsLetter {
				break
			}
			j += n
		}
		return j
	}
	// \p{N}
	if c0 == clsNumber {
		return i + n0
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	j = i
	if s[i] == ' ' && i+1 < len(s) {
		if c1, _ := classAt(s, i+1); c1 == clsOther {
			j = i + 1
		}
	}
	if c, _ := classAt(s, j); c == clsOther {
		for j < len(s) {
			c, n := classAt(s, j)
			if c != clsOther {
				break
			}
			j += n
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// Here c0 is whitespace. Find the run of whitespace starting at i, the end
	// of its last \r or \n, and the start of its last character.
	j = i
	lastNL, lastStart, runes := -1, i, 0
	for j < len(s) {
		c, n := classAt(s, j)
		if c == clsNewline {
			lastNL = j + 1
		} else if c != clsSpace {
			break
		}
		lastStart = j
		runes++
		j += n
	}
	// \s*[\r\n]+
	if lastNL >= 0 {
		return lastNL
	}
	// \s+(?!\S)
	if j == len(s) {
		return j
	}
	if runes >= 2 {
		return lastStart
	}
	// \s+
	return j
}
