package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"gelo/attest"
	"gelo/ir"
	"gelo/models"
	"gelo/passes"
	"gelo/plan"
	"gelo/plan/planfile"
	"gelo/serve"
	"gelo/serve/client"
	"gelo/tokenizer"
)

func runServe(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveMain(ctx, args, stderr, nil)
}

// serveMain is gelo serve until ctx ends; ready, if set, receives the
// listening address once the model is loaded (for tests).
func serveMain(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var mf modelFlags
	mf.ownWeights = true // one engine: f32 copies of converted weights are dropped at load
	mf.register(fs)
	mf.registerProtect(fs)
	planPath := fs.String("plan", "", "a sealed .gelo plan to serve (its model identity is checked first; default: compile --model on the fly)")
	tok := fs.String("tokenizer", "", "tokenizer.json (or its directory) for text prompts and chat (default: the model's own: its directory's, its GGUF file's or the built-in model's); without one only token-id prompts are served")
	listen := fs.String("listen", "127.0.0.1:8443", "address to listen on")
	maxBatch := fs.Int("max-batch", 8, "KV slots: the most sequences decoded in one step")
	maxQueue := fs.Int("max-queue", 0, "the most sequences waiting for a slot before 429 (0: 16 x --max-batch)")
	drain := fs.Duration("drain-timeout", 25*time.Second, "on SIGTERM or interrupt: how long requests already admitted may run on (no new ones are accepted) before they end with a shutting_down error (default under Kubernetes' 30 s grace period)")
	chunk := fs.Int("prefill-chunk", 512, "the longest prefill chunk, and the prompt tokens prefilled between two decode steps once reached (longer prompts are prefilled across steps)")
	name := fs.String("served-model-name", "", "the model id of the API (default: --model, or the plan's model)")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	plain := fs.Bool("plain-http", false, "serve plain HTTP without attestation: loopback development only (warned on every start)")
	simulated := fs.Bool("simulated", false, "attest with a simulated SEV-SNP device (go-sev-guest's test signer): for testing off SEV-SNP hardware; the evidence says SIMULATED")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	if *maxBatch < 1 || *maxBatch > 1024 {
		return fmt.Errorf("%w: --max-batch must be in [1, 1024], got %d", errUsage, *maxBatch)
	}
	if *chunk < 1 || *chunk > 1<<20 {
		return fmt.Errorf("%w: --prefill-chunk must be in [1, %d], got %d", errUsage, 1<<20, *chunk)
	}
	if *maxQueue < 0 || *maxQueue > 1<<20 {
		return fmt.Errorf("%w: --max-queue must be in [0, %d], got %d", errUsage, 1<<20, *maxQueue)
	}
	if *drain < 0 {
		return fmt.Errorf("%w: --drain-timeout must not be negative, got %v", errUsage, *drain)
	}
	var handler slog.Handler
	switch *logFormat {
	case "text":
		handler = slog.NewTextHandler(stderr, nil)
	case "json":
		handler = slog.NewJSONHandler(stderr, nil)
	default:
		return fmt.Errorf("%w: --log-format %q: want text or json", errUsage, *logFormat)
	}
	log := slog.New(handler)
	if *plain {
		if err := loopbackOnly(*listen); err != nil {
			return err
		}
		if *simulated {
			return fmt.Errorf("%w: --simulated attests a TLS session; --plain-http has none", errUsage)
		}
	}
	if *planPath != "" {
		if err := checkPlanOverrides(fs); err != nil {
			return err
		}
	}
	var m *ir.Module
	var sealed *planfile.Plan
	var err error
	if *planPath != "" {
		if m, sealed, err = plan.ReadArtifact(*planPath); err != nil {
			return err
		}
		if sealed == nil {
			return fmt.Errorf("%w: --plan %s: gelo serve needs a sealed .gelo plan (its digest is what clients attest)", errUsage, *planPath)
		}
		if err := plan.Verify(m); err != nil {
			return fmt.Errorf("refusing to serve %s: %w", *planPath, err)
		}
	}
	cfg, err := runConfig(&mf, sealed, *planPath)
	if err != nil {
		return err
	}
	if err := mf.preflight(cfg, m, *maxBatch, 1, 1); err != nil {
		return err
	}
	var attester attest.Attester
	if !*plain {
		if *simulated {
			attester, err = attest.NewSimulatedAttester(1)
		} else if attester, err = attest.NewAttester(); err != nil {
			err = fmt.Errorf("%v; to serve with simulated evidence (testing only) pass --simulated, or for loopback development --plain-http", err)
		}
		if err != nil {
			return err
		}
	}

	// Listen first, so that /health answers 503 while the model loads.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", *listen, err)
	}
	att := &serve.Attestation{Attester: attester}
	var tlsCfg *tls.Config
	if !*plain {
		if tlsCfg, err = att.TLSConfig(); err != nil {
			ln.Close()
			return err
		}
		ln = tls.NewListener(ln, tlsCfg)
	}
	opt := serve.Options{ModelName: *name, MaxBatch: *maxBatch, MaxQueue: *maxQueue, PrefillChunk: *chunk, Logger: log}
	if !*plain {
		opt.Attest = att
	}
	if opt.ModelName == "" {
		opt.ModelName = filepath.Base(mf.model)
		if sealed != nil {
			opt.ModelName = filepath.Base(sealed.Source.Name)
		}
	}
	s := serve.New(opt)
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(handler, slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	scheme := "https"
	if *plain {
		scheme = "http"
		log.Warn("PLAIN HTTP: no TLS and no attestation; prompts and completions cross the network in the clear (loopback development only)", "listen", ln.Addr().String())
	}
	if *simulated {
		log.Warn("SIMULATED attestation: evidence is signed by go-sev-guest's test-only AMD keys, not AMD hardware; clients refuse it unless told to accept simulated evidence")
	}
	log.Info("listening (loading the model)", "url", scheme+"://"+ln.Addr().String())
	var cleanup []func() // the engine and the weights, after the server stops
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		s.Close()
		for _, f := range slices.Backward(cleanup) {
			f()
		}
	}()

	loadErr := func() error {
		l, sealedTok, err := loadForServe(fs, &mf, *planPath, sealed, *tok, stderr)
		if err != nil {
			return err
		}
		cleanup = append(cleanup, func() { l.Close() })
		tk := sealedTok
		if m == nil {
			// The tokenizer that encodes is the one the identity binds, read
			// once (a GGUF file's own, from the same reading as its weights).
			pt, err := plan.ModelTokenizer(*tok, l)
			if err != nil {
				return err
			}
			tk = pt.Tok
			if m, err = mf.compile(l.Source, l.Config, stderr); err != nil {
				return err
			}
			o, _ := mf.options()
			if sealed, _, err = plan.SealTokenizer(m, l, o, pt); err != nil {
				return err
			}
		}
		warnInsecure(stderr, m)
		att.PlanDigest = sealed.Digest()
		att.Security = sealed.Passes.Security
		if att.Plan, err = plan.Encode(sealed); err != nil {
			return err
		}
		key, err := mf.key()
		if err != nil {
			return err
		}
		eng, err := mf.engine(l.Weights, key, m)
		if err != nil {
			return err
		}
		cleanup = append(cleanup, eng.Close)
		if tk != nil && tk.IgnoredChatTemplate() {
			log.Warn(tokenizer.IgnoredChatTemplateNote)
		}
		if err := s.Start(serve.Model{Module: m, Backend: eng.Runtime, Tokenizer: tk, MaxContext: mf.maxContext, EOS: plan.EOS(l.Config, tk)}); err != nil {
			return err
		}
		level := m.Meta["security"]
		if m.Meta["insecure"] != "" {
			level += " (INSECURE)"
		}
		attrs := []any{"model", opt.ModelName, "plan_digest", hex.EncodeToString(att.PlanDigest[:]), "security", level, "attestation", attestKind(attester)}
		if !*plain {
			attrs = append(attrs, "tls_key_sha256", hex.EncodeToString(att.KeySHA256[:]))
		}
		log.Info("serving", attrs...)
		return nil
	}()
	if loadErr != nil {
		s.Fail(loadErr)
		return loadErr
	}
	if ready != nil {
		ready(scheme + "://" + ln.Addr().String())
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down: draining the requests admitted", "drain_timeout", *drain)
		return s.Shutdown(hs, *drain)
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
}

