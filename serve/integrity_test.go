package serve

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"gelo/device"
	"gelo/passes"
)

// A device that lies fails its integrity probe: the request running then
// ends with an error, /health turns 503 (integrity_abort) and every later
// request is refused the same way, because the engine wiped its key.
func TestIntegrityAbortRefusesWork(t *testing.T) {
	_, ts := newTestServer(t, testConfig{level: passes.Level8x4, liar: func(l *device.LiarDevice) {
		l.Lie = device.ZeroRows
		l.At = func(call int, _ string) bool { return call >= 20 } // a decode step's product
	}})
	post := func() (int, string) {
		resp, err := http.Post(ts.URL+"/v1/completions", "application/json",
			strings.NewReader(`{"model":"qwen3-tiny","prompt":"hello","max_tokens":8}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(); code == http.StatusOK && !strings.Contains(body, "error") {
		t.Fatalf("the lie went unseen: %d %s", code, body)
	}
	resp, err := http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "integrity_abort") {
		t.Fatalf("/health after the abort: %d %s", resp.StatusCode, b)
	}
	if code, body := post(); code != http.StatusServiceUnavailable || !strings.Contains(body, "integrity_abort") {
		t.Fatalf("a request after the abort: %d %s", code, body)
	}
}
