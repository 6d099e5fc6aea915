package serve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// trackListener counts the server's open connections: a descriptor the
// server still holds is one it has not closed.
type trackListener struct {
	net.Listener
	open atomic.Int64
}

func (l *trackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.open.Add(1)
	return &trackedConn{Conn: c, l: l}, nil
}

type trackedConn struct {
	net.Conn
	l    *trackListener
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// stallBody opens a connection and sends a request whose body stops
// after its first 10 bytes.
func stallBody(t testing.TB, addr, path string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"prompt":[1,2,3],"max_tokens":4,"temperature":0,"stream":false,"x":1}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body[:10])
	return conn
}

// answerOf reads what the server sent on conn until it closes it, and
// fails when it does not within d.
func answerOf(t testing.TB, conn net.Conn, d time.Duration) (status int, closed bool) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(d))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp.StatusCode, err == io.EOF
}

// TestStalledBody: a request whose body stops part-way is answered 408
// within the read timeout and its connection closed (the server's
// descriptor released), on every endpoint, whether or not its handler
// reads the body; the 408 is what the request counter counts.
func TestStalledBody(t *testing.T) {
	var tl *trackListener
	s, ts := newTestServer(t, testConfig{opt: Options{ReadTimeout: 300 * time.Millisecond}, maxT: 64,
		wrap: func(l net.Listener) net.Listener { tl = &trackListener{Listener: l}; return tl }})
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/v1/completions", http.StatusRequestTimeout},
		{"/v1/chat/completions", http.StatusRequestTimeout},
		{"/health", http.StatusMethodNotAllowed}, // a handler that never reads the body
		{"/nowhere", http.StatusNotFound},
	} {
		start := time.Now()
		conn := stallBody(t, ts.Listener.Addr().String(), tc.path)
		status, closed := answerOf(t, conn, 5*time.Second)
		conn.Close()
		if status != tc.status || !closed {
			t.Errorf("%s: a stalled body got status %d, connection closed %v after %v; want %d and closed", tc.path, status, closed, time.Since(start), tc.status)
		}
	}
	waitFor(t, 5*time.Second, "the server to close every stalled connection", func() bool { return tl.open.Load() == 0 })
	if got := counterValue(t, s, "completions", "408"); got != 1 {
		t.Errorf("completions 408 counted %v times, want 1", got)
	}
	if got := counterValue(t, s, "completions", "400"); got != 0 {
		t.Errorf("completions 400 counted %v times, want 0 (none was sent)", got)
	}
}

// TestManyStalledBodies: hundreds of stalled bodies at once leave the
// server serving others, and every one is answered and closed.
func TestManyStalledBodies(t *testing.T) {
	const n = 300
	var tl *trackListener
	_, ts := newTestServer(t, testConfig{opt: Options{ReadTimeout: 2 * time.Second}, maxT: 64,
		wrap: func(l net.Listener) net.Listener { tl = &trackListener{Listener: l}; return tl }})
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = stallBody(t, ts.Listener.Addr().String(), "/v1/completions")
		defer conns[i].Close()
	}
	waitFor(t, 5*time.Second, "the server to accept every stalled client", func() bool { return tl.open.Load() >= n })
	start := time.Now()
	code, b := post(t, ts.URL+"/v1/completions", `{"prompt":[1,2,3],"max_tokens":4,"temperature":0}`)
	if code != 200 {
		t.Fatalf("a request beside %d stalled bodies: status %d: %s", n, code, b)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a request beside %d stalled bodies took %v", n, d)
	}
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			if status, closed := answerOf(t, c, 10*time.Second); status != http.StatusRequestTimeout || !closed {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%d: %d closed %v", i, status, closed))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("%d of %d stalled clients not answered 408 and closed: %s", len(bad), n, strings.Join(bad[:min(len(bad), 5)], "; "))
	}
	waitFor(t, 10*time.Second, "the server to close every stalled connection", func() bool { return tl.open.Load() <= 1 }) // the post's idle connection may stay
}

// counterValue reads gelo_http_requests_total{endpoint, code}.
func counterValue(t testing.TB, s *Server, endpoint, code string) float64 {
	t.Helper()
	var m dto.Metric
	if err := s.met.requests.WithLabelValues(endpoint, code).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
