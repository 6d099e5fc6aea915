package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	dto "github.com/prometheus/client_model/go"

	"gelo/serve/internal/testtok"
)

func chatParams(msg string, maxTokens int64) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:       testModel,
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage(msg)},
		MaxTokens:   openai.Int(maxTokens),
		Temperature: openai.Float(0),
	}
}

// TestOpenAIClient: the official client library, chat and completions,
// streamed and not; a stream gives the text and finish reason of the
// same request answered whole, and the usage chunk comes only when asked.
func TestOpenAIClient(t *testing.T) {
	_, ts := newTestServer(t, testConfig{})
	c := oaClient(ts)
	ctx := context.Background()

	models, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(models.Data) != 1 || models.Data[0].ID != testModel {
		t.Fatalf("models: %+v", models.Data)
	}

	whole, err := c.Chat.Completions.New(ctx, chatParams("hello there", 12))
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Choices) != 1 || whole.Object != "chat.completion" {
		t.Fatalf("chat: %+v", whole)
	}
	ch := whole.Choices[0]
	if ch.FinishReason != "length" && ch.FinishReason != "stop" {
		t.Fatalf("finish reason %q", ch.FinishReason)
	}
	if whole.Usage.PromptTokens == 0 || whole.Usage.CompletionTokens == 0 || whole.Usage.TotalTokens != whole.Usage.PromptTokens+whole.Usage.CompletionTokens {
		t.Fatalf("usage %+v", whole.Usage)
	}
	if ch.FinishReason == "length" && whole.Usage.CompletionTokens != 12 {
		t.Fatalf("finish length after %d tokens, max 12", whole.Usage.CompletionTokens)
	}

	for _, usage := range []bool{false, true} {
		p := chatParams("hello there", 12)
		if usage {
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		}
		st := c.Chat.Completions.NewStreaming(ctx, p)
		var text strings.Builder
		finish, sawUsage, role := "", false, ""
		for st.Next() {
			chunk := st.Current()
			if chunk.Object != "chat.completion.chunk" {
				t.Fatalf("chunk object %q", chunk.Object)
			}
			if len(chunk.Choices) == 0 {
				if !usage {
					t.Fatal("usage chunk without include_usage")
				}
				sawUsage = true
				if chunk.Usage.CompletionTokens != whole.Usage.CompletionTokens || chunk.Usage.PromptTokens != whole.Usage.PromptTokens {
					t.Fatalf("stream usage %+v, whole %+v", chunk.Usage, whole.Usage)
				}
				continue
			}
			if chunk.Choices[0].Delta.Role != "" {
				role = chunk.Choices[0].Delta.Role
			}
			text.WriteString(chunk.Choices[0].Delta.Content)
			if f := chunk.Choices[0].FinishReason; f != "" {
				finish = f
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if usage != sawUsage {
			t.Fatalf("include_usage %v, usage chunk seen %v", usage, sawUsage)
		}
		if role != "assistant" {
			t.Fatalf("first delta role %q", role)
		}
		if text.String() != ch.Message.Content || finish != ch.FinishReason {
			t.Fatalf("stream %q (%s), whole %q (%s)", text.String(), finish, ch.Message.Content, ch.FinishReason)
		}
	}

	cp := openai.CompletionNewParams{Model: testModel, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("the ")},
		MaxTokens: openai.Int(10), Temperature: openai.Float(0)}
	cw, err := c.Completions.New(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	if cw.Object != "text_completion" || len(cw.Choices) != 1 {
		t.Fatalf("completion %+v", cw)
	}
	cs := c.Completions.NewStreaming(ctx, cp)
	var text strings.Builder
	for cs.Next() {
		if ch := cs.Current().Choices; len(ch) > 0 {
			text.WriteString(ch[0].Text)
		}
	}
	if err := cs.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != cw.Choices[0].Text {
		t.Fatalf("stream %q, whole %q", text.String(), cw.Choices[0].Text)
	}

	// Logprobs: the greedy token is the most likely, and the top list is
	// a distribution's head.
	lp := chatParams("hi", 4)
	lp.Logprobs = openai.Bool(true)
	lp.TopLogprobs = openai.Int(3)
	r, err := c.Chat.Completions.New(ctx, lp)
	if err != nil {
		t.Fatal(err)
	}
	content := r.Choices[0].Logprobs.Content
	if len(content) == 0 {
		t.Fatal("no logprobs")
	}
	for _, tl := range content {
		if len(tl.TopLogprobs) != 3 {
			t.Fatalf("%d top logprobs, want 3", len(tl.TopLogprobs))
		}
		if math.Abs(tl.Logprob-tl.TopLogprobs[0].Logprob) > 1e-9 {
			t.Fatalf("greedy token logprob %v, top %v", tl.Logprob, tl.TopLogprobs[0].Logprob)
		}
		sum := 0.0
		for _, a := range tl.TopLogprobs {
			sum += math.Exp(a.Logprob)
		}
		if sum > 1+1e-9 || tl.Logprob > 0 {
			t.Fatalf("top logprobs sum to %v", sum)
		}
	}

	// n and seed: a seeded sampled run repeats; its choices differ in
	// their streams.
	np := chatParams("tell me", 8)
	np.Temperature = openai.Float(1)
	np.N = openai.Int(3)
	np.Seed = openai.Int(7)
	a, err := c.Chat.Completions.New(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Chat.Completions.New(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Choices) != 3 {
		t.Fatalf("%d choices, want 3", len(a.Choices))
	}
	for i := range a.Choices {
		if a.Choices[i].Message.Content != b.Choices[i].Message.Content || a.Choices[i].Index != int64(i) {
			t.Fatalf("choice %d differs between two runs of one seed", i)
		}
	}

	// Metrics are served and named gelo_.
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"gelo_time_to_first_token_seconds", "gelo_inter_token_latency_seconds", "gelo_e2e_request_latency_seconds",
		"gelo_requests_running", "gelo_requests_waiting", "gelo_prompt_tokens_total", "gelo_generation_tokens_total", "gelo_batch_size"} {
		if !strings.Contains(string(body), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// TestStopStrings: a stop string that spans a token boundary ends the
// text just before it, streamed or not, with finish reason stop.
func TestStopStrings(t *testing.T) {
	_, ts := newTestServer(t, testConfig{})
	body := `{"prompt":"the ","max_tokens":24,"temperature":0,"return_token_ids":true}`
	toks, text, _ := streamTokens(t, context.Background(), ts.URL, strings.Replace(body, "{", `{"stream":true,`, 1))
	if !utf8.ValidString(text) {
		t.Fatalf("streamed text is not UTF-8: %q", text)
	}
	tk, _ := newTestTok()
	// A stop string made of the end of one token and the start of the
	// next (ASCII bytes, both in the tokenizer's vocabulary).
	stop := ""
	for i := 0; i+1 < len(toks) && stop == ""; i++ {
		b1, _ := tk.TokenBytes(toks[i])
		b2, _ := tk.TokenBytes(toks[i+1])
		if len(b1) > 0 && len(b2) > 0 && b1[len(b1)-1] < 0x80 && b2[0] < 0x80 && i > 0 {
			stop = string(b1[len(b1)-1:]) + string(b2[:1])
		}
	}
	if stop == "" {
		t.Skip("no two adjacent ASCII tokens in the greedy output")
	}
	want := text[:strings.Index(text, stop)]
	sb, _ := json.Marshal(stop)
	withStop := strings.Replace(body, "{", `{"stop":[`+string(sb)+`],`, 1)
	code, raw := post(t, ts.URL+"/v1/completions", withStop)
	if code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	var rr struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	json.Unmarshal(raw, &rr)
	if rr.Choices[0].Text != want || rr.Choices[0].FinishReason != "stop" {
		t.Fatalf("with stop %q: %q (%s), want %q (stop)", stop, rr.Choices[0].Text, rr.Choices[0].FinishReason, want)
	}
	_, stext, sfinish := streamTokens(t, context.Background(), ts.URL, strings.Replace(withStop, "{", `{"stream":true,`, 1))
	if stext != want || sfinish != "stop" {
		t.Fatalf("streamed with stop %q: %q (%s), want %q", stop, stext, sfinish, want)
	}
}

// TestErrorClasses: every error class as an OpenAI error body.
func TestErrorClasses(t *testing.T) {
	_, ts := newTestServer(t, testConfig{opt: Options{MaxBodyBytes: 4096}, maxT: 64})
	long := strings.Repeat("x ", 100)
	for _, tc := range []struct {
		name, path, body string
		status           int
		typ              string
	}{
		{"bad JSON", "/v1/chat/completions", `{"messages": [`, 400, "invalid_request_error"},
		{"trailing data", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]} {}`, 400, "invalid_request_error"},
		{"invalid UTF-8", "/v1/completions", "{\"prompt\": \"\xff\xfe\"}", 400, "invalid_request_error"},
		{"wrong type", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":"many"}`, 400, "invalid_request_error"},
		{"bad temperature", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":5}`, 400, "invalid_request_error"},
		{"bad top_p", "/v1/completions", `{"prompt":"hi","top_p":1.5}`, 400, "invalid_request_error"},
		{"bad role", "/v1/chat/completions", `{"messages":[{"role":"robot","content":"hi"}]}`, 400, "invalid_request_error"},
		{"no messages", "/v1/chat/completions", `{"messages":[]}`, 400, "invalid_request_error"},
		{"token outside vocabulary", "/v1/completions", `{"prompt":[1,2,99999]}`, 400, "invalid_request_error"},
		{"n too large", "/v1/completions", `{"prompt":"hi","n":100}`, 400, "invalid_request_error"},
		{"unknown model", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, 404, "invalid_request_error"},
		{"oversize body", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 5000) + `"}`, 413, "invalid_request_error"},
		{"over the context", "/v1/completions", `{"prompt":"` + long + `"}`, 400, "invalid_request_error"},
	} {
		code, b := post(t, ts.URL+tc.path, tc.body)
		if code != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, code, tc.status, b)
			continue
		}
		e := errBody(t, b)
		if e.Type != tc.typ || e.Message == "" {
			t.Errorf("%s: error %+v", tc.name, e)
		}
		if tc.name == "over the context" && (e.NCtx != 64 || e.NPromptTokens < 64) {
			t.Errorf("over the context: n_prompt_tokens %d, n_ctx %d", e.NPromptTokens, e.NCtx)
		}
	}
	// Unknown fields are ignored.
	if code, b := post(t, ts.URL+"/v1/completions", `{"prompt":"hi","max_tokens":2,"temperature":0,"frobnicate":{"x":1},"user":"u"}`); code != 200 {
		t.Errorf("unknown fields: status %d: %s", code, b)
	}
}

