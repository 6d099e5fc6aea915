package serve

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestUnsupportedFields: a field gelo does not implement is refused with
// a 400 that names it, not answered 200 as if it had been honoured; its
// no-op values (null, [], false, ...) are accepted.
func TestUnsupportedFields(t *testing.T) {
	_, ts := newTestServer(t, testConfig{maxT: 64})
	chat := func(extra string) string {
		return `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"temperature":0,` + extra + `}`
	}
	comp := func(extra string) string {
		return `{"prompt":"hi","max_tokens":2,"temperature":0,` + extra + `}`
	}
	const chatURL, compURL = "/v1/chat/completions", "/v1/completions"
	for _, tc := range []struct {
		path, body, field string // field "": accepted
	}{
		{chatURL, chat(`"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]`), "tools"},
		{chatURL, chat(`"tool_choice":"required"`), "tool_choice"},
		{chatURL, chat(`"functions":[{"name":"f"}]`), "functions"},
		{chatURL, chat(`"function_call":{"name":"f"}`), "function_call"},
		{chatURL, chat(`"response_format":{"type":"json_object"}`), "response_format"},
		{chatURL, chat(`"logit_bias":{"17":100}`), "logit_bias"},
		{compURL, comp(`"logit_bias":{"17":-100}`), "logit_bias"},
		{compURL, comp(`"echo":true`), "echo"},
		{compURL, comp(`"suffix":" the end"`), "suffix"},
		{compURL, comp(`"best_of":3`), "best_of"},
		{chatURL, chat(`"tools":[],"tool_choice":"none","response_format":{ "type" : "text" },"logit_bias":{},"functions":null`), ""},
		{compURL, comp(`"echo":false,"suffix":"","best_of":2,"n":2,"logit_bias":null`), ""},
	} {
		code, b := post(t, ts.URL+tc.path, tc.body)
		if tc.field == "" {
			if code != 200 {
				t.Errorf("%s %s: status %d, want 200 (no-op values): %s", tc.path, tc.body, code, b)
			}
			continue
		}
		if code != 400 {
			t.Errorf("%s %s: status %d, want 400: %s", tc.path, tc.field, code, b)
			continue
		}
		e := errBody(t, b)
		if e.Param != tc.field || e.Code != "unsupported_parameter" || !strings.Contains(e.Message, tc.field) {
			t.Errorf("%s %s: error %+v, want param %q, code unsupported_parameter", tc.path, tc.field, e, tc.field)
		}
	}
}

// TestChoicesOverQueue: n above what the queue can ever hold is refused
// with 400 naming the limit (a 429 would tell the client to retry what
// can never be admitted), even on an idle server; n within it runs.
func TestChoicesOverQueue(t *testing.T) {
	_, ts := newTestServer(t, testConfig{opt: Options{MaxBatch: 2, MaxQueue: 8}, maxT: 64})
	for _, tc := range []struct {
		n, status int
	}{{8, 200}, {9, 400}, {16, 400}} {
		code, b := post(t, ts.URL+"/v1/completions", fmt.Sprintf(`{"prompt":[1,2],"max_tokens":2,"n":%d}`, tc.n))
		if code != tc.status {
			t.Errorf("n=%d on an idle server: status %d, want %d: %s", tc.n, code, tc.status, b)
			continue
		}
		if code == 400 {
			if e := errBody(t, b); e.Param != "n" || !strings.Contains(e.Message, "8") {
				t.Errorf("n=%d: error %+v, want param n and the limit 8 named", tc.n, e)
			}
		}
	}
}

// retryAfter posts body and returns the status and Retry-After header.
func retryAfter(t testing.TB, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}
