package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedMode selects which added tokens Encode recognises.
type addedMode uint8

const (
	addedAll        addedMode = iota // every added token
	addedNonSpecial                  // only added tokens with special=false
	addedNone                        // none
	numAddedModes
)

type addedPattern struct {
	content string
	tok     AddedToken
}

// addedMatcher finds added tokens in text, leftmost-longest and without
// overlap, like the Aho-Corasick automaton of Hugging Face tokenizers. Added
// tokens are few, so a table of candidates per first byte is enough.
type addedMatcher struct {
	byFirst [256][]int // pattern indexes by first byte, longest first
	pats    []addedPattern
	first   [256]bool
	single  int // the only first byte, or -1
}

func newAddedMatcher(pats []addedPattern) *addedMatcher {
	if len(pats) == 0 {
		return nil
	}
	m := &addedMatcher{pats: pats, single: int(pats[0].content[0])}
	for i, p := range pats {
		c := p.content[0]
		m.first[c] = true
		if int(c) != m.single {
			m.single = -1
		}
		m.byFirst[c] = append(m.byFirst[c], i)
	}
	for c := range m.byFirst {
		l := m.byFirst[c]
		sort.SliceStable(l, func(a, b int) bool { return len(pats[l[a]].content) > len(pats[l[b]].content) })
	}
	return m
}

// next finds the leftmost-longest match at or after from.
func (m *addedMatcher) next(s string, from int) (start, end, pat int) {
	for i := from; i < len(s); {
		if m.single >= 0 {
			k := strings.IndexByte(s[i:], byte(m.single))
			if k < 0 {
				return -1, -1, -1
			}
			i += k
		} else {
			for i < len(s) && !m.first[s[i]] {
				i++
			}
			if i == len(s) {
				return -1, -1, -1
			}
		}
		for _, p := range m.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], m.pats[p].content) {
				return i, i + len(m.pats[p].content), p
			}
		}
		i++
	}
	return -1, -1, -1
}

// split cuts s into text pieces and added-token matches, calling text for
// the former and token for the latter, in order. It applies single_word,
// lstrip and rstrip as Hugging Face's AddedVocabulary does.
func (m *addedMatcher) split(s string, text func(string), token func(id int)) {
	if m == nil {
		text(s)
		return
	}
	prev := 0 // end of the last emitted piece
	for pos := 0; pos < len(s); {
		start, end, p := m.next(s, pos)
		if p < 0 {
			break
		}
		pos = end
		tok := m.pats[p].tok
		if start < prev {
			continue // inside the whitespace that the previous match stripped
		}
		if tok.SingleWord {
			if (start > 0 && endsWithWord(s[:start])) || (end < len(s) && startsWithWord(s[end:])) {
				continue
			}
		}
		if tok.LStrip {
			start = max(prev, len(strings.TrimRightFunc(s[:start], unicode.IsSpace)))
		}
		if tok.RStrip {
			end = len(s) - len(strings.TrimLeftFunc(s[end:], unicode.IsSpace))
			pos = end
		}
		if start > prev {
			text(s[prev:start])
		}
		token(tok.ID)
		prev = end
	}
	if prev < len(s) {
		text(s[prev:])
	}
}

// isWordRune approximates Rust regex's Unicode \w: alphabetic, marks,
// decimal digits, connector punctuation and joiners.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) ||
		unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Pc, r) || r == 0x200C || r == 0x200D
}

func endsWithWord(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordRune(r)
}

func startsWithWord(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordRune(r)
}
