package tokenizer

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestReference checks Encode against testdata/reference.json.
//
// The reference ids were produced by an independent implementation, the npm
// package @huggingface/transformers 4.3.1 (AutoTokenizer.from_pretrained on a
// local copy of shared/tokenizers/qwen3 with env.allowRemoteModels = false
// and env.localModelPath set; tokenizer.encode(text, {add_special_tokens:
// true})), run with node v20 in a scratch folder outside the repository. The
// same strings were cross-checked with @lenml/tokenizers 3.7.2, which gave
// identical ids for all of them. ids_special_as_text came from the same
// transformers.js tokenizer loaded from a copy of tokenizer.json without the
// special=true added tokens. The file's "generator" and "cross_check"
// fields record this.
func TestReference(t *testing.T) {
	tok := loadQwen(t)
	ref := loadReference(t)
	if len(ref.Cases) < 200 {
		t.Fatalf("only %d reference strings", len(ref.Cases))
	}
	t.Logf("%d strings, ids from %s; %s", len(ref.Cases), ref.Generator, ref.CrossCheck)
	for i, c := range ref.Cases {
		got := tok.Encode(c.Text)
		if !slicesEqual(got, c.IDs) {
			t.Errorf("case %d %q:\n got  %v\n want %v", i, c.Text, got, c.IDs)
			continue
		}
		want := c.IDs
		if c.SpecialAsText != nil {
			want = c.SpecialAsText
		}
		if got := tok.EncodeWithOptions(c.Text, EncodeOptions{SpecialAsText: true}); !slicesEqual(got, want) {
			t.Errorf("case %d %q with SpecialAsText:\n got  %v\n want %v", i, c.Text, got, want)
		}
		nfc := norm.NFC.String(c.Text)
		if c.Decoded != nil {
			nfc = *c.Decoded
		}
		if d := tok.Decode(got); d != nfc {
			t.Errorf("case %d: Decode(Encode(%q)) = %q, want %q", i, c.Text, d, nfc)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestQwenBasics(t *testing.T) {
	tok := loadQwen(t)
	if got := tok.VocabSize(); got != 151669 {
		t.Errorf("VocabSize = %d, want 151669", got)
	}
	if got := tok.ModelVocabSize(); got != 151643 {
		t.Errorf("ModelVocabSize = %d, want 151643", got)
	}
	for tokStr, want := range map[string]int{"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<think>": 151667, "</think>": 151668, "Hello": 9707, "Ġworld": 1879} {
		if id, ok := tok.TokenToID(tokStr); !ok || id != want {
			t.Errorf("TokenToID(%q) = %d, %v; want %d", tokStr, id, ok, want)
		}
		if s, ok := tok.IDToToken(want); !ok || s != tokStr {
			t.Errorf("IDToToken(%d) = %q, %v; want %q", want, s, ok, tokStr)
		}
	}
	if _, ok := tok.IDToToken(-1); ok {
		t.Error("IDToToken(-1) ok")
	}
	if _, ok := tok.IDToToken(1 << 30); ok {
		t.Error("IDToToken(1<<30) ok")
	}
	if _, ok := tok.TokenToID("no such token"); ok {
		t.Error("TokenToID(no such token) ok")
	}
	if id, ok := tok.EOSTokenID(); !ok || id != 151645 {
		t.Errorf("EOSTokenID = %d, %v", id, ok)
	}
	if id, ok := tok.PadTokenID(); !ok || id != 151643 {
		t.Errorf("PadTokenID = %d, %v", id, ok)
	}
	if _, ok := tok.BOSTokenID(); ok {
		t.Error("Qwen3 has no BOS token")
	}
	sp := tok.SpecialTokenIDs()
	if len(sp) != 14 || sp[0] != 151643 || sp[13] != 151656 {
		t.Errorf("SpecialTokenIDs = %v", sp)
	}
	if !tok.IsSpecial(151645) || tok.IsSpecial(151667) || tok.IsSpecial(9707) {
		t.Error("IsSpecial wrong")
	}
	cfg := tok.Config()
	if cfg.EOSToken != "<|im_end|>" || cfg.PadToken != "<|endoftext|>" || cfg.AddBOSToken || cfg.BOSToken != "" ||
		!strings.Contains(cfg.ChatTemplate, "enable_thinking") || cfg.ModelMaxLength != 131072 || cfg.TokenizerClass != "Qwen2Tokenizer" {
		t.Errorf("Config = %+v", cfg)
	}
	if b, ok := tok.TokenBytes(1879); !ok || string(b) != " world" {
		t.Errorf("TokenBytes(1879) = %q", b)
	}
	// Special tokens as text, and all added tokens as text.
	s := "<|im_start|>user\n<think>x</think><|im_end|>"
	all := tok.Encode(s)
	sp1 := tok.EncodeWithOptions(s, EncodeOptions{SpecialAsText: true})
	none := tok.EncodeWithOptions(s, EncodeOptions{AddedAsText: true})
	if all[0] != 151644 || all[len(all)-1] != 151645 {
		t.Errorf("Encode(%q) = %v", s, all)
	}
	for _, id := range sp1 {
		if tok.IsSpecial(id) {
			t.Errorf("SpecialAsText produced special id %d", id)
		}
	}
	if !containsInt(sp1, 151667) {
		t.Errorf("SpecialAsText should keep <think>: %v", sp1)
	}
	for _, id := range none {
		if id >= tok.ModelVocabSize() {
			t.Errorf("AddedAsText produced added id %d", id)
		}
	}
	for _, ids := range [][]int{all, sp1, none} {
		if d := tok.Decode(ids); d != s {
			t.Errorf("Decode = %q, want %q", d, s)
		}
	}
	if d := tok.DecodeWithOptions(all, DecodeOptions{SkipSpecialTokens: true}); d != "user\n<think>x</think>" {
		t.Errorf("SkipSpecialTokens: %q", d)
	}
	if d := tok.Decode([]int{-5, 9707, 1 << 40, 151700, 1879}); d != "Hello world" {
		t.Errorf("Decode with bad ids = %q", d)
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestInvalidUTF8(t *testing.T) {
	tok := loadQwen(t)
	for _, s := range []string{"\xff", "a\xffb", "\xe4\xbd", "caf\xc3", "\xed\xa0\x80", "x\xf0\x9f\x98 y", "\xc3\x28", "é\x80\u0301"} {
		ids := tok.Encode(s)
		if got := string(tok.DecodeBytes(ids)); got != norm.NFC.String(s) {
			t.Errorf("DecodeBytes(Encode(%q)) = %q, want %q", s, got, norm.NFC.String(s))
		}
		d := tok.Decode(ids)
		if !utf8.ValidString(d) {
			t.Errorf("Decode(Encode(%q)) = %q is not valid UTF-8", s, d)
		}
		if want := lossy(norm.NFC.String(s)); d != want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", s, d, want)
		}
	}
}

// lossy converts s as Rust's String::from_utf8_lossy would.
func lossy(s string) string {
	out, _ := appendLossy(nil, []byte(s), true)
	return string(out)
}

func TestAppendLossy(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "",
		"abc":              "abc",
		"\xff":             "\uFFFD",
		"\xff\xfe":         "\uFFFD\uFFFD",
		"\xe2\x82":         "\uFFFD", // truncated 3-byte sequence: one replacement
		"\xe2\x82x":        "\uFFFDx",
		"\xe0\x80":         "\uFFFD\uFFFD",       // E0 needs A0..BF next
		"\xed\xa0\x80":     "\uFFFD\uFFFD\uFFFD", // surrogate
		"\xf0\x9f\x98":     "\uFFFD",
		"\xf0\x9f\x98\x80": "😀",
		"\xf4\x90\x80\x80": "\uFFFD\uFFFD\uFFFD\uFFFD",
		"\xc0\xaf":         "\uFFFD\uFFFD",
		"a\x80b":           "a\uFFFDb",
	} {
		if got := lossy(in); got != want {
			t.Errorf("lossy(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStreamDecoder(t *testing.T) {
	tok := loadQwen(t)
	ref := loadReference(t)
	for _, c := range ref.Cases {
		checkStream(t, tok, c.IDs)
	}
	// Characters split over tokens: a 4-byte emoji in single byte tokens.
	emoji := "😀"
	var ids []int
	for i := 0; i < len(emoji); i++ {
		ids = append(ids, int(tok.byteID[emoji[i]]))
	}
	d := tok.NewStreamDecoder()
	for i, id := range ids {
		out := d.Push(id)
		if i < 3 && (out != "" || d.Pending() != i+1) {
			t.Fatalf("Push %d returned %q with %d pending", i, out, d.Pending())
		}
		if i == 3 && out != emoji {
			t.Fatalf("last Push returned %q", out)
		}
	}
	if f := d.Flush(); f != "" {
		t.Fatalf("Flush = %q", f)
	}
	// An incomplete sequence at the end is flushed as U+FFFD, and an
	// impossible continuation is replaced at once.
	d.Push(ids[0])
	d.Push(ids[1])
	if f := d.Flush(); f != "\uFFFD" {
		t.Fatalf("Flush = %q", f)
	}
	d.Push(ids[0])
	if out := d.Push(tok.Encode("a")[0]); out != "\uFFFDa" {
		t.Fatalf("Push after broken sequence = %q", out)
	}
	// Garbage sequences of byte tokens.
	for seed := 0; seed < 200; seed++ {
		var ids []int
		x := uint32(seed*2654435761 + 1)
		for i := 0; i < 20; i++ {
			x = x*1664525 + 1013904223
			ids = append(ids, int(tok.byteID[byte(x>>24)]))
		}
		checkStream(t, tok, ids)
	}
	sd := tok.NewStreamDecoderWithOptions(DecodeOptions{SkipSpecialTokens: true})
	if out := sd.Push(151644) + sd.Push(9707) + sd.Flush(); out != "Hello" {
		t.Errorf("skip-special stream = %q", out)
	}
}

func checkStream(t *testing.T, tok *Tokenizer, ids []int) {
	t.Helper()
	d := tok.NewStreamDecoder()
	var b strings.Builder
	for _, id := range ids {
		out := d.Push(id)
		if !utf8.ValidString(out) {
			t.Fatalf("Push returned invalid UTF-8 %q", out)
		}
		b.WriteString(out)
	}
	b.WriteString(d.Flush())
	if want := tok.Decode(ids); b.String() != want {
		t.Errorf("stream decode of %v = %q, want %q", ids, b.String(), want)
	}
}

// TestLoadTime loads the 11 MB tokenizer.json and reports how long it takes.
func TestLoadTime(t *testing.T) {
	dir := qwenDir()
	if dir == "" {
		t.Skip(skipMessage)
	}
	start, cpu0 := time.Now(), cpuTime()
	tok, err := Load(dir)
	wall, cpu := time.Since(start), cpuTime()-cpu0
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Load(%s): %v wall, %v CPU (vocab %d, merges %d)", dir, wall, cpu, tok.VocabSize(), tok.merges.len())
	// CPU time, not wall time, is checked: the cores may be shared.
	if cpu > time.Second && !raceEnabled {
		t.Errorf("Load used %v of CPU, want under a second", cpu)
	}
}

func TestMergesFormatsAndBPE(t *testing.T) {
	merges := [][2]string{{"a", "b"}, {"ab", "c"}, {"c", "c"}, {" ", "ab"}, {"l", "o"}, {"lo", "w"}, {"e", "r"}, {"low", "er"}}
	var toks [2]*Tokenizer
	for i, pairs := range []bool{false, true} {
		tk, err := New(tinyTokenizerJSON(merges, nil, pairs, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		toks[i] = tk
	}
	for _, s := range []string{"abc", "abcc", "ccc", "lower", "ab ab", "abababab", strings.Repeat("abc", 40) + "lower", strings.Repeat("lowerabc", 30)} {
		a, b := toks[0].Encode(s), toks[1].Encode(s)
		if !slicesEqual(a, b) {
			t.Errorf("%q: string merges %v, pair merges %v", s, a, b)
		}
		if d := toks[0].Decode(a); d != s {
			t.Errorf("round trip %q -> %q", s, d)
		}
	}
	tk := toks[0]
	id := func(s string) int {
		v, ok := tk.TokenToID(byteLevelEncode(s))
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return v
	}
	for s, want := range map[string][]int{
		"abc":   {id("abc")},
		"ccc":   {id("cc"), id("c")},
		"lower": {id("lower")},
		"ab ab": {id("ab"), id(" ab")},
		"abcc":  {id("abc"), id("c")},
	} {
		if got := tk.Encode(s); !slicesEqual(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestMergeSmallVsHeap checks that the two merge loops agree.
func TestMergeSmallVsHeap(t *testing.T) {
	tok := loadQwen(t)
	ref := loadReference(t)
	sc := new(scratch)
	check := func(w string) {
		a := tok.mergeSmall(nil, w, sc)
		b := tok.mergeHeap(nil, w, sc)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%q: small %v, heap %v", w, a, b)
		}
	}
	for _, c := range ref.Cases {
		runPre(tok.pre, norm.NFC.String(c.Text), check)
	}
	for _, w := range []string{"aaaaaaaaaaaaaaaaaaaa", "          ", "ababababab", "supercalifragilistic", "\xff\xfe\xfd", "ĠĠĠĠ"} {
		check(w)
	}
}

func TestAddedTokenFlags(t *testing.T) {
	added := []AddedToken{
		{Content: "<l>", LStrip: true, Special: true},
		{Content: "<r>", RStrip: true, Special: true},
		{Content: "<lr>", LStrip: true, RStrip: true},
		{Content: "word", SingleWord: true},
		{Content: "Å", Normalized: true},  // NFC form: matches A+ring too
		{Content: "é", Normalized: false}, // matches only the NFC input form
		{Content: "<long>", Special: true},
		{Content: "<lo", Special: true},
	}
	tk, err := New(tinyTokenizerJSON(nil, added, false, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	idOf := func(s string) int {
		id, ok := tk.TokenToID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return id
	}
	bytesOf := func(s string) []int {
		var ids []int
		for i := 0; i < len(s); i++ {
			ids = append(ids, int(tk.byteID[s[i]]))
		}
		return ids
	}
	cat := func(parts ...[]int) []int {
		var out []int
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	one := func(s string) []int { return []int{idOf(s)} }
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"a  <l>  b", cat(bytesOf("a"), one("<l>"), bytesOf("  b"))},
		{"a  <r>  b", cat(bytesOf("a  "), one("<r>"), bytesOf("b"))},
		{"a \t<lr>\n b", cat(bytesOf("a"), one("<lr>"), bytesOf("b"))},
		{"a word b", cat(bytesOf("a "), one("word"), bytesOf(" b"))},
		{"awordb", bytesOf("awordb")},
		{"words", bytesOf("words")},
		{"word", one("word")},
		{"(word)", cat(bytesOf("("), one("word"), bytesOf(")"))},
		{"xÅy", cat(bytesOf("x"), one("Å"), bytesOf("y"))},
		{"xA\u030ay", cat(bytesOf("x"), one("Å"), bytesOf("y"))},
		{"xéy", cat(bytesOf("x"), one("é"), bytesOf("y"))},
		{"xe\u0301y", bytesOf("xéy")}, // not normalized: no match on NFD input
		{"<long>", one("<long>")},
		{"<lon", cat(one("<lo"), bytesOf("n"))},
		{"<r><r>", cat(one("<r>"), one("<r>"))},
		{"<r> <l>", cat(one("<r>"), one("<l>"))},
	} {
		if got := tk.Encode(c.in); !slicesEqual(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	if got, want := tk.EncodeWithOptions("<long>", EncodeOptions{SpecialAsText: true}), bytesOf("<long>"); !slicesEqual(got, want) {
		t.Errorf("SpecialAsText: %v, want %v", got, want)
	}
	if got, want := tk.EncodeWithOptions("a word", EncodeOptions{SpecialAsText: true}), cat(bytesOf("a "), one("word")); !slicesEqual(got, want) {
		t.Errorf("SpecialAsText keeps non-special: %v, want %v", got, want)
	}
	if got, want := tk.EncodeWithOptions("a word", EncodeOptions{AddedAsText: true}), bytesOf("a word"); !slicesEqual(got, want) {
		t.Errorf("AddedAsText: %v, want %v", got, want)
	}
}

func TestPostProcessorTemplate(t *testing.T) {
	added := []AddedToken{{Content: "<s>", Special: true}, {Content: "</s>", Special: true}}
	data := tinyTokenizerJSON(nil, added, false, nil)
	bos, eos := added[0].ID, added[1].ID
	data = tinyTokenizerJSON(nil, added, false, map[string]any{"post_processor": map[string]any{
		"type": "TemplateProcessing",
		"single": []any{
			map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}},
			map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
			map[string]any{"SpecialToken": map[string]any{"id": "</s>", "type_id": 0}},
		},
		"special_tokens": map[string]any{
			"<s>":  map[string]any{"id": "<s>", "ids": []int{bos}, "tokens": []string{"<s>"}},
			"</s>": map[string]any{"id": "</s>", "ids": []int{eos}, "tokens": []string{"</s>"}},
		},
	}})
	tk, err := New(data, []byte(`{"bos_token": {"content": "<s>", "__type": "AddedToken"}, "eos_token": "</s>", "add_bos_token": true, "model_max_length": 1e30}`))
	if err != nil {
		t.Fatal(err)
	}
	got := tk.Encode("a")
	if want := []int{bos, int(tk.byteID['a']), eos}; !slicesEqual(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if got := tk.EncodeWithOptions("a", EncodeOptions{SkipPostProcessor: true}); len(got) != 1 {
		t.Errorf("SkipPostProcessor: %v", got)
	}
	if id, ok := tk.BOSTokenID(); !ok || id != bos {
		t.Errorf("BOSTokenID = %d %v", id, ok)
	}
	if c := tk.Config(); !c.AddBOSToken || c.ModelMaxLength != 0 {
		t.Errorf("Config = %+v", c)
	}
}

func TestLoadErrors(t *testing.T) {
	good := string(tinyTokenizerJSON([][2]string{{"a", "b"}}, nil, false, nil))
	for _, c := range []struct {
		name, json, config, want string
	}{
		{"syntax", `{"model": `, "", "tokenizer.json: unexpected end"},
		{"no model", `{}`, "", "tokenizer.json: model: missing"},
		{"wordpiece", `{"model": {"type": "WordPiece", "vocab": {}}}`, "", `tokenizer.json: model.type: "WordPiece" is not supported`},
		{"vocab type", `{"model": {"type": "BPE", "vocab": {"a": "x"}}}`, "", `tokenizer.json: model.vocab: token "a"`},
		{"vocab negative", `{"model": {"type": "BPE", "vocab": {"a": -1}}}`, "", `tokenizer.json: model.vocab: token "a"`},
		{"huge id", `{"model": {"type": "BPE", "vocab": {"a": 2000000000}}}`, "", "tokenizer.json: model.vocab: id 2000000000 is far beyond"},
		{"merge missing", strings.Replace(good, `"a b"`, `"a zz"`, 1), "", `tokenizer.json: model.merges: [0]: token "zz" is not in model.vocab`},
		{"merge form", strings.Replace(good, `"a b"`, `"ab"`, 1), "", `tokenizer.json: model.merges: [0]: "ab" is not two tokens`},
		{"merge item", strings.Replace(good, `"a b"`, `7`, 1), "", "tokenizer.json: model.merges: [0]"},
		{"merged not in vocab", strings.Replace(good, `"ab":`, `"xy":`, 1), "", `tokenizer.json: model.merges: [0]: merged token "ab"`},
		{"normalizer", strings.Replace(good, `{"type":"NFC"}`, `{"type":"Lowercase"}`, 1), "", `tokenizer.json: normalizer: type "Lowercase"`},
		{"pre_tokenizer", strings.Replace(good, `"behavior":"Isolated"`, `"behavior":"Contiguous"`, 1), "", `tokenizer.json: pre_tokenizer: pretokenizers[0]: behavior: "Contiguous"`},
		{"bad regex", strings.Replace(good, `"Regex":"(?i:`, `"Regex":"((?i:`, 1), "", "tokenizer.json: pre_tokenizer: pretokenizers[0]: pattern.Regex"},
		{"decoder", strings.Replace(good, `"decoder":{"add_prefix_space":false,"trim_offsets":false,"type":"ByteLevel"`, `"decoder":{"type":"Metaspace"`, 1), "", `tokenizer.json: decoder: type "Metaspace"`},
		{"added empty", strings.Replace(good, `"added_tokens":[]`, `"added_tokens":[{"id":300,"content":""}]`, 1), "", "tokenizer.json: added_tokens[0].content: empty"},
		{"config syntax", good, `{`, "tokenizer_config.json: unexpected end"},
		{"config eos", good, `{"eos_token": "<nope>"}`, `tokenizer_config.json: eos_token: token "<nope>"`},
		{"config eos type", good, `{"eos_token": 5}`, "tokenizer_config.json: eos_token: want a string"},
		{"config template", good, `{"chat_template": 5}`, "tokenizer_config.json: chat_template"},
	} {
		var cfg []byte
		if c.config != "" {
			cfg = []byte(c.config)
		}
		_, err := New([]byte(c.json), cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	// Errors from LoadFiles name the path.
	dir := t.TempDir()
	p := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(p, []byte(`{"model": {"type": "BPE"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	var fe *fileError
	if err == nil || !errors.As(err, &fe) || fe.file != p || fe.field != "model.vocab" {
		t.Errorf("Load error %v, want one naming %s and model.vocab", err, p)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil {
		t.Error("Load of a missing folder succeeded")
	}
}

func TestEmptyAndOddInputs(t *testing.T) {
	tk, err := New(tinyTokenizerJSON(nil, nil, false, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := tk.Encode(""); len(ids) != 0 {
		t.Errorf("Encode(\"\") = %v", ids)
	}
	if s := tk.Decode(nil); s != "" {
		t.Errorf("Decode(nil) = %q", s)
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	s := string(all)
	if got := tk.DecodeBytes(tk.Encode(s)); !bytes.Equal(got, []byte(norm.NFC.String(s))) {
		t.Errorf("all bytes round trip: %q", got)
	}
	tk.SetCacheSize(0)
	if got := tk.Decode(tk.Encode("hello hello")); got != "hello hello" {
		t.Errorf("no cache: %q", got)
	}
}

func TestCacheBounded(t *testing.T) {
	tk, err := New(tinyTokenizerJSON([][2]string{{"a", "b"}}, nil, false, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk.SetCacheSize(100)
	for i := 0; i < 1000; i++ {
		tk.Encode(fmt.Sprintf(" ab%sab", strings.Repeat("x", i%300)))
	}
	if n := tk.cache.len(); n > 128 || n == 0 {
		t.Errorf("cache holds %d words, want 1..128", n)
	}
}

// FuzzNew feeds New arbitrary tokenizer.json and tokenizer_config.json
// contents: it must return an error or a working tokenizer, never panic.
func FuzzNew(f *testing.F) {
	small := tinyTokenizerJSON([][2]string{{"a", "b"}, {"ab", "c"}}, []AddedToken{{Content: "<x>", Special: true, LStrip: true}}, true, nil)
	f.Add(small, []byte(`{"eos_token": "<x>", "chat_template": [{"name": "default", "template": "t"}]}`))
	f.Add(tinyTokenizerJSON(nil, nil, false, map[string]any{"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": true}}), []byte(`{}`))
	f.Add([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0, "\u00e9": 3}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"}}`), []byte(nil))
	f.Fuzz(func(t *testing.T, data, cfg []byte) {
		tk, err := New(data, cfg)
		if err != nil {
			return
		}
		ids := tk.Encode("ab c <x> abc\xff é")
		tk.Decode(append(ids, -1, 1<<40))
		d := tk.NewStreamDecoder()
		for _, id := range ids {
			d.Push(id)
		}
		d.Flush()
	})
}

func TestConcurrentEncode(t *testing.T) {
	tok := loadQwen(t)
	ref := loadReference(t)
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func(g int) {
			ok := true
			for i, c := range ref.Cases {
				if (i+g)%2 == 0 && !slicesEqual(tok.Encode(c.Text), c.IDs) {
					ok = false
				}
			}
			done <- ok
		}(g)
	}
	for g := 0; g < 4; g++ {
		if !<-done {
			t.Error("concurrent Encode gave different ids")
		}
	}
}

func TestByteLevelRegexAndIgnoreMerges(t *testing.T) {
	merges := [][2]string{{" ", "h"}, {" h", "i"}, {"l", "o"}}
	pre := map[string]any{"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}}
	data := tinyTokenizerJSON(merges, nil, false, pre)
	tk, err := New(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int {
		v, ok := tk.TokenToID(byteLevelEncode(s))
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return v
	}
	// add_prefix_space turns "hi lo" into " hi lo"; the GPT-2 pattern keeps
	// the space with the following word.
	want := []int{id(" hi"), id(" "), id("lo")}
	if got := tk.Encode("hi lo"); !slicesEqual(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	im, err := New(bytes.Replace(data, []byte(`"ignore_merges":false`), []byte(`"ignore_merges":true`), 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hi lo", "hilo hi", "lo"} {
		if a, b := tk.Encode(s), im.Encode(s); !slicesEqual(a, b) {
			t.Errorf("%q: %v without ignore_merges, %v with", s, a, b)
		}
	}
}
