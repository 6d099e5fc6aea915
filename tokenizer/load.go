package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/text/unicode/norm"
)

// AddedToken is one entry of tokenizer.json's added_tokens.
type AddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// Tokenizer is a loaded byte-level BPE tokenizer. It is safe for concurrent
// use.
type Tokenizer struct {
	vocab     map[string]int32 // model vocab, byte-level form -> id
	idToTok   []string         // id -> token as written in tokenizer.json
	idToBytes []string         // id -> bytes the token decodes to
	idKind    []uint8          // kindNone, kindModel, kindAdded, kindSpecial
	byteID    [256]int32       // id of the single-byte token for each byte, -1 if none
	merges    *pairTable       // packed (left id, right id) -> rank and result
	unkID     int32            // -1 when the model has no unk_token
	ignoreMrg bool             // model.ignore_merges

	added          []AddedToken
	addedByContent map[string]int
	// matchers[normalized][mode]: added tokens to split on before (normalized
	// = 0) and after (1) normalization, for each addedMode.
	matchers [2][3]*addedMatcher

	normForms []norm.Form
	pre       []preStep
	postPre   []int // post_processor ids before the sequence
	postSuf   []int // post_processor ids after the sequence

	cache *bpeCache

	config                Config
	bosID, eosID          int
	padID, unkTokID       int
	vocabSize, modelVocab int
	maxTokenBytes         int // the most bytes of text one token covers (MinTokens)
}

const (
	kindNone uint8 = iota
	kindModel
	kindAdded
	kindSpecial
)

// DefaultCacheSize is the number of distinct pre-tokenized words whose BPE
// result a Tokenizer keeps.
const DefaultCacheSize = 1 << 16

// maxIDSlack bounds token ids: no id may exceed the number of vocabulary and
// added entries by more than this, so a corrupt file cannot make the loader
// allocate gigabytes.
const maxIDSlack = 1 << 20

// Load reads dir/tokenizer.json and, when present, dir/tokenizer_config.json.
func Load(dir string) (*Tokenizer, error) {
	cfg := filepath.Join(dir, "tokenizer_config.json")
	if _, err := os.Stat(cfg); errors.Is(err, fs.ErrNotExist) {
		cfg = ""
	}
	return LoadFiles(filepath.Join(dir, "tokenizer.json"), cfg)
}

// LoadFiles reads a tokenizer.json and an optional tokenizer_config.json
// (configPath may be empty).
func LoadFiles(tokenizerPath, configPath string) (*Tokenizer, error) {
	data, err := os.ReadFile(tokenizerPath)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var cfg []byte
	if configPath != "" {
		if cfg, err = os.ReadFile(configPath); err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
	}
	return newTokenizer(data, cfg, tokenizerPath, configPath)
}

// New builds a Tokenizer from the contents of tokenizer.json and
// tokenizer_config.json (config may be nil).
func New(tokenizerJSON, configJSON []byte) (*Tokenizer, error) {
	return newTokenizer(tokenizerJSON, configJSON, "tokenizer.json", "tokenizer_config.json")
}

// Parse builds a Tokenizer from bytes already read from tokenizerFile and
// configFile (configJSON may be nil); the names are for errors. A caller
// that hashes the bytes it parses uses this, so what it hashed is what
// encodes.
func Parse(tokenizerJSON, configJSON []byte, tokenizerFile, configFile string) (*Tokenizer, error) {
	return newTokenizer(tokenizerJSON, configJSON, tokenizerFile, configFile)
}

type fileError struct {
	file, field string
	err         error
}

func (e *fileError) Error() string {
	if e.field == "" {
		return fmt.Sprintf("tokenizer: %s: %v", e.file, e.err)
	}
	return fmt.Sprintf("tokenizer: %s: %s: %v", e.file, e.field, e.err)
}

func (e *fileError) Unwrap() error { return e.err }

type rawTokenizerJSON struct {
	AddedTokens   []AddedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         *rawModel       `json:"model"`
}

