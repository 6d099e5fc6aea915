// Package serve is gelo's OpenAI-compatible inference server: chat and
// text completions over one continuously batched runtime.Batch, streamed
// as Server-Sent Events, with Prometheus metrics and an attestation
// endpoint that binds SEV-SNP evidence to the TLS session. Nothing here
// compiles or loads a model: the caller hands in a compiled module and
// its engine (package plan).
package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"gelo/ir"
	"gelo/runtime"
	"gelo/tokenizer"
)

// Options configure a server. Zero fields take the defaults noted.
type Options struct {
	// ModelName is the id /v1/models lists and requests must name ("" or
	// the id; default "gelo").
	ModelName string
	// MaxBatch is the number of KV slots, the most sequences decoded in
	// one step (default 8).
	MaxBatch int
	// MaxQueue is the most sequences waiting for a slot; more is 429
	// (default 16 x MaxBatch).
	MaxQueue int
	// MaxBodyBytes bounds a request body; more is 413 (default 1 MiB).
	MaxBodyBytes int64
	// ReadTimeout bounds reading a request's body: a body not in by then
	// is answered 408 and its connection closed, so that a client that
	// stalls part-way cannot hold a connection (default 30 s).
	ReadTimeout time.Duration
	// WriteTimeout bounds each write to a client; a client that does not
	// read for this long is dropped and its slot freed (default 30 s).
	WriteTimeout time.Duration
	// PingInterval is how often a stream waiting for its first token gets
	// a ": ping" comment (default 5 s).
	PingInterval time.Duration
	// PrefillChunk is the longest prefill chunk, and the prompt tokens
	// prefilled between two decode steps once reached (default 512).
	PrefillChunk int
	// Logger receives the server's logs; never prompt, token or sampled
	// text (default: slog.Default()).
	Logger *slog.Logger
	// Registry holds the metrics; nil: a registry of the server's own.
	Registry *prometheus.Registry
	// Attest, when set, serves POST /v1/attestation.
	Attest *Attestation
}

// Model is what the server runs: a compiled module on its engine.
type Model struct {
	Module     *ir.Module
	Backend    runtime.Backend
	Tokenizer  *tokenizer.Tokenizer // nil: token-id prompts only
	MaxContext int
	EOS        []int
}

// Server serves the OpenAI API over one model.
type Server struct {
	opt     Options
	log     *slog.Logger
	reg     *prometheus.Registry
	met     *metrics
	mux     *http.ServeMux
	ready   atomic.Pointer[loaded]
	loadErr atomic.Pointer[error]
	cancel  context.CancelCauseFunc
	done    chan struct{}
	once    sync.Once
	created int64
}

type loaded struct {
	m     Model
	sched *scheduler
	vocab int
}

// New makes a server that answers 503 (loading) until Start.
func New(opt Options) *Server {
	if opt.ModelName == "" {
		opt.ModelName = "gelo"
	}
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = 8
	}
	if opt.MaxQueue <= 0 {
		opt.MaxQueue = 16 * opt.MaxBatch
	}
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = 1 << 20
	}
	if opt.ReadTimeout <= 0 {
		opt.ReadTimeout = 30 * time.Second
	}
	if opt.WriteTimeout <= 0 {
		opt.WriteTimeout = 30 * time.Second
	}
	if opt.PingInterval <= 0 {
		opt.PingInterval = 5 * time.Second
	}
	if opt.PrefillChunk <= 0 {
		opt.PrefillChunk = 512
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	reg := opt.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &Server{opt: opt, log: opt.Logger, reg: reg, met: newMetrics(reg), mux: http.NewServeMux(),
		done: make(chan struct{}), created: time.Now().Unix()}
	s.mux.HandleFunc("POST /v1/chat/completions", s.count("chat", s.handleChat))
	s.mux.HandleFunc("POST /v1/completions", s.count("completions", s.handleCompletion))
	s.mux.HandleFunc("GET /v1/models", s.count("models", s.handleModels))
	s.mux.HandleFunc("GET /health", s.count("health", s.handleHealth))
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if opt.Attest != nil {
		s.mux.HandleFunc("POST /v1/attestation", s.count("attestation", s.handleAttestation))
	}
	return s
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.bounded(s.mux) }

