package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
)

// qwen3TemplateSHA256 is the SHA-256 of the chat_template string of
// Qwen3's tokenizer_config.json: the template FormatChat re-implements.
const qwen3TemplateSHA256 = "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5"

// IgnoredChatTemplate reports whether the tokenizer's configuration (a
// tokenizer_config.json, or a GGUF file's tokenizer.chat_template) carries
// a chat template other than Qwen3's. gelo has no Jinja engine: chat is
// always formatted by FormatChat (Qwen3's ChatML turns), so such a
// template is ignored, and whoever chats should be told so.
func (t *Tokenizer) IgnoredChatTemplate() bool {
	tmpl := t.config.ChatTemplate
	if tmpl == "" {
		return false
	}
	sum := sha256.Sum256([]byte(tmpl))
	return hex.EncodeToString(sum[:]) != qwen3TemplateSHA256
}

// IgnoredChatTemplateNote is the warning to print when
// IgnoredChatTemplate holds.
const IgnoredChatTemplateNote = "the tokenizer's chat_template is not Qwen3's and is ignored: gelo formats chat as Qwen3's template does (<|im_start|>role\\n...<|im_end|> turns), which this model may not expect"
