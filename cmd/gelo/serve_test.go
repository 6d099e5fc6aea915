package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/plan/planfile"
	"gelo/serve/client"
)

// syncBuffer is a bytes.Buffer safe for the server's log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeVerb: gelo serve --simulated on qwen3-tiny, then gelo chat's
// client attests it and completes; the JSON logs parse, name the plan and
// carry no prompt text.
func TestServeVerb(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveMain(ctx, []string{"--model", "qwen3-tiny", "--listen", "127.0.0.1:0", "--simulated", "--max-batch", "4",
			"--max-context", "128", "--log-format", "json"}, &logs, func(a string) { addr <- a })
	}()
	var url string
	select {
	case url = <-addr:
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}
	if _, err := client.Dial(ctx, url, client.Options{}); err == nil {
		t.Fatal("simulated evidence accepted without AllowSimulated")
	}
	opt := client.Options{MinSecurity: passes.DefaultLevel}
	opt.Policy.AllowSimulated = true
	c, err := client.Dial(ctx, url, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Security != passes.DefaultLevel {
		t.Fatalf("attested level %q, want the default %s", c.Security, passes.DefaultLevel)
	}
	if _, err := c.Complete(ctx, []int{1, 2, 3}, client.ChatOptions{MaxTokens: 3}, nil); err != nil {
		t.Fatal(err)
	}
	const secret = "the-secret-prompt-text"
	if _, err := c.Chat(ctx, []client.Message{{Role: "user", Content: secret}}, client.ChatOptions{MaxTokens: 2}, nil); err == nil {
		t.Fatal("chat on a model without a tokenizer: no error")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if strings.Contains(out, secret) {
		t.Fatal("the log holds prompt text")
	}
	sawServing := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			continue // the identity line of a sealed load is plain text
		}
		if rec["msg"] == "serving" && rec["plan_digest"] != "" && rec["attestation"] == "SIMULATED" {
			sawServing = true
		}
	}
	if !sawServing {
		t.Fatalf("no JSON 'serving' record naming the plan:\n%s", out)
	}
}

// TestServeUsage: bad serve and chat flags are usage errors (exit 2)
// before anything loads.
func TestServeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--max-batch", "0"},
		{"serve", "--log-format", "xml"},
		{"serve", "--prefill-chunk", "0"},
		{"serve", "--drain-timeout", "-1s"},
		{"serve", "--plain-http", "--listen", "0.0.0.0:8000"},
		{"serve", "--plain-http", "--simulated", "--listen", "127.0.0.1:0"},
		{"serve", "--plan", "x.gelo", "--mask", "none"},
		{"serve", "stray"},
		{"chat"},
		{"chat", "--server", "https://x", "--min-security", "nope"},
		{"chat", "--server", "https://x", "--plan-digest", "12"},
		{"chat", "--server", "https://x", "--min-tcb", "snp=x"},
	} {
		var stderr bytes.Buffer
		if code := run(args, &bytes.Buffer{}, &stderr); code != 2 {
			t.Errorf("gelo %s: exit %d, want 2: %s", strings.Join(args, " "), code, stderr.String())
		}
	}
}

// startServe runs serveMain with args until the test ends and returns
// its URL.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serveMain(ctx, args, &logs, func(a string) { addr <- a }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case url := <-addr:
		return url
	case err := <-done:
		done <- err
		t.Fatalf("serve: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}
	return ""
}