// bounded puts a read deadline on every request that carries a body, so
// that reading it, in a handler or in net/http's drain of what a handler
// left unread (before the answer and after it), ends within ReadTimeout
// whatever the client does. body() lifts it once the body is in.
func (s *Server) bounded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opt.ReadTimeout))
		}
		h.ServeHTTP(w, r)
	})
}

// Start begins serving m: it makes the batch and starts the scheduler.
func (s *Server) Start(m Model) error {
	if m.MaxContext <= 0 {
		return errors.New("serve: max context must be positive")
	}
	bt, err := runtime.NewBatch(m.Module, m.Backend, s.opt.MaxBatch, runtime.Options{MaxContext: m.MaxContext})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	vocab, err := vocabOf(m.Module)
	if err != nil {
		return err
	}
	sc, err := newScheduler(bt, m.Tokenizer, m.EOS, m.MaxContext, vocab, s.opt.MaxQueue, s.opt.PrefillChunk, s.log, s.met)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		sc.run(ctx)
	}()
	s.ready.Store(&loaded{m: m, sched: sc, vocab: vocab})
	s.log.Info("model loaded", "model", s.opt.ModelName, "max_batch", s.opt.MaxBatch, "max_context", m.MaxContext,
		"security", m.Module.Meta["security"], "topology", m.Module.Meta["topology"])
	return nil
}

// Load reports the sequences holding a KV slot and those waiting for
// one (0, 0 before Start).
func (s *Server) Load() (running, waiting int) {
	l := s.ready.Load()
	if l == nil {
		return 0, 0
	}
	l.sched.mu.Lock()
	waiting = len(l.sched.waiting)
	l.sched.mu.Unlock()
	return int(l.sched.nRunning.Load()), waiting
}

// Fail records that loading failed: /health then says so (503).
func (s *Server) Fail(err error) { s.loadErr.Store(&err) }

// Close stops the scheduler: running and waiting requests end with a
// shutting_down error (Shutdown first lets them finish).
func (s *Server) Close() {
	s.once.Do(func() {
		if l := s.ready.Load(); l != nil {
			l.sched.close()
			s.cancel(errShuttingDown)
			<-s.done
		}
	})
}

// vocabOf reads the logits width of the decode graph.
func vocabOf(m *ir.Module) (int, error) {
	dec := m.Graph("decode")
	if dec == nil {
		return 0, errors.New("serve: module has no decode graph")
	}
	for _, o := range dec.Outputs {
		if o.Name == "logits" {
			t := dec.Node(o.Value).Type
			if t.Rank() == 2 && !t.Shape[1].IsSym() {
				return t.Shape[1].Size, nil
			}
		}
	}
	return 0, errors.New("serve: decode graph has no [B, vocab] logits output")
}

// statusWriter remembers the status for the request counter.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(c int) {
	if w.code == 0 {
		w.code = c
	}
	w.ResponseWriter.WriteHeader(c)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) count(endpoint string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		h(sw, r)
		s.met.requests.WithLabelValues(endpoint, fmt.Sprint(sw.code)).Inc()
		s.log.Debug("request", "endpoint", endpoint, "status", sw.code, "duration", time.Since(start))
	}
}

// writeError sends an OpenAI error body.
func (s *Server) writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}

// retryAfterSeconds is the Retry-After of a full queue: about the time a
// few sequences take to finish and free their slots.
const retryAfterSeconds = 1

// shuttingDownError answers a request refused or cut off by a shutdown:
// another replica (or this one, restarted) can serve it.
func shuttingDownError() *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Message: errShuttingDown.Error(), Type: "unavailable_error", Code: "shutting_down", RetryAfter: retryAfterSeconds}
}

