package tokenizer

import (
	"encoding/json"
	"testing"
)

// TestIgnoredChatTemplate: no template, or Qwen3's own, is used as it is
// (FormatChat is that template); any other is reported ignored.
func TestIgnoredChatTemplate(t *testing.T) {
	tok := tinyTok(t)
	for _, tc := range []struct {
		template string
		ignored  bool
	}{
		{"", false},
		{"{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}", true},
	} {
		tok.config.ChatTemplate = tc.template
		if got := tok.IgnoredChatTemplate(); got != tc.ignored {
			t.Errorf("template %q: ignored %v, want %v", tc.template, got, tc.ignored)
		}
	}
	q := loadQwen(t) // the real Qwen3 tokenizer_config.json's template
	if q.IgnoredChatTemplate() {
		t.Error("Qwen3's own chat template is reported ignored")
	}
}

// tinyTok is a two-token byte-level tokenizer with no configuration.
func tinyTok(t *testing.T) *Tokenizer {
	t.Helper()
	tj, _ := json.Marshal(map[string]any{
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": map[string]int{"a": 0, "b": 1}, "merges": []string{}},
	})
	tok, err := Parse(tj, nil, "tiny.json", "")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