type rawModel struct {
	Type                    *string         `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

func newTokenizer(data, cfgData []byte, file, cfgFile string) (*Tokenizer, error) {
	ferr := func(field string, err error) error { return &fileError{file, field, err} }
	ensureTables()
	var raw rawTokenizerJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, ferr("", err)
	}
	m := raw.Model
	if m == nil {
		return nil, ferr("model", errors.New("missing"))
	}
	if m.Type != nil && *m.Type != "BPE" {
		return nil, ferr("model.type", fmt.Errorf("%q is not supported (want \"BPE\")", *m.Type))
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, ferr("model.dropout", fmt.Errorf("%v is not supported (want null)", *m.Dropout))
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, ferr("model.continuing_subword_prefix", fmt.Errorf("%q is not supported", *m.ContinuingSubwordPrefix))
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, ferr("model.end_of_word_suffix", fmt.Errorf("%q is not supported", *m.EndOfWordSuffix))
	}
	if m.ByteFallback {
		return nil, ferr("model.byte_fallback", errors.New("true is not supported by a byte-level tokenizer"))
	}
	if len(m.Vocab) == 0 || string(m.Vocab) == "null" {
		return nil, ferr("model.vocab", errors.New("missing"))
	}
	entries, err := parseVocab(string(m.Vocab))
	if err != nil {
		return nil, ferr("model.vocab", err)
	}
	var merges [][2]string
	if len(m.Merges) > 0 && string(m.Merges) != "null" {
		if merges, err = parseMerges(string(m.Merges)); err != nil {
			return nil, ferr("model.merges", err)
		}
	}

	t := &Tokenizer{
		vocab:          make(map[string]int32, len(entries)),
		unkID:          -1,
		ignoreMrg:      m.IgnoreMerges,
		addedByContent: make(map[string]int, len(raw.AddedTokens)),
		cache:          newBPECache(DefaultCacheSize),
		bosID:          -1,
		eosID:          -1,
		padID:          -1,
		unkTokID:       -1,
	}
	maxID := -1
	for _, e := range entries {
		maxID = max(maxID, e.id)
	}
	for i, a := range raw.AddedTokens {
		if a.ID < 0 {
			return nil, ferr(fmt.Sprintf("added_tokens[%d].id", i), fmt.Errorf("%d is negative", a.ID))
		}
		maxID = max(maxID, a.ID)
	}
	if maxID >= len(entries)+len(raw.AddedTokens)+maxIDSlack {
		return nil, ferr("model.vocab", fmt.Errorf("id %d is far beyond the %d entries", maxID, len(entries)+len(raw.AddedTokens)))
	}
	t.vocabSize = maxID + 1
	t.idToTok = make([]string, t.vocabSize)
	t.idToBytes = make([]string, t.vocabSize)
	t.idKind = make([]uint8, t.vocabSize)
	// Two tokens on one id would make decoding ambiguous (the id prints
	// as one of them) and encoding of the other unreachable.
	for _, e := range entries {
		if t.idKind[e.id] != kindNone {
			return nil, ferr("model.vocab", fmt.Errorf("tokens %q and %q both have id %d", t.idToTok[e.id], e.tok, e.id))
		}
		t.vocab[e.tok] = int32(e.id)
		t.idToTok[e.id] = e.tok
		t.idToBytes[e.id], _ = byteLevelDecode(e.tok)
		t.idKind[e.id] = kindModel
		t.modelVocab = max(t.modelVocab, e.id+1)
	}
	for b := range t.byteID {
		t.byteID[b] = -1
		if id, ok := t.vocab[string(byteToRune[b])]; ok {
			t.byteID[b] = id
		}
	}
	if m.UnkToken != nil && *m.UnkToken != "" {
		id, ok := t.vocab[*m.UnkToken]
		if !ok {
			return nil, ferr("model.unk_token", fmt.Errorf("%q is not in model.vocab", *m.UnkToken))
		}
		t.unkID = id
	}
	if err := t.buildMerges(merges); err != nil {
		return nil, ferr("model.merges", err)
	}

	// Normalizer first: normalized added tokens are matched in normalized form.
	if t.normForms, err = parseNormalizer(raw.Normalizer); err != nil {
		return nil, ferr("normalizer", err)
	}
	for i, a := range raw.AddedTokens {
		if a.Content == "" {
			return nil, ferr(fmt.Sprintf("added_tokens[%d].content", i), errors.New("empty"))
		}
		switch t.idKind[a.ID] {
		case kindModel:
			if t.idToTok[a.ID] != a.Content { // the same token listed twice is fine
				return nil, ferr(fmt.Sprintf("added_tokens[%d].id", i), fmt.Errorf("%q has id %d, which model.vocab gives %q", a.Content, a.ID, t.idToTok[a.ID]))
			}
		case kindAdded, kindSpecial:
			return nil, ferr(fmt.Sprintf("added_tokens[%d].id", i), fmt.Errorf("%q has id %d, which an earlier added token (%q) has", a.Content, a.ID, t.idToTok[a.ID]))
		}
		t.added = append(t.added, a)
		t.addedByContent[a.Content] = a.ID
		t.idToTok[a.ID] = a.Content
		t.idToBytes[a.ID], _ = byteLevelDecode(a.Content)
		t.idKind[a.ID] = kindAdded
		if a.Special {
			t.idKind[a.ID] = kindSpecial
		}
	}
	t.buildMatchers()
	for id, b := range t.idToBytes {
		t.maxTokenBytes = max(t.maxTokenBytes, len(b), len(t.idToTok[id]))
	}
	for _, a := range t.added {
		if a.LStrip || a.RStrip { // it takes in any run of spaces beside it: no bound
			t.maxTokenBytes = math.MaxInt / normShrink
		}
	}

	if t.pre, err = parsePreTokenizer(raw.PreTokenizer); err != nil {
		return nil, ferr("pre_tokenizer", err)
	}
	if err := checkDecoder(raw.Decoder); err != nil {
		return nil, ferr("decoder", err)
	}
	if t.postPre, t.postSuf, err = t.parsePostProcessor(raw.PostProcessor); err != nil {
		return nil, ferr("post_processor", err)
	}

	if cfgData != nil {
		if t.config, err = parseConfig(cfgData); err != nil {
			var fe *fileError
			if errors.As(err, &fe) {
				fe.file = cfgFile
				return nil, fe
			}
			return nil, &fileError{cfgFile, "", err}
		}
	}
	look := func(field, tok string) (int, error) {
		if tok == "" {
			return -1, nil
		}
		id, ok := t.TokenToID(tok)
		if !ok {
			return -1, &fileError{cfgFile, field, fmt.Errorf("token %q is not in the vocabulary", tok)}
		}
		return id, nil
	}
	if t.bosID, err = look("bos_token", t.config.BOSToken); err != nil {
		return nil, err
	}
	if t.eosID, err = look("eos_token", t.config.EOSToken); err != nil {
		return nil, err
	}
	if t.padID, err = look("pad_token", t.config.PadToken); err != nil {
		return nil, err
	}
	if t.unkTokID, err = look("unk_token", t.config.UnkToken); err != nil {
		return nil, err
	}
	return t, nil
}

// merge is the value of the merges table: the pair's rank (lower merges
// first) and the id of the merged token.
type merge struct {
	rank int32
	id   int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func (t *Tokenizer) buildMerges(merges [][2]string) error {
	t.merges = newPairTable(len(merges))
	var buf []byte
	for i, p := range merges {
		a, ok := t.vocab[p[0]]
		if !ok {
			return fmt.Errorf("[%d]: token %q is not in model.vocab", i, p[0])
		}
		b, ok := t.vocab[p[1]]
		if !ok {
			return fmt.Errorf("[%d]: token %q is not in model.vocab", i, p[1])
		}
		buf = append(append(buf[:0], p[0]...), p[1]...)
		c, ok := t.vocab[string(buf)]
		if !ok {
			return fmt.Errorf("[%d]: merged token %q is not in model.vocab", i, buf)
		}
		// As in Hugging Face tokenizers, a repeated pair keeps its last rank.
		t.merges.put(pairKey(a, b), merge{int32(i), c})
	}
	return nil
}

type typed struct {
	Type string `json:"type"`
}

func isNull(r json.RawMessage) bool { return len(r) == 0 || string(r) == "null" }

func parseNormalizer(r json.RawMessage) ([]norm.Form, error) {
	if isNull(r) {
		return nil, nil
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(r, &n); err != nil {
		return nil, err
	}
	switch n.Type {
	case "NFC":
		return []norm.Form{norm.NFC}, nil
	case "NFD":
		return []norm.Form{norm.NFD}, nil
	case "NFKC":
		return []norm.Form{norm.NFKC}, nil
	case "NFKD":
		return []norm.Form{norm.NFKD}, nil
	case "Sequence":
		var out []norm.Form
		for i, sub := range n.Normalizers {
			f, err := parseNormalizer(sub)
			if err != nil {
				return nil, fmt.Errorf("normalizers[%d]: %w", i, err)
			}
			out = append(out, f...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("type %q is not supported (want NFC, NFD, NFKC, NFKD or Sequence)", n.Type)
}

func checkDecoder(r json.RawMessage) error {
	if isNull(r) {
		return errors.New("missing (want ByteLevel)")
	}
	var d struct {
		Type     string            `json:"type"`
		Decoders []json.RawMessage `json:"decoders"`
	}
	if err := json.Unmarshal(r, &d); err != nil {
		return err
	}
	switch d.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		if len(d.Decoders) == 1 {
			if err := checkDecoder(d.Decoders[0]); err != nil {
				return fmt.Errorf("decoders[0]: %w", err)
			}
			return nil
		}
	}
	return fmt.Errorf("type %q is not supported (want ByteLevel)", d.Type)
}

func (t *Tokenizer) parsePostProcessor(r json.RawMessage) (pre, suf []int, err error) {
	if isNull(r) {
		return nil, nil, nil
	}
	var p struct {
		Type          string            `json:"type"`
		Processors    []json.RawMessage `json:"processors"`
		Single        []json.RawMessage `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(r, &p); err != nil {
		return nil, nil, err
	}
	switch p.Type {
	case "ByteLevel":
		return nil, nil, nil
	case "Sequence":
		for i, sub := range p.Processors {
			a, b, err := t.parsePostProcessor(sub)
			if err != nil {
				return nil, nil, fmt.Errorf("processors[%d]: %w", i, err)
			}
			if len(a)+len(b) > 0 {
				if len(pre)+len(suf) > 0 {
					return nil, nil, fmt.Errorf("processors[%d]: more than one processor adds tokens", i)
				}
				pre, suf = a, b
			}
		}
		return pre, suf, nil
	case "TemplateProcessing":
		seen := false
		for i, item := range p.Single {
			var it struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			}
			if err := json.Unmarshal(item, &it); err != nil {
				return nil, nil, fmt.Errorf("single[%d]: %w", i, err)
			}
			switch {
			case it.Sequence != nil:
				if seen {
					return nil, nil, fmt.Errorf("single[%d]: second sequence", i)
				}
				seen = true
			case it.SpecialToken != nil:
				st, ok := p.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return nil, nil, fmt.Errorf("single[%d]: %q is not in special_tokens", i, it.SpecialToken.ID)
				}
				for _, id := range st.IDs {
					if id < 0 || id >= t.vocabSize {
						return nil, nil, fmt.Errorf("special_tokens[%q]: id %d is out of range", it.SpecialToken.ID, id)
					}
				}
				if seen {
					suf = append(suf, st.IDs...)
				} else {
					pre = append(pre, st.IDs...)
				}
			default:
				return nil, nil, fmt.Errorf("single[%d]: want SpecialToken or Sequence", i)
			}
		}
		return pre, suf, nil
	}
	return nil, nil, fmt.Errorf("type %q is not supported (want ByteLevel, TemplateProcessing or Sequence)", p.Type)
}

// buildMatchers prepares the added-token matchers for every addedMode.
func (t *Tokenizer) buildMatchers() {
	for normalized := 0; normalized < 2; normalized++ {
		for mode := addedMode(0); mode < numAddedModes; mode++ {
			var pats []addedPattern
			for _, a := range t.added {
				if a.Normalized != (normalized == 1) || mode == addedNone || (mode == addedNonSpecial && a.Special) {
					continue
				}
				content := a.Content
				if a.Normalized {
					content = t.normalize(content)
				}
				pats = append(pats, addedPattern{content: content, tok: a})
			}
			t.matchers[normalized][mode] = newAddedMatcher(pats)
		}
	}
}

// sortedIDs returns the ids of the added tokens for which keep is true, in
// increasing order.
func (t *Tokenizer) sortedIDs(keep func(AddedToken) bool) []int {
	var ids []int
	for _, a := range t.added {
		if keep(a) {
			ids = append(ids, a.ID)
		}
	}
	sort.Ints(ids)
	return ids
}
