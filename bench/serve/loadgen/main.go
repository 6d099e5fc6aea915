// Command loadgen is a loopback load run against an OpenAI-compatible
// server (gelo serve, or llama-server on the same file): for each client
// count, that many concurrent clients stream greedy completions, while
// slow readers and stalled request bodies are held open beside them. It
// prints one line a client count: requests, generated tok/s, client-side
// TTFT p50/p95, errors, the server's peak RSS during the level; then how
// the stalled bodies were answered. Not part of CI: see ../README.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type config struct {
	url       string
	model     string
	clients   []int
	perClient int
	promptLen int
	maxTokens int
	vocab     int
	slow      int
	slowDelay time.Duration
	stalled   int
	pid       int
}

func main() {
	var c config
	var clients string
	flag.StringVar(&c.url, "url", "http://127.0.0.1:8080", "the server's base URL (plain HTTP, loopback)")
	flag.StringVar(&c.model, "model", "", "the model field of each request (\"\": left out)")
	flag.StringVar(&clients, "clients", "1,8,32", "concurrent clients of each level, comma separated")
	flag.IntVar(&c.perClient, "requests", 2, "requests a client sends per level (at least 8 in all)")
	flag.IntVar(&c.promptLen, "prompt-len", 64, "prompt length in tokens (random ids)")
	flag.IntVar(&c.maxTokens, "max-tokens", 64, "new tokens per request")
	flag.IntVar(&c.vocab, "vocab", 256, "prompt ids are drawn from [0, vocab)")
	flag.IntVar(&c.slow, "slow", 2, "slow readers streaming beside each level (not counted in its figures)")
	flag.DurationVar(&c.slowDelay, "slow-delay", 200*time.Millisecond, "a slow reader's pause between two reads of 64 bytes")
	flag.IntVar(&c.stalled, "stalled", 50, "connections that send 10 bytes of a body and then nothing, held for the whole run")
	flag.IntVar(&c.pid, "pid", 0, "the server's process id, for its RSS (0: not measured)")
	flag.Parse()
	for _, f := range strings.Split(clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "loadgen: --clients %q: want positive integers\n", clients)
			os.Exit(2)
		}
		c.clients = append(c.clients, n)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	u, err := url.Parse(c.url)
	if err != nil || u.Scheme != "http" {
		return fmt.Errorf("--url %q: want http://host:port", c.url)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	body := func(maxTokens int) string {
		ids := make([]string, c.promptLen)
		for i := range ids {
			ids[i] = strconv.Itoa(rng.IntN(c.vocab))
		}
		m := ""
		if c.model != "" {
			m = fmt.Sprintf(`"model":%q,`, c.model)
		}
		return fmt.Sprintf(`{%s"prompt":[%s],"max_tokens":%d,"temperature":0,"stream":true,"stream_options":{"include_usage":true},"return_token_ids":true}`,
			m, strings.Join(ids, ","), maxTokens)
	}
	if _, err := stream(c.url, body(c.maxTokens), 0); err != nil { // warm up
		return fmt.Errorf("warm-up request: %w", err)
	}
	st := openStalled(u.Host, c.stalled, body(c.maxTokens))
	fmt.Printf("loadgen: %s, %d prompt tokens + %d new, %d slow readers (%v a read) beside each level, %d stalled bodies held open\n",
		c.url, c.promptLen, c.maxTokens, c.slow, c.slowDelay, st.opened)
	fmt.Printf("%7s %8s %10s %10s %10s %7s %9s %12s\n", "clients", "requests", "gen tok/s", "TTFT p50", "TTFT p95", "errors", "slow ok", "peak RSS MiB")
	for _, n := range c.clients {
		bodies := make([]string, max(8, n*c.perClient))
		for i := range bodies {
			bodies[i] = body(c.maxTokens)
		}
		slowBodies := make([]string, c.slow)
		for i := range slowBodies {
			slowBodies[i] = body(c.maxTokens)
		}
		level(c, n, bodies, slowBodies)
	}
	client.CloseIdleConnections() // so that the descriptors counted are the server's own
	time.Sleep(200 * time.Millisecond)
	st.report(c.pid)
	return nil
}

// client keeps a connection per concurrent client between requests.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

// result is one streamed request, as its client saw it.
type result struct {
	ttft   time.Duration
	tokens int
}

