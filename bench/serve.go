package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"gelo/passes"
	"gelo/plan"
	"gelo/serve"
)

// ServeClients are the concurrency levels gelo bench's serve suite runs.
var ServeClients = []int{1, 8, 32}

// Serve is a bounded load run of gelo serve on loopback: for each
// level (none and the default) one server with --max-batch the largest
// client count, then a fixed number of streaming greedy completions
// (promptLen random token ids, maxTokens new tokens each) from 1, 8 and 32
// concurrent clients. It reports requests/s, client-side TTFT p50/p95,
// aggregate generated tok/s and the server's batch size histogram. Client
// and server share the machine, so the figures are upper bounds on
// latency and lower bounds on throughput.
func Serve(e *Env, clients []int, promptLen, maxTokens int) error {
	levels := []string{passes.LevelNone, passes.DefaultLevel}
	maxB := slices.Max(clients)
	ctxLen := promptLen + maxTokens + 1
	fmt.Fprintf(e.Out, "serve: loopback load run, %d prompt tokens + %d new per request, --max-batch %d, --max-context %d; requests = max(8, 2 x clients)\n",
		promptLen, maxTokens, maxB, ctxLen)
	fmt.Fprintln(e.Out, "(client and server share this machine's cores: latencies are upper bounds, throughput lower bounds)")
	fmt.Fprintf(e.Out, "%-8s %7s %8s %9s %10s %10s %11s  %s\n", "level", "clients", "requests", "req/s", "TTFT p50", "TTFT p95", "gen tok/s", "batch size per decode step (steps)")
	for _, level := range levels {
		o := plan.Level(level)
		m, err := plan.Compile(e.Model.Source, e.Model.Config, o, nil)
		if err != nil {
			return err
		}
		eng, err := e.engine(m)
		if err != nil {
			return err
		}
		reg := prometheus.NewRegistry()
		s := serve.New(serve.Options{ModelName: "bench", MaxBatch: maxB, MaxQueue: 4 * maxB, Registry: reg,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err := s.Start(serve.Model{Module: m, Backend: eng.Runtime, MaxContext: ctxLen}); err != nil {
			eng.Close()
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.Close()
			eng.Close()
			return err
		}
		hs := &http.Server{Handler: s.Handler()}
		go hs.Serve(ln)
		url := "http://" + ln.Addr().String()
		vocab := e.Model.Config.VocabSize
		rng := rand.New(rand.NewPCG(1, 2))
		body := func() string {
			ids := make([]string, promptLen)
			for i := range ids {
				ids[i] = fmt.Sprint(rng.IntN(vocab))
			}
			return fmt.Sprintf(`{"prompt":[%s],"max_tokens":%d,"temperature":0,"stream":true,"return_token_ids":true}`, strings.Join(ids, ","), maxTokens)
		}
		// Warm up: capture the decode steps of the widths a run uses.
		if _, _, err := loadRequest(url, body()); err != nil {
			hs.Close()
			s.Close()
			eng.Close()
			return err
		}
		prev := batchHist(reg)
		for _, c := range clients {
			n := max(8, 2*c)
			bodies := make([]string, n)
			for i := range bodies {
				bodies[i] = body()
			}
			ttft := make([]time.Duration, n)
			toks := make([]int, n)
			errs := make([]error, n)
			next := make(chan int, n)
			for i := range n {
				next <- i
			}
			close(next)
			start := time.Now()
			var wg sync.WaitGroup
			for range c {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						ttft[i], toks[i], errs[i] = loadRequest(url, bodies[i])
					}
				}()
			}
			wg.Wait()
			wall := time.Since(start)
			total := 0
			for i := range n {
				if errs[i] != nil {
					hs.Close()
					s.Close()
					eng.Close()
					return fmt.Errorf("request %d: %w", i, errs[i])
				}
				total += toks[i]
			}
			slices.Sort(ttft)
			h := batchHist(reg)
			fmt.Fprintf(e.Out, "%-8s %7d %8d %9.2f %10s %10s %11.1f  %s\n", level, c, n, float64(n)/wall.Seconds(),
				Short(ttft[n/2]), Short(ttft[min(n-1, (n*95+99)/100-1)]), float64(total)/wall.Seconds(), histText(h, prev))
			prev = h
		}
		hs.Close()
		s.Close()
		eng.Close()
	}
	return nil
}

// loadRequest streams one completion and returns its time to first token
// and the number of tokens.
func loadRequest(url, body string) (time.Duration, int, error) {
	start := time.Now()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url+"/v1/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return 0, 0, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var ttft time.Duration
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) || bytes.Equal(line, []byte("data: [DONE]")) {
			continue
		}
		var c struct {
			Choices []struct {
				TokenIDs []int `json:"token_ids"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(line[6:], &c); err != nil {
			return 0, 0, err
		}
		for _, ch := range c.Choices {
			if len(ch.TokenIDs) > 0 && n == 0 {
				ttft = time.Since(start)
			}
			n += len(ch.TokenIDs)
		}
	}
	return ttft, n, sc.Err()
}

// batchHist reads the cumulative counts of gelo_batch_size by upper bound.
func batchHist(reg *prometheus.Registry) map[float64]uint64 {
	out := map[float64]uint64{}
	mfs, err := reg.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		if mf.GetName() != "gelo_batch_size" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, b := range m.GetHistogram().GetBucket() {
				out[b.GetUpperBound()] = b.GetCumulativeCount()
			}
		}
	}
	return out
}

// histText prints the steps of a run per batch-size bucket (1, 2, 3-4,
// 5-8, ...), the difference of two cumulative histograms.
func histText(h, prev map[float64]uint64) string {
	var bounds []float64
	for b := range h {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	var parts []string
	lastCum := uint64(0)
	lo := 1.0
	for _, b := range bounds {
		cum := h[b] - prev[b]
		if n := cum - lastCum; n > 0 {
			label := fmt.Sprint(b)
			if lo < b {
				label = fmt.Sprintf("%g-%g", lo, b)
			}
			parts = append(parts, fmt.Sprintf("%s:%d", label, n))
		}
		lastCum = cum
		lo = b + 1
	}
	return strings.Join(parts, " ")
}
