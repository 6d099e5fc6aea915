package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestFormatChat compares FormatChat with testdata/chat_template.json. Its
// expected strings were made by rendering the chat_template of the shared
// Qwen3 tokenizer_config.json with the npm package @huggingface/jinja 0.5.11
// (new Template(chat_template).render({messages, add_generation_prompt,
// enable_thinking, bos_token: "", eos_token})) under node v20, in a scratch
// folder outside the repository; the file's "generator" field records this.
// Python's Jinja2 3.1.6, set up as transformers sets it up (sandboxed, with
// trim_blocks and lstrip_blocks), renders all of them identically.
func TestFormatChat(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "chat_template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Generator string `json:"generator"`
		Cases     []struct {
			Name                string `json:"name"`
			AddGenerationPrompt bool   `json:"add_generation_prompt"`
			EnableThinking      bool   `json:"enable_thinking"`
			Messages            []struct {
				Role             string `json:"role"`
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
				ToolCalls        []struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
					Function  *struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
			Expected string `json:"expected"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("testdata/chat_template.json: %v", err)
	}
	t.Logf("%d cases from %s", len(f.Cases), f.Generator)
	for _, c := range f.Cases {
		var msgs []Message
		for _, m := range c.Messages {
			msg := Message{Role: m.Role, Content: m.Content, ReasoningContent: m.ReasoningContent}
			for _, tc := range m.ToolCalls {
				call := ToolCall{Name: tc.Name, Arguments: tc.Arguments}
				if tc.Function != nil {
					call = ToolCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}
				}
				msg.ToolCalls = append(msg.ToolCalls, call)
			}
			msgs = append(msgs, msg)
		}
		got := FormatChat(msgs, c.AddGenerationPrompt, c.EnableThinking)
		if got != c.Expected {
			t.Errorf("%s (gen=%v think=%v):\n got  %q\n want %q", c.Name, c.AddGenerationPrompt, c.EnableThinking, got, c.Expected)
		}
	}
}

func TestEncodeChat(t *testing.T) {
	tok := loadQwen(t)
	ids := tok.EncodeChat([]Message{{Role: "user", Content: "Hi"}}, true, false)
	want := []int{151644, 872, 198, 13048, 151645, 198, 151644, 77091, 198, 151667, 271, 151668, 271}
	if !slicesEqual(ids, want) {
		t.Errorf("EncodeChat = %v, want %v", ids, want)
	}
}