// level runs bodies through n clients, slow readers beside them, and
// prints its line.
func level(c config, n int, bodies, slowBodies []string) {
	rss := sampleRSS(c.pid)
	var slowOK atomic.Int32
	var slowWG sync.WaitGroup
	for _, b := range slowBodies {
		slowWG.Go(func() {
			if _, err := stream(c.url, b, c.slowDelay); err == nil {
				slowOK.Add(1)
			}
		})
	}
	res := make([]result, len(bodies))
	errs := make([]error, len(bodies))
	next := make(chan int, len(bodies))
	for i := range bodies {
		next <- i
	}
	close(next)
	start := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := range next {
				res[i], errs[i] = stream(c.url, bodies[i], 0)
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	slowWG.Wait()
	peak := rss()
	var ttft []time.Duration
	total, nerr := 0, 0
	for i := range res {
		if errs[i] != nil {
			nerr++
			if nerr == 1 {
				fmt.Fprintf(os.Stderr, "loadgen: %d clients: first error: %v\n", n, errs[i])
			}
			continue
		}
		ttft = append(ttft, res[i].ttft)
		total += res[i].tokens
	}
	slices.Sort(ttft)
	pct := func(p int) string {
		if len(ttft) == 0 {
			return "-"
		}
		return ttft[min(len(ttft)-1, (len(ttft)*p+99)/100-1)].Round(time.Millisecond).String()
	}
	rssText := "-"
	if peak > 0 {
		rssText = fmt.Sprintf("%.0f", float64(peak)/(1<<20))
	}
	fmt.Printf("%7d %8d %10.1f %10s %10s %7d %6d/%-2d %12s\n", n, len(bodies), float64(total)/wall.Seconds(), pct(50), pct(95), nerr,
		slowOK.Load(), len(slowBodies), rssText)
}

// stream sends one streaming completion and reads it to [DONE], pausing
// delay between two reads of 64 bytes (a slow reader) when delay > 0. Its
// tokens are the usage chunk's completion_tokens, or the chunks with text
// or token ids where the server sends no usage; its TTFT is the time to
// the first such chunk.
func stream(base, body string, delay time.Duration) (result, error) {
	start := time.Now()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", base+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<12))
		return result{}, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var r io.Reader = resp.Body
	if delay > 0 {
		r = &slowReader{r: resp.Body, d: delay}
	}
	var res result
	chunks, usage := 0, -1
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		if bytes.Equal(line, []byte("data: [DONE]")) {
			break
		}
		var ch struct {
			Choices []struct {
				Text     string `json:"text"`
				TokenIDs []int  `json:"token_ids"` // gelo's (and vLLM's) return_token_ids
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line[6:], &ch); err != nil {
			return res, fmt.Errorf("bad chunk: %w", err)
		}
		if ch.Error != nil {
			return res, fmt.Errorf("error event: %s", ch.Error.Message)
		}
		if ch.Usage != nil {
			usage = ch.Usage.CompletionTokens
		}
		for _, c := range ch.Choices {
			if c.Text != "" || len(c.TokenIDs) > 0 {
				if chunks == 0 {
					res.ttft = time.Since(start)
				}
				chunks++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	res.tokens = chunks
	if usage >= 0 {
		res.tokens = usage
	}
	if res.tokens == 0 {
		return res, errors.New("no token streamed")
	}
	return res, nil
}

// slowReader reads at most 64 bytes at a time, pausing before each read.
type slowReader struct {
	r io.Reader
	d time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(s.d)
	return s.r.Read(p[:min(len(p), 64)])
}

// stalled are connections that sent part of a request body and stopped.
type stalled struct {
	opened int
	start  time.Time
	mu     sync.Mutex
	status map[string]int // what each got: "408 after 30s", "open", ...
	wg     sync.WaitGroup
}

// openStalled opens n connections, each sending headers and 10 bytes of
// body, and watches each for the server's answer.
func openStalled(host string, n int, body string) *stalled {
	st := &stalled{start: time.Now(), status: map[string]int{}}
	for range n {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			st.note("dial failed: " + err.Error())
			continue
		}
		fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body[:10])
		st.opened++
		st.wg.Go(func() {
			defer conn.Close()
			conn.SetReadDeadline(time.Now().Add(10 * time.Minute))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				st.note(fmt.Sprintf("no answer (%v)", errors.Unwrap(err)))
				return
			}
			io.Copy(io.Discard, resp.Body)
			_, err = br.ReadByte()
			how := "then left open"
			if err == io.EOF {
				how = "then closed"
			}
			st.note(fmt.Sprintf("%d %s, within %v", resp.StatusCode, how, time.Since(st.start).Round(10*time.Second)))
		})
	}
	return st
}

func (st *stalled) note(s string) {
	st.mu.Lock()
	st.status[s]++
	st.mu.Unlock()
}

// report waits (up to 2 minutes after the last level) for the stalled
// connections' answers and prints them with the server's file
// descriptors.
func (st *stalled) report(pid int) {
	done := make(chan struct{})
	go func() { st.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		st.note("still waiting after the run + 2 min")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	keys := make([]string, 0, len(st.status))
	for k := range st.status {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("stalled bodies: %d: %s\n", st.status[k], k)
	}
	if pid > 0 {
		if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
			fmt.Printf("server file descriptors after the run: %d\n", len(fds))
		}
	}
}

// sampleRSS samples the resident set of pid every 50 ms until the
// returned function is called, which returns the peak in bytes (0 when
// pid is 0 or unreadable).
func sampleRSS(pid int) func() int64 {
	if pid <= 0 {
		return func() int64 { return 0 }
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if v := rssOf(pid); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 { close(stop); <-done; return peak.Load() }
}

// rssOf reads VmRSS of pid from /proc (bytes; 0 when unreadable).
func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