func attestKind(a attest.Attester) string {
	switch {
	case a == nil:
		return "none (plain HTTP)"
	case a.Simulated():
		return "SIMULATED"
	}
	return "SEV-SNP hardware"
}

// loadForServe opens the model: the sealed plan's (checked against its
// identity) or --model's.
func loadForServe(fs *flag.FlagSet, mf *modelFlags, planPath string, sealed *planfile.Plan, tok string, stderr io.Writer) (*models.Model, *tokenizer.Tokenizer, error) {
	if sealed != nil {
		l, tk, err := openSealed(fs, mf, planPath, sealed, tok, stderr)
		return l, tk, err
	}
	l, err := mf.open(stderr)
	return l, nil, err
}

// loopbackOnly refuses a plain-HTTP listen address that is not loopback.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: --listen %q: %v", errUsage, addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: --plain-http serves in the clear: --listen must be a loopback address, not %q", errUsage, addr)
	}
	return nil
}

// runChat is gelo chat --server URL: attest the connection, then a
// conversation read from standard input, streamed.
func runChat(args []string, stdout, stderr io.Writer) error {
	return chatMain(context.Background(), args, os.Stdin, stdout, stderr)
}

func chatMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	server := fs.String("server", "", "the gelo server: https://HOST:PORT (http:// with --plain-http)")
	allowSim := fs.Bool("allow-simulated", false, "accept simulated SEV-SNP evidence (testing only)")
	plainHTTP := fs.Bool("plain-http", false, "talk plain HTTP without attestation (loopback development only)")
	planDigest := fs.String("plan-digest", "", "accept only this plan (hex SHA-256 plan digest)")
	minSec := fs.String("min-security", "", "refuse a plan below this level: "+strings.Join(passes.LevelNames(), ", "))
	measurement := fs.String("measurement", "", "expected MEASUREMENT (hex, 48 bytes)")
	minTCB := fs.String("min-tcb", "", "minimum TCB, e.g. bl=3,tee=0,snp=20,ucode=209")
	system := fs.String("system", "", "system message")
	message := fs.String("message", "", "one user message (default: read turns from standard input, one per line)")
	maxTokens := fs.Int("max-tokens", 256, "maximum new tokens per reply")
	temperature := fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
	if err := parseNoArgs(fs, args, stderr); err != nil {
		return err
	}
	if *server == "" {
		return fmt.Errorf("%w: --server is required", errUsage)
	}
	opt := client.Options{Plain: *plainHTTP, MinSecurity: *minSec}
	opt.Policy.AllowSimulated = *allowSim
	if *minSec != "" {
		if _, ok := passes.LookupLevel(*minSec); !ok {
			return fmt.Errorf("%w: --min-security %q: want %s", errUsage, *minSec, strings.Join(passes.LevelNames(), ", "))
		}
	}
	if *planDigest != "" {
		d, err := hex.DecodeString(*planDigest)
		if err != nil || len(d) != 32 {
			return fmt.Errorf("%w: --plan-digest must be 64 hex digits", errUsage)
		}
		copy(opt.PlanDigest[:], d)
	}
	if *measurement != "" {
		mm, err := hex.DecodeString(*measurement)
		if err != nil || len(mm) != 48 {
			return fmt.Errorf("%w: --measurement must be 96 hex digits", errUsage)
		}
		opt.Policy.Measurement = mm
	}
	if *minTCB != "" {
		tcb, err := parseTCB(*minTCB)
		if err != nil {
			return err
		}
		opt.Policy.MinimumTCB = tcb
	}
	if *maxTokens < 1 {
		return fmt.Errorf("%w: --max-tokens must be positive", errUsage)
	}
	c, err := client.Dial(ctx, *server, opt)
	if err != nil {
		return err
	}
	defer c.Close()
	if c.Report != nil {
		kind := "AMD SEV-SNP hardware"
		if c.Report.Simulated {
			kind = "SIMULATED (not AMD hardware)"
		}
		fmt.Fprintf(stderr, "attested session: %s evidence, plan %x, security %s\n", kind, c.PlanDigest, cmp.Or(c.Security, "unknown (no plan sent)"))
	} else {
		fmt.Fprintln(stderr, "PLAIN HTTP: no attestation, nothing is confidential")
	}
	var msgs []client.Message
	if *system != "" {
		msgs = append(msgs, client.Message{Role: "system", Content: *system})
	}
	temp := *temperature
	turn := func(text string) error {
		msgs = append(msgs, client.Message{Role: "user", Content: text})
		var reply strings.Builder
		finish, err := c.Chat(ctx, msgs, client.ChatOptions{MaxTokens: *maxTokens, Temperature: &temp}, func(s string) error {
			reply.WriteString(s)
			_, err := io.WriteString(stdout, s)
			return err
		})
		fmt.Fprintln(stdout)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "finish reason %s\n", finish)
		msgs = append(msgs, client.Message{Role: "assistant", Content: reply.String()})
		return nil
	}
	if *message != "" {
		return turn(*message)
	}
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			if err := turn(line); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