// TestLoading: 503 with an error body until the model is loaded.
func TestLoading(t *testing.T) {
	s, ts := newTestServer(t, testConfig{noStart: true})
	resp, err := http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || errBody(t, b).Code != "model_loading" {
		t.Fatalf("health while loading: %d %s", resp.StatusCode, b)
	}
	if code, b := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`); code != 503 {
		t.Fatalf("chat while loading: %d %s", code, b)
	}
	_ = s
	_, ts2 := newTestServer(t, testConfig{})
	resp, err = http.Get(ts2.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health when loaded: %d", resp.StatusCode)
	}
}

// TestQueueFullAndPing: with one slot and room for one waiting request,
// a third is refused with 429 and a Retry-After; the waiting stream gets
// ": ping" comments.
func TestQueueFullAndPing(t *testing.T) {
	s, ts := newTestServer(t, testConfig{opt: Options{MaxBatch: 1, MaxQueue: 1, PingInterval: 2 * time.Millisecond}, maxT: 256, delay: 2 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	long := `{"prompt":[1,2,3],"max_tokens":250,"temperature":0,"stream":true,"stop":["\u0000\u0000\u0000"]}`
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(long))
	a, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Body.Close()
	waitFor(t, 10*time.Second, "the first request to run", func() bool { r, _ := s.Load(); return r == 1 })
	var wg sync.WaitGroup
	wg.Add(1)
	var pings int
	go func() {
		defer wg.Done()
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(long))
		b, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer b.Body.Close()
		pings = readSSE(t, b.Body).pings
	}()
	waitFor(t, 10*time.Second, "the second request to wait", func() bool { _, w := s.Load(); return w == 1 })
	code, body := post(t, ts.URL+"/v1/completions", `{"prompt":"hi"}`)
	if code != 429 || errBody(t, body).Type != "rate_limit_error" {
		t.Fatalf("third request: %d %s", code, body)
	}
	if code, ra := retryAfter(t, ts.URL+"/v1/completions", `{"prompt":"hi"}`); code != 429 || ra != "1" {
		t.Fatalf("a 429 (status %d) with Retry-After %q, want 1", code, ra)
	}
	io.Copy(io.Discard, a.Body)
	wg.Wait()
	if pings == 0 {
		t.Error("no ': ping' comment while the second stream waited")
	}
}

// TestDisconnect: a client that goes away mid-stream frees its slot at
// the next step, and another stream running beside it is unaffected.
func TestDisconnect(t *testing.T) {
	s, ts := newTestServer(t, testConfig{opt: Options{MaxBatch: 4}, maxT: 2048, delay: time.Millisecond})
	body := `{"prompt":[5,6,7],"max_tokens":40,"temperature":0,"stream":true,"return_token_ids":true}`
	alone, _, _ := streamTokens(t, context.Background(), ts.URL, body)

	ctx, cancel := context.WithCancel(context.Background())
	long := `{"prompt":[1,2,3],"max_tokens":2000,"temperature":0,"stream":true,"stop":["\u0000\u0000\u0000"]}`
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(long))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	var other []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		other, _, _ = streamTokens(t, context.Background(), ts.URL, body)
	}()
	cancel() // mid-stream
	resp.Body.Close()
	<-done
	if fmt.Sprint(other) != fmt.Sprint(alone) {
		t.Fatalf("a stream beside a disconnect gave %v, alone %v", other, alone)
	}
	waitFor(t, 10*time.Second, "the disconnected slot to be freed", func() bool { r, w := s.Load(); return r == 0 && w == 0 })
	var m dto.Metric
	s.met.tokensOut.Write(&m)
	if n := int(m.GetCounter().GetValue()) - 2*len(alone); n >= 2000 {
		t.Fatalf("the disconnected stream ran to its end (%d tokens): its slot was not freed early", n)
	} else {
		t.Logf("the disconnected stream stopped after %d of 2000 tokens", n)
	}
}

// slowListener gives accepted connections a small send buffer, so that
// a client that stops reading blocks the server's writes quickly.
type slowListener struct{ net.Listener }

func (l slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestStalledReader: a client that sends a streaming request and never
// reads does not stall the others; the write deadline drops it and frees
// its slot.
func TestStalledReader(t *testing.T) {
	s, ts := newTestServer(t, testConfig{opt: Options{MaxBatch: 4, WriteTimeout: 300 * time.Millisecond}, maxT: 512,
		wrap: func(l net.Listener) net.Listener { return slowListener{l} }})
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"prompt":[1,2,3],"max_tokens":500,"temperature":0,"stream":true,"logprobs":5,"stop":["\u0000\u0000\u0000"]}`
	fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	waitFor(t, 10*time.Second, "the stalled request to run", func() bool { r, _ := s.Load(); return r == 1 })
	start := time.Now()
	toks, _, _ := streamTokens(t, context.Background(), ts.URL, `{"prompt":[9,8],"max_tokens":30,"temperature":0,"stream":true,"return_token_ids":true}`)
	if len(toks) == 0 {
		t.Fatal("the other stream gave no tokens")
	}
	t.Logf("a stream beside a stalled reader took %v", time.Since(start))
	waitFor(t, 30*time.Second, "the stalled reader's slot to be freed", func() bool { r, _ := s.Load(); return r == 0 })
	// The write deadline cut the stalled stream: the server closed the
	// connection before [DONE].
	time.Sleep(500 * time.Millisecond)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("reading the stalled connection: %v (the server did not close it)", err)
	}
	if strings.Contains(string(got), "[DONE]") {
		t.Fatalf("the stalled stream was written to the end (%d bytes): the write deadline did not cut it", len(got))
	}
}

