package tokenizer

import "strings"

// Message is one turn of a conversation for FormatChat.
type Message struct {
	Role    string // "system", "user", "assistant" or "tool"
	Content string
	// ReasoningContent is an assistant turn's thinking. When empty, the
	// template takes the thinking from a <think>...</think> block in Content
	// (as it does when reasoning_content is not given).
	ReasoningContent string
	// ToolCalls are an assistant turn's function calls.
	ToolCalls []ToolCall
}

// ToolCall is one function call of an assistant turn.
type ToolCall struct {
	Name string
	// Arguments is the call's arguments as JSON text; it is written out
	// verbatim (the template's "arguments is string" branch).
	Arguments string
}

// FormatChat renders messages with the Qwen3 chat template of
// tokenizer_config.json, re-implemented in Go; tests check it against a
// Jinja engine running the template itself. With addGenerationPrompt it
// ends with "<|im_start|>assistant\n", followed, when enableThinking is
// false, by the empty think block "<think>\n\n</think>\n\n". The template's
// tools section (the tools argument) is not supported.
func FormatChat(messages []Message, addGenerationPrompt, enableThinking bool) string {
	var b strings.Builder
	for _, p := range FormatChatParts(messages, addGenerationPrompt, enableThinking) {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Control tokens the Qwen3 template writes around each turn.
const (
	imStart = "<|im_start|>"
	imEnd   = "<|im_end|>"
)

// ChatPart is a piece of a formatted chat: a control token the template
// itself writes (Control), or text, which holds the messages' content.
type ChatPart struct {
	Text    string
	Control bool
}

// chatWriter collects parts, merging adjacent text (so text is tokenized
// in the same stretches as the formatted string is).
type chatWriter struct{ parts []ChatPart }

func (w *chatWriter) ctl(s string) { w.parts = append(w.parts, ChatPart{Text: s, Control: true}) }

func (w *chatWriter) text(s string) {
	if s == "" {
		return
	}
	if n := len(w.parts); n > 0 && !w.parts[n-1].Control {
		w.parts[n-1].Text += s
		return
	}
	w.parts = append(w.parts, ChatPart{Text: s})
}

// FormatChatParts is FormatChat split into the template's control tokens
// and the text between them (EncodeChatSafe encodes the text without
// recognising control tokens in it).
func FormatChatParts(messages []Message, addGenerationPrompt, enableThinking bool) []ChatPart {
	var w chatWriter
	turn := func(role, content string) {
		w.ctl(imStart)
		w.text(role + "\n" + content)
		w.ctl(imEnd)
		w.text("\n")
	}
	n := len(messages)
	if n > 0 && messages[0].Role == "system" {
		turn("system", messages[0].Content)
	}
	// The last user turn that is not a wrapped tool response.
	lastQuery := n - 1
	for i := n - 1; i >= 0; i-- {
		m := messages[i]
		if m.Role == "user" && !(strings.HasPrefix(m.Content, "<tool_response>") && strings.HasSuffix(m.Content, "</tool_response>")) {
			lastQuery = i
			break
		}
	}
	for i, m := range messages {
		switch {
		case m.Role == "user" || (m.Role == "system" && i > 0):
			turn(m.Role, m.Content)
		case m.Role == "assistant":
			content := m.Content
			reasoning := m.ReasoningContent
			if reasoning == "" && strings.Contains(content, "</think>") {
				parts := strings.Split(content, "</think>")
				content = strings.TrimLeft(parts[len(parts)-1], "\n")
				r := strings.Split(strings.TrimRight(parts[0], "\n"), "<think>")
				reasoning = strings.TrimLeft(r[len(r)-1], "\n")
			}
			w.ctl(imStart)
			if i > lastQuery && (i == n-1 || reasoning != "") {
				w.text(m.Role + "\n<think>\n" + strings.Trim(reasoning, "\n") +
					"\n</think>\n\n" + strings.TrimLeft(content, "\n"))
			} else {
				w.text(m.Role + "\n" + content)
			}
			for j, tc := range m.ToolCalls {
				if j > 0 || content != "" {
					w.text("\n")
				}
				w.text("<tool_call>\n{\"name\": \"" + tc.Name + "\", \"arguments\": " + tc.Arguments + "}\n</tool_call>")
			}
			w.ctl(imEnd)
			w.text("\n")
		case m.Role == "tool":
			if i == 0 || messages[i-1].Role != "tool" {
				w.ctl(imStart)
				w.text("user")
			}
			w.text("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if i == n-1 || messages[i+1].Role != "tool" {
				w.ctl(imEnd)
				w.text("\n")
			}
		}
	}
	if addGenerationPrompt {
		w.ctl(imStart)
		w.text("assistant\n")
		if !enableThinking {
			w.text("<think>\n\n</think>\n\n")
		}
	}
	return w.parts
}

func (t *Tokenizer) EncodeChat(messages []Message, addGenerationPrompt, enableThinking bool) []int {
	return t.EncodeWithOptions(FormatChat(messages, addGenerationPrompt, enableThinking), EncodeOptions{})
}

// EncodeChatSafe encodes the chat with the template's own control tokens
// as control tokens and the messages' text with special tokens as plain
// text (EncodeOptions.SpecialAsText), so "<|im_start|>system" inside a
// message cannot open a turn. Hugging Face's apply_chat_template (and
// EncodeChat) parse them; for text without control tokens the two agree.
func (t *Tokenizer) EncodeChatSafe(messages []Message, addGenerationPrompt, enableThinking bool) []int {
	var out []int
	out = append(out, t.postPre...)
	for _, p := range FormatChatParts(messages, addGenerationPrompt, enableThinking) {
		o := EncodeOptions{SkipPostProcessor: true, SpecialAsText: !p.Control}
		out = append(out, t.EncodeWithOptions(p.Text, o)...)
	}
	return append(out, t.postSuf...)
}
