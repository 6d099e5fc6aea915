package tokenizer

import (
	"strings"
	"testing"
)

// TestTwoTokensOnOneID: a tokenizer.json that gives one id to two tokens
// (in model.vocab, an added token over a different vocabulary token, or
// two added tokens) is refused, naming the field and both tokens; an
// added token that repeats its vocabulary entry is fine.
func TestTwoTokensOnOneID(t *testing.T) {
	const pre = `"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":false},"decoder":{"type":"ByteLevel"},`
	for _, tc := range []struct {
		name, json, want string
	}{
		{"vocab", `{` + pre + `"model":{"type":"BPE","vocab":{"a":0,"b":0},"merges":[]}}`, `model.vocab: tokens "a" and "b" both have id 0`},
		{"added over vocab", `{` + pre + `"added_tokens":[{"id":1,"content":"<x>"}],"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]}}`,
			`added_tokens[0].id: "<x>" has id 1, which model.vocab gives "b"`},
		{"two added", `{` + pre + `"added_tokens":[{"id":2,"content":"<x>"},{"id":2,"content":"<y>"}],"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]}}`,
			`added_tokens[1].id: "<y>" has id 2, which an earlier added token ("<x>") has`},
		{"added repeats vocab", `{` + pre + `"added_tokens":[{"id":1,"content":"b"}],"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]}}`, ""},
	} {
		_, err := Parse([]byte(tc.json), nil, "tok.json", "")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "tok.json")):
			t.Errorf("%s: %v; want %q naming the file", tc.name, err, tc.want)
		}
	}
}