// TestServeSealedPlan: a sealed plan is served under its own digest and
// level, which the client checks; plain HTTP serves loopback without
// attestation.
func TestServeSealedPlan(t *testing.T) {
	p := filepath.Join(t.TempDir(), "p.gelo")
	must(t, "compile", "--security", "none", "--out", p)
	pf, err := planfile.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	url := startServe(t, "--plan", p, "--listen", "127.0.0.1:0", "--simulated", "--max-context", "64")
	ctx := context.Background()
	opt := client.Options{PlanDigest: pf.Digest()}
	opt.Policy.AllowSimulated = true
	c, err := client.Dial(ctx, url, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Security != "none" {
		t.Fatalf("attested level %q, want none", c.Security)
	}
	if _, err := c.Complete(ctx, []int{4, 5}, client.ChatOptions{MaxTokens: 2}, nil); err != nil {
		t.Fatal(err)
	}
	opt.MinSecurity = "exact"
	if _, err := client.Dial(ctx, url, opt); err == nil {
		t.Fatal("a none plan accepted under --min-security exact")
	}

	plain := startServe(t, "--model", "qwen3-tiny", "--plain-http", "--listen", "127.0.0.1:0", "--max-context", "64")
	pc, err := client.Dial(ctx, plain, client.Options{Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.Complete(ctx, []int{4, 5}, client.ChatOptions{MaxTokens: 2}, nil); err != nil {
		t.Fatal(err)
	}
}

// tinyWithTokenizer writes qwen3-tiny's synthetic weights with a
// byte-level tokenizer beside them, so that gelo serve --model takes chat.
func tinyWithTokenizer(t *testing.T) string {
	t.Helper()
	m := filepath.Join(t.TempDir(), "m")
	cfg, _ := models.Variant("qwen3-tiny")
	if err := models.WriteSynthetic(m, cfg, 1, "bf16", nil); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tokenizer.json": byteTokenizer(), "tokenizer_config.json": []byte(`{"eos_token":"<|im_end|>"}`)} {
		if err := os.WriteFile(filepath.Join(m, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestChatVerbTurns: gelo chat holds a conversation of five turns read
// from standard input, over simulated TLS and over plain HTTP. Before,
// the second turn failed with "the attested connection is closed".
func TestChatVerbTurns(t *testing.T) {
	m := tinyWithTokenizer(t)
	for _, tc := range []struct {
		name        string
		serve, chat []string
	}{
		{"simulated TLS", []string{"--simulated"}, []string{"--allow-simulated"}},
		{"plain HTTP", []string{"--plain-http"}, []string{"--plain-http"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := startServe(t, append([]string{"--model", m, "--listen", "127.0.0.1:0", "--max-context", "512"}, tc.serve...)...)
			var stdout, stderr bytes.Buffer
			args := append([]string{"--server", url, "--max-tokens", "4"}, tc.chat...)
			if err := chatMain(context.Background(), args, strings.NewReader("hi\nhi\nhi\nhi\nhi\n"), &stdout, &stderr); err != nil {
				t.Fatalf("gelo chat: %v\n%s", err, stderr.String())
			}
			if n := strings.Count(stderr.String(), "finish reason"); n != 5 {
				t.Fatalf("gelo chat answered %d of 5 turns:\n%s", n, stderr.String())
			}
		})
	}
}

// TestServeDrainVerb: gelo serve stopped (SIGTERM's context) with a
// stream running past --drain-timeout ends that stream with a
// shutting_down error event and [DONE] when the timeout passes (not after
// a fixed 5 s, as before the flag), and returns without error.
func TestServeDrainVerb(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveMain(ctx, []string{"--model", "qwen3-tiny", "--listen", "127.0.0.1:0", "--plain-http", "--max-context", "4096",
			"--drain-timeout", "0s"}, &logs, func(a string) { addr <- a })
	}()
	var url string
	select {
	case url = <-addr:
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}
	body := `{"prompt":[1,2,3],"max_tokens":4000,"temperature":0,"stream":true,"stop":["\u0000\u0000\u0000"]}`
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var last string
	var stopped time.Time
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		if last == "" {
			stopped = time.Now()
			cancel() // SIGTERM, once the stream runs
		}
		if line == "data: [DONE]" {
			break
		}
		last = line
	}
	if !strings.Contains(last, `"code":"shutting_down"`) {
		t.Fatalf("the stream cut at the drain timeout ended with %q, want a shutting_down error event", last)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if d := time.Since(stopped); d > 3*time.Second {
		t.Fatalf("gelo serve took %v to stop with --drain-timeout 0s", d)
	}
}

// TestServeBuiltinChat: gelo serve with no model flag serves the built-in
// trained model under its name and answers a chat message with text
// (formatted by Qwen3's ChatML template, which its tokenizer carries, so
// none is ignored) that ends at max_tokens or an end token; gelo chat
// against it holds a conversation of two turns. Over simulated TLS and
// over plain HTTP.
func TestServeBuiltinChat(t *testing.T) {
	tok, err := plan.ModelTokenizer("", &models.Model{Source: models.Source{Builtin: models.BuiltinModel}})
	if err != nil || tok.Tok == nil || tok.Tok.IgnoredChatTemplate() {
		t.Fatalf("the built-in tokenizer: %v (nil %v); its chat template must be Qwen3's", err, tok.Tok == nil)
	}
	words := regexp.MustCompile(`[A-Za-z]{2,}`)
	for _, tc := range []struct {
		name        string
		serve, chat []string
		opt         client.Options
	}{
		{"simulated TLS", []string{"--simulated"}, []string{"--allow-simulated"}, client.Options{}},
		{"plain HTTP", []string{"--plain-http"}, []string{"--plain-http"}, client.Options{Plain: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := startServe(t, append([]string{"--listen", "127.0.0.1:0", "--max-context", "256"}, tc.serve...)...)
			ctx := context.Background()
			tc.opt.Policy.AllowSimulated = true
			c, err := client.Dial(ctx, url, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var reply strings.Builder
			zero := 0.0
			finish, err := c.Chat(ctx, []client.Message{{Role: "user", Content: "Who made the heaven and the earth?"}},
				client.ChatOptions{MaxTokens: 24, Temperature: &zero}, func(s string) error { reply.WriteString(s); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if (finish != "length" && finish != "stop") || len(words.FindAllString(reply.String(), -1)) < 3 {
				t.Fatalf("finish %q, reply %q: want words, ended by length or stop", finish, reply.String())
			}
			if strings.Contains(reply.String(), "<|im_") {
				t.Errorf("the reply carries a control token: %q", reply.String())
			}
			resp, err := c.HTTPClient().Get(c.BaseURL() + "/v1/models")
			if err != nil {
				t.Fatal(err)
			}
			var list struct{ Data []struct{ ID string } }
			err = json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			if err != nil || len(list.Data) != 1 || list.Data[0].ID != models.BuiltinModel {
				t.Errorf("/v1/models: %+v, %v; want %s", list, err, models.BuiltinModel)
			}

			var stdout, stderr bytes.Buffer
			args := append([]string{"--server", url, "--max-tokens", "12"}, tc.chat...)
			if err := chatMain(ctx, args, strings.NewReader("Who made the heaven?\nWhat is his name?\n"), &stdout, &stderr); err != nil {
				t.Fatalf("gelo chat: %v\n%s", err, stderr.String())
			}
			if n := strings.Count(stderr.String(), "finish reason"); n != 2 {
				t.Fatalf("gelo chat answered %d of 2 turns:\n%s", n, stderr.String())
			}
			if lines := strings.Split(strings.TrimSpace(stdout.String()), "\n"); len(lines) < 2 || len(words.FindAllString(stdout.String(), -1)) < 4 {
				t.Errorf("gelo chat printed %q: want two replies in words", stdout.String())
			}
		})
	}
}