// TestConcurrentGreedy: 32 concurrent greedy streams, through 8 slots (so
// requests join and leave a running batch, its width changes, and prompts
// are prefilled in chunks of 6 between decode steps), each give exactly
// the tokens the same request gives alone, and alone on a server that
// prefills every prompt whole.
func TestConcurrentGreedy(t *testing.T) {
	_, ts := newTestServer(t, testConfig{opt: Options{MaxBatch: 8, PrefillChunk: 6}})
	_, whole := newTestServer(t, testConfig{opt: Options{MaxBatch: 8}})
	const n = 32
	bodies := make([]string, n)
	want := make([][]int, n)
	for i := range bodies {
		prompt := make([]string, 1+(i*5)%23)
		for j := range prompt {
			prompt[j] = fmt.Sprint((i*31 + j*7) % 250)
		}
		bodies[i] = fmt.Sprintf(`{"prompt":[%s],"max_tokens":%d,"temperature":0,"stream":true,"return_token_ids":true}`, strings.Join(prompt, ","), 8+i%9)
		want[i], _, _ = streamTokens(t, context.Background(), ts.URL, bodies[i])
		if w, _, _ := streamTokens(t, context.Background(), whole.URL, bodies[i]); fmt.Sprint(w) != fmt.Sprint(want[i]) {
			t.Fatalf("request %d: prefilled in chunks %v, whole %v", i, want[i], w)
		}
	}
	got := make([][]int, n)
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, _ = streamTokens(t, context.Background(), ts.URL, bodies[i])
		}()
	}
	wg.Wait()
	for i := range got {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) || len(got[i]) == 0 {
			t.Errorf("request %d: concurrent %v, alone %v", i, got[i], want[i])
		}
	}
}

