package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gelo/models"
	"gelo/models/safetensors"
	"gelo/serve/client"
)

// servePlain serves model over plain HTTP on a free loopback port until
// the test ends and returns the URL.
func servePlain(t *testing.T, model string, extra ...string) string {
	t.Helper()
	return startServe(t, append([]string{"--model", model, "--listen", "127.0.0.1:0", "--plain-http", "--max-context", "128"}, extra...)...)
}

// completeIDs asks the server at url for a greedy completion of prompt
// ids and returns the token ids it generated.
func completeIDs(t *testing.T, url string, prompt []int, n int) []int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": n, "temperature": 0, "return_token_ids": true})
	resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			TokenIDs []int `json:"token_ids"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || len(out.Choices) != 1 {
		t.Fatalf("completion: status %d, %v, %+v", resp.StatusCode, err, out)
	}
	return out.Choices[0].TokenIDs
}

// byteTokenizer is a byte-level BPE tokenizer.json over the 256 bytes
// (GPT-2's byte-to-character map) with Qwen3's control tokens added after
// them: it encodes any text, and chat.
func byteTokenizer() []byte {
	var chars []rune
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			chars = append(chars, rune(b))
		}
	}
	vocab := map[string]int{}
	extra := 0
	for b := range 256 {
		r := rune(b)
		if !slices.Contains(chars, r) {
			r = rune(256 + extra)
			extra++
		}
		vocab[string(r)] = b
	}
	type added struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	}
	var adds []added
	for i, s := range []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"} {
		adds = append(adds, added{ID: 256 + i, Content: s, Special: i < 3})
	}
	b, _ := json.Marshal(map[string]any{
		"added_tokens":  adds,
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
	})
	return b
}

// TestServeGGUFOwnTokenizer: gelo serve --model x.gguf encodes with the
// tokenizer the file carries (the one its sealed identity binds): a chat
// request is answered. Before, serve looked for a tokenizer beside a
// directory only and refused chat ("this model has no tokenizer").
func TestServeGGUFOwnTokenizer(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	cfg, _ := models.Variant("qwen3-tiny")
	if err := models.WriteSynthetic(m, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(m, "tokenizer.json"), byteTokenizer(), 0o644)
	os.WriteFile(filepath.Join(m, "tokenizer_config.json"), []byte(`{"eos_token":"<|im_end|>"}`), 0o644)
	file := filepath.Join(dir, "tiny.gguf")
	must(t, "export", "--model", m, "--gguf", file, "--type", "q8_0")
	url := servePlain(t, file)
	c, err := client.Dial(context.Background(), url, client.Options{Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	zero := 0.0
	finish, err := c.Chat(context.Background(), []client.Message{{Role: "user", Content: "hello"}}, client.ChatOptions{MaxTokens: 4, Temperature: &zero}, nil)
	if err != nil || finish == "" {
		t.Fatalf("chat with the GGUF file's own tokenizer: finish %q, %v", finish, err)
	}
}

// TestServeModelFileChanges: once gelo serve --model has loaded an f32
// checkpoint or a GGUF file, the file overwritten in place by another
// model of the same shapes, then truncated, changes no served token and
// does not stop the server. Before, an f32 checkpoint's weights were read
// live from the mapped file: the tokens changed, and the truncation was a
// SIGBUS.
func TestServeModelFileChanges(t *testing.T) {
	cfg, _ := models.Variant("qwen3-tiny")
	// The engine of an f32 plan copies each tensor, that of a bf16 plan
	// converts it, both through reads checked against the load's digests.
	for _, tc := range []struct{ kind, weights string }{{"f32", "f32"}, {"gguf", "f32"}, {"f32", "bf16"}, {"gguf", "bf16"}} {
		kind := tc.kind
		t.Run(kind+"-"+tc.weights+"-plan", func(t *testing.T) {
			dir := t.TempDir()
			var files [2][]byte // seed 1's, seed 2's
			var specs, paths [2]string
			for i, seed := range []uint64{1, 2} {
				m := filepath.Join(dir, fmt.Sprint("m", seed))
				if err := models.WriteSynthetic(m, cfg, seed, "f32", nil); err != nil {
					t.Fatal(err)
				}
				specs[i], paths[i] = m, filepath.Join(m, safetensors.SingleFile)
				if kind == "gguf" {
					specs[i] = filepath.Join(dir, fmt.Sprint(seed, ".gguf"))
					must(t, "export", "--model", m, "--gguf", specs[i], "--type", "q8_0")
					paths[i] = specs[i]
				}
				b, err := os.ReadFile(paths[i])
				if err != nil {
					t.Fatal(err)
				}
				files[i] = b
			}
			other := completeIDs(t, servePlain(t, specs[1], "--weights", tc.weights), []int{1, 2, 3}, 8)
			url := servePlain(t, specs[0], "--weights", tc.weights)
			want := completeIDs(t, url, []int{1, 2, 3}, 8)
			if slices.Equal(want, other) {
				t.Fatal("the two models generate the same tokens: the test cannot tell them apart")
			}
			file := paths[0]
			for _, change := range []struct {
				what string
				data []byte
			}{{"overwritten in place", files[1]}, {"truncated", files[0][:len(files[0])/3]}} {
				if err := os.WriteFile(file, change.data, 0o644); err != nil {
					t.Fatal(err)
				}
				if got := completeIDs(t, url, []int{1, 2, 3}, 8); !slices.Equal(got, want) {
					t.Fatalf("model file %s after load: tokens %v, before %v", change.what, got, want)
				}
			}
		})
	}
}

// TestChatTemplateIgnoredIsSaid: gelo formats chat with Qwen3's template
// only; a tokenizer configuration carrying another chat_template gets a
// warning from generate --chat saying it is ignored, one without gets
// none.
func TestChatTemplateIgnoredIsSaid(t *testing.T) {
	m := filepath.Join(t.TempDir(), "m")
	cfg, _ := models.Variant("qwen3-tiny")
	if err := models.WriteSynthetic(m, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(m, "tokenizer.json"), byteTokenizer(), 0o644)
	for _, tc := range []struct {
		config string
		warn   bool
	}{
		{`{"eos_token":"<|im_end|>","chat_template":"{% for m in messages %}{{ m.content }}{% endfor %}"}`, true},
		{`{"eos_token":"<|im_end|>"}`, false},
	} {
		os.WriteFile(filepath.Join(m, "tokenizer_config.json"), []byte(tc.config), 0o644)
		_, errs := must(t, "generate", "--model", m, "--chat", "hi", "--max-tokens", "1")
		if got := bytes.Contains([]byte(errs), []byte("chat_template is not Qwen3's and is ignored")); got != tc.warn {
			t.Errorf("config %s: warned %v, want %v:\n%s", tc.config, got, tc.warn, errs)
		}
	}
}
