package serve

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestShutdownDrain: Shutdown stops accepting connections; a stream that
// finishes within the drain timeout ends normally; a stream still
// running at the timeout ends with a shutting_down error event and
// [DONE], and a non-streaming request with a 503 shutting_down, not a
// 500 or a cut connection.
func TestShutdownDrain(t *testing.T) {
	s, ts := newTestServer(t, testConfig{opt: Options{MaxBatch: 4}, maxT: 2048, delay: 5 * time.Millisecond})
	const short = `{"prompt":[5,6,7],"max_tokens":20,"temperature":0,"stream":true,"return_token_ids":true}`
	const long = `{"prompt":[1,2,3],"max_tokens":2000,"temperature":0,"stream":true,"stop":["\u0000\u0000\u0000"]}`
	type result struct {
		status int
		sse    sseResult
	}
	stream := func(body string) <-chan result {
		out := make(chan result, 1)
		go func() {
			resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				out <- result{}
				return
			}
			defer resp.Body.Close()
			out <- result{resp.StatusCode, readSSE(t, resp.Body)}
		}()
		return out
	}
	shortDone, longDone := stream(short), stream(long)
	whole := make(chan struct {
		code int
		b    []byte
	}, 1)
	go func() {
		code, b := post(t, ts.URL+"/v1/completions", strings.Replace(long, `"stream":true`, `"stream":false`, 1))
		whole <- struct {
			code int
			b    []byte
		}{code, b}
	}()
	waitFor(t, 10*time.Second, "three requests to run", func() bool { r, _ := s.Load(); return r == 3 })

	const drain = 1500 * time.Millisecond
	start := time.Now()
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ts.Config, drain) }()
	waitFor(t, 5*time.Second, "the listener to close", func() bool {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})

	sr := <-shortDone
	if sr.status != 200 || !sr.sse.done || hasError(sr.sse) {
		t.Errorf("a stream within the drain timeout: status %d, [DONE] %v, error event %v", sr.status, sr.sse.done, hasError(sr.sse))
	}
	lr := <-longDone
	if lr.status != 200 || !lr.sse.done {
		t.Fatalf("a stream past the drain timeout: status %d, [DONE] %v", lr.status, lr.sse.done)
	}
	last := lr.sse.data[len(lr.sse.data)-1]
	var ev struct{ Error *apiError }
	if json.Unmarshal(last, &ev) != nil || ev.Error == nil || ev.Error.Code != "shutting_down" || ev.Error.Type != "unavailable_error" {
		t.Errorf("a stream past the drain timeout ended with %s, want a shutting_down error event", last)
	}
	w := <-whole
	if w.code != http.StatusServiceUnavailable || errBody(t, w.b).Code != "shutting_down" {
		t.Errorf("a whole request past the drain timeout: %d %s, want 503 shutting_down", w.code, w.b)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if d := time.Since(start); d < drain || d > drain+5*time.Second {
		t.Errorf("Shutdown took %v with a drain timeout of %v", d, drain)
	}
}

// hasError tells whether a stream carried an error event.
func hasError(r sseResult) bool {
	for _, d := range r.data {
		var ev struct{ Error *apiError }
		if json.Unmarshal(d, &ev) == nil && ev.Error != nil {
			return true
		}
	}
	return false
}

// TestShutdownRefusesNew: once Shutdown has begun, a request that still
// reaches the scheduler is answered 503 shutting_down with a Retry-After.
func TestShutdownRefusesNew(t *testing.T) {
	s, ts := newTestServer(t, testConfig{maxT: 64})
	s.ready.Load().sched.close() // what Shutdown does first
	code, ra := retryAfter(t, ts.URL+"/v1/completions", `{"prompt":[1,2],"max_tokens":2}`)
	if code != http.StatusServiceUnavailable || ra == "" {
		t.Fatalf("a request during shutdown: status %d, Retry-After %q; want 503 with Retry-After", code, ra)
	}
}