func loadingError() *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Message: "the model is loading", Type: "unavailable_error", Code: "model_loading"}
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if p := s.loadErr.Load(); p != nil {
		s.writeError(w, &apiError{Status: http.StatusServiceUnavailable, Message: "the model failed to load", Type: "unavailable_error", Code: "model_load_failed"})
		return
	}
	l := s.ready.Load()
	if l == nil {
		s.writeError(w, loadingError())
		return
	}
	if l.sched.aborted.Load() {
		s.writeError(w, &apiError{Status: http.StatusServiceUnavailable, Message: errAborted.Error(), Type: "unavailable_error", Code: "integrity_abort"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"ok"}`+"\n")
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{
		map[string]any{"id": s.opt.ModelName, "object": "model", "created": s.created, "owned_by": "gelo"},
	}})
}

// body reads a request body under the size limit, before the read
// deadline bounded set. Read whole, the body's deadline is lifted: the
// response's writes have their own, and a deadline left on the connection
// would cancel a long stream when net/http's background read hits it.
// Not read whole (a stalled client, one that hung up, one over the
// limit), the deadline stays and the connection is closed after the
// answer, so that net/http's drain of the rest fails at once instead of
// waiting for bytes that may never come.
func (s *Server) body(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opt.MaxBodyBytes))
	if err == nil {
		http.NewResponseController(w).SetReadDeadline(time.Time{})
		return b, nil
	}
	w.Header().Set("Connection", "close")
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("request body is larger than %d bytes", s.opt.MaxBodyBytes), Type: "invalid_request_error", Code: "body_too_large"}
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return nil, &apiError{Status: http.StatusRequestTimeout, Message: fmt.Sprintf("the request body did not arrive within %v", s.opt.ReadTimeout), Type: "invalid_request_error", Code: "body_timeout"}
	}
	return nil, badRequest("", "reading the request body: %v", err)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	s.generate(w, r, true)
}

func (s *Server) handleCompletion(w http.ResponseWriter, r *http.Request) {
	s.generate(w, r, false)
}

// generate parses, admits and answers one request.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	l := s.ready.Load()
	if l == nil {
		s.writeError(w, loadingError())
		return
	}
	body, e := s.body(w, r)
	if e != nil {
		s.writeError(w, e)
		return
	}
	var req *request
	if chat {
		req, e = parseChat(body, l.m.Tokenizer, l.m.MaxContext)
	} else {
		req, e = parseCompletion(body, l.m.Tokenizer, l.vocab, l.m.MaxContext)
	}
	clear(body)
	if e != nil {
		s.writeError(w, e)
		return
	}
	if req.model != "" && req.model != s.opt.ModelName {
		s.writeError(w, &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf("the model %q does not exist (this server serves %q)", req.model, s.opt.ModelName),
			Type: "invalid_request_error", Param: "model", Code: "model_not_found"})
		return
	}
	for i, t := range req.prompt {
		if int(t) >= l.vocab {
			s.writeError(w, badRequest("", "the tokenizer gives token %d at index %d, outside the model's vocabulary [0, %d)", t, i, l.vocab))
			return
		}
	}
	if n := len(req.prompt); n >= l.m.MaxContext {
		e := badRequest("messages", "the prompt is %d tokens, the context %d: it leaves no room for a new token", n, l.m.MaxContext)
		if !chat {
			e.Param = "prompt"
		}
		e.Code, e.NPromptTokens, e.NCtx = "context_length_exceeded", n, l.m.MaxContext
		s.writeError(w, e)
		return
	}
	if req.n > s.opt.MaxQueue {
		// Never admitted, however long the client waits: not a 429.
		s.writeError(w, badRequest("n", "n is %d, over this server's limit of %d sequences a request (its queue length)", req.n, s.opt.MaxQueue))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	chans, err := l.sched.submit(ctx, req)
	if errors.Is(err, errQueueFull) {
		s.writeError(w, &apiError{Status: http.StatusTooManyRequests, Message: "the request queue is full; retry later", Type: "rate_limit_error", Code: "queue_full",
			RetryAfter: retryAfterSeconds})
		return
	}
	if errors.Is(err, errAborted) {
		s.writeError(w, &apiError{Status: http.StatusServiceUnavailable, Message: err.Error(), Type: "unavailable_error", Code: "integrity_abort"})
		return
	}
	if errors.Is(err, errShuttingDown) {
		s.writeError(w, shuttingDownError())
		return
	}
	if err != nil {
		s.writeError(w, &apiError{Status: http.StatusServiceUnavailable, Message: err.Error(), Type: "unavailable_error"})
		return
	}
	id := newID(chat)
	out := &responder{s: s, w: w, rc: http.NewResponseController(w), req: req, id: id, chat: chat, cancel: cancel,
		tok: l.m.Tokenizer}
	if req.stream {
		out.stream(ctx, chans)
	} else {
		out.whole(ctx, chans)
	}
}

func newID(chat bool) string {
	b := make([]byte, 12)
	rand.Read(b)
	if chat {
		return "chatcmpl-" + hex.EncodeToString(b)
	}
	return "cmpl-" + hex.EncodeToString(b)
}
