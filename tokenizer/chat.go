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
	n := len(messages)
	if n > 0 && messages[0].Role == "system" {
		b.WriteString("<|im_start|>system\n" + messages[0].Content + "<|im_end|>\n")
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
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		case m.Role == "assistant":
			content := m.Content
			reasoning := m.ReasoningContent
			if reasoning == "" && strings.Contains(content, "</think>") {
				parts := strings.Split(content, "</think>")
				content = strings.TrimLeft(parts[len(parts)-1], "\n")
				r := strings.Split(strings.TrimRight(parts[0], "\n"), "<think>")
				reasoning = strings.TrimLeft(r[len(r)-1], "\n")
			}
			if i > lastQuery && (i == n-1 || reasoning != "") {
				b.WriteString("<|im_start|>" + m.Role + "\n<think>\n" + strings.Trim(reasoning, "\n") +
					"\n</think>\n\n" + strings.TrimLeft(content, "\n"))
			} else {
				b.WriteString("<|im_start|>" + m.Role + "\n" + content)
			}
			for j, tc := range m.ToolCalls {
				if j > 0 || content != "" {
					b.WriteString("\n")
				}
				b.WriteString("<tool_call>\n{\"name\": \"" + tc.Name + "\", \"arguments\": " + tc.Arguments + "}\n</tool_call>")
			}
			b.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			if i == 0 || messages[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if i == n-1 || messages[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
		}
	}
	if addGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
		if !enableThinking {
			b.WriteString("<think>\n\n</think>\n\n")
		}
	}
	return b.String()
}

// EncodeChat formats messages with FormatChat and encodes the result,
// recognising the template's special tokens.
func (t *Tokenizer) EncodeChat(messages []Message, addGenerationPrompt, enableThinking bool) []int {
	return t.EncodeWithOptions(FormatChat(messages, addGenerationPrompt, enableThinking), EncodeOptions{})
}
