package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"gelo/device"
	"gelo/ir"
	"gelo/models"
	"gelo/plan"
	"gelo/runtime"
	"gelo/serve/internal/testtok"
	"gelo/tokenizer"
)

const testModel = "qwen3-tiny"

var (
	tinyOnce  sync.Once
	tinyModel *models.Model
	tinyErr   error
)

// tiny is qwen3-tiny's synthetic weights, made once for the package.
func tiny(t testing.TB) *models.Model {
	t.Helper()
	tinyOnce.Do(func() { tinyModel, tinyErr = models.Open(testModel, 1, nil) })
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyModel
}

type testConfig struct {
	opt     Options
	level   string // default: the default level
	maxT    int    // default 256
	noStart bool
	delay   time.Duration // added to every forward pass, so that a run outlasts the test's steps
	wrap    func(net.Listener) net.Listener
	liar    func(*device.LiarDevice) // puts a lying device under the engine
}

// newTestServer compiles qwen3-tiny through package plan (as gelo serve
// does), starts a server on it and serves it on loopback.
func newTestServer(t testing.TB, tc testConfig) (*Server, *httptest.Server) {
	t.Helper()
	l := tiny(t)
	o := plan.Defaults()
	if tc.level != "" {
		o = plan.Level(tc.level)
	}
	m, err := plan.Compile(l.Source, l.Config, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	var eo plan.EngineOptions
	if tc.liar != nil {
		eo.Wrap = func(d device.Device) device.Device {
			ld := device.NewLiar(d)
			tc.liar(ld)
			return ld
		}
	}
	eng, err := plan.NewEngine(eo, l.Weights, []byte("gelo serve test session key"), m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	tok, err := testtok.New()
	if err != nil {
		t.Fatal(err)
	}
	if tc.opt.ModelName == "" {
		tc.opt.ModelName = testModel
	}
	if tc.opt.Logger == nil {
		tc.opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := New(tc.opt)
	if tc.maxT == 0 {
		tc.maxT = 256
	}
	eos := append([]int{}, l.Config.EOSTokenIDs...)
	if id, ok := tok.EOSTokenID(); ok {
		eos = append(eos, id)
	}
	var be runtime.Backend = eng.Runtime
	if tc.delay > 0 {
		be = slowBackend{be, tc.delay}
	}
	if !tc.noStart {
		if err := s.Start(Model{Module: m, Backend: be, Tokenizer: tok, MaxContext: tc.maxT, EOS: eos}); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewUnstartedServer(s.Handler())
	if tc.wrap != nil {
		ts.Listener = tc.wrap(ts.Listener)
	}
	ts.Start()
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close(); s.Close() })
	return s, ts
}

// slowBackend delays every forward pass.
type slowBackend struct {
	runtime.Backend
	d time.Duration
}

func (b slowBackend) Compile(g *ir.Graph, bind map[string]int) (runtime.Executable, error) {
	e, err := b.Backend.Compile(g, bind)
	return slowExe{e, b.d}, err
}

type slowExe struct {
	runtime.Executable
	d time.Duration
}

func (e slowExe) Run() error {
	time.Sleep(e.d)
	return e.Executable.Run()
}

func oaClient(ts *httptest.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
}

// post sends a JSON body and returns the status and body.
func post(t testing.TB, url string, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// errBody decodes an OpenAI error body.
func errBody(t testing.TB, b []byte) apiError {
	t.Helper()
	var e struct {
		Error *apiError `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil {
		t.Fatalf("not an OpenAI error body: %s", b)
	}
	return *e.Error
}

// sse reads a stream's data lines (and counts ping comments) until
// [DONE] or the end.
type sseResult struct {
	data  []json.RawMessage
	pings int
	done  bool
}

func readSSE(t testing.TB, r io.Reader) sseResult {
	t.Helper()
	var res sseResult
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte(": ping")):
			res.pings++
		case bytes.Equal(line, []byte("data: [DONE]")):
			res.done = true
			return res
		case bytes.HasPrefix(line, []byte("data: ")):
			res.data = append(res.data, json.RawMessage(bytes.Clone(line[6:])))
		}
	}
	return res
}

// streamTokens runs a streaming completion with return_token_ids over
// raw HTTP and returns its tokens, text and finish reason.
func streamTokens(t testing.TB, ctx context.Context, url, body string) ([]int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return nil, "", ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("status %d: %s", resp.StatusCode, b)
		return nil, "", ""
	}
	res := readSSE(t, resp.Body)
	if !res.done {
		t.Error("stream ended without [DONE]")
	}
	var toks []int
	var text strings.Builder
	finish := ""
	for _, d := range res.data {
		var c struct {
			Choices []struct {
				Text         string  `json:"text"`
				TokenIDs     []int   `json:"token_ids"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(d, &c); err != nil {
			t.Fatalf("chunk %s: %v", d, err)
		}
		for _, ch := range c.Choices {
			toks = append(toks, ch.TokenIDs...)
			text.WriteString(ch.Text)
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	return toks, text.String(), finish
}

// waitFor polls cond for up to d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newTestTok() (*tokenizer.Tokenizer, error) { return testtok.New() }

func errorsAs(err error, target any) bool { return errors.As(err, target) }

var tokenizerSkipSpecial = tokenizer.DecodeOptions{SkipSpecialTokens: true}