// TestMalformedStreams: the official client sees a clean error for a bad
// request, not a broken stream.
func TestMalformedStreams(t *testing.T) {
	_, ts := newTestServer(t, testConfig{})
	c := oaClient(ts)
	p := chatParams("hi", 4)
	st := c.Chat.Completions.NewStreaming(context.Background(), p, option.WithJSONSet("temperature", 9))
	for st.Next() {
	}
	var ae *openai.Error
	if err := st.Err(); err == nil || !errorsAs(err, &ae) || ae.StatusCode != 400 {
		t.Fatalf("stream with a bad temperature: %v", st.Err())
	}
}

// TestUTF8Holdback: a character whose bytes come in several tokens is
// streamed whole: the streamed text equals the decode of all the tokens
// at once (a split character would read as U+FFFD pieces instead).
func TestUTF8Holdback(t *testing.T) {
	_, ts := newTestServer(t, testConfig{opt: Options{MaxBatch: 4}})
	tk, _ := newTestTok()
	multi := 0
	for i := range 6 {
		body := fmt.Sprintf(`{"prompt":[%d,%d,%d],"max_tokens":120,"temperature":1,"seed":%d,"stream":true,"return_token_ids":true}`, 10+i, 40+i, 70+i, i)
		toks, text, _ := streamTokens(t, context.Background(), ts.URL, body)
		var ids []int
		for _, id := range toks {
			if id != 2 { // qwen3-tiny's EOS, which the text leaves out
				ids = append(ids, id)
			}
		}
		want := tk.DecodeWithOptions(ids, tokenizerSkipSpecial)
		if text != want {
			t.Fatalf("prompt %d: streamed %q, decoded at once %q", i, text, want)
		}
		for _, r := range text {
			if r >= 0x80 && r != utf8.RuneError {
				multi++
			}
		}
	}
	if multi == 0 {
		t.Skip("no multi-byte character in the greedy outputs")
	}
	t.Logf("%d multi-byte characters streamed whole", multi)
}

// TestLongPromptRefusedByLength: a text prompt whose length alone bounds
// its tokens past the context is refused as context_length_exceeded
// before it is tokenized ("at least": the bound, not a count), on both
// endpoints.
func TestLongPromptRefusedByLength(t *testing.T) {
	_, ts := newTestServer(t, testConfig{maxT: 64, opt: Options{MaxBodyBytes: 1 << 22}})
	tok, err := testtok.New()
	if err != nil {
		t.Fatal(err)
	}
	text := "ab "
	for tok.MinTokens(text) < 64 {
		text += text
	}
	for path, body := range map[string]string{
		"/v1/completions":      `{"prompt":"` + text + `"}`,
		"/v1/chat/completions": `{"messages":[{"role":"system","content":"` + text[:len(text)/2] + `"},{"role":"user","content":"` + text[len(text)/2:] + `"}]}`,
	} {
		code, b := post(t, ts.URL+path, body)
		e := errBody(t, b)
		if code != 400 || e.Code != "context_length_exceeded" || !strings.Contains(e.Message, "at least") || e.NCtx != 64 {
			t.Errorf("%s: %d %+v, want 400 context_length_exceeded by the length bound", path, code, e)
		}
	}
}
