package client

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"gelo/attest"
	"gelo/models"
	"gelo/plan"
	"gelo/serve"
	"gelo/serve/internal/testtok"
)

// attestedServer serves qwen3-tiny at level over TLS with a simulated
// attester, as gelo serve --simulated does.
func attestedServer(t *testing.T, level string) (*httptest.Server, [32]byte) {
	t.Helper()
	l, err := models.Open("qwen3-tiny", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := plan.Level(level)
	m, err := plan.Compile(l.Source, l.Config, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := plan.Seal(m, l, o, "")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := plan.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := plan.NewEngine(plan.EngineOptions{}, l.Weights, []byte("gelo client test session key"), m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	sim, err := attest.NewSimulatedAttester(1)
	if err != nil {
		t.Fatal(err)
	}
	a := &serve.Attestation{Attester: sim, PlanDigest: p.Digest(), Plan: pb, Security: p.Passes.Security}
	tlsCfg, err := a.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	s := serve.New(serve.Options{ModelName: "qwen3-tiny", Attest: a, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := s.Start(serve.Model{Module: m, Backend: eng.Runtime, MaxContext: 128, EOS: l.Config.EOSTokenIDs}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.TLS = tlsCfg
	ts.StartTLS()
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close(); s.Close() })
	return ts, p.Digest()
}

var simOK = Options{Policy: attest.Policy{AllowSimulated: true}}

// TestAttestedSession: the client attests its connection (simulated
// evidence, accepted only when told to), reads the plan's level, talks on
// that connection and never opens another.
func TestAttestedSession(t *testing.T) {
	ts, digest := attestedServer(t, "none")
	ctx := context.Background()
	if _, err := Dial(ctx, ts.URL, Options{}); !errors.Is(err, attest.ErrSimulated) {
		t.Fatalf("simulated evidence without AllowSimulated: %v", err)
	}
	c, err := Dial(ctx, ts.URL, simOK)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Report.Simulated || c.Security != "none" {
		t.Fatalf("report simulated %v, security %q", c.Report.Simulated, c.Security)
	}
	var text strings.Builder
	finish, err := c.Complete(ctx, []int{1, 2, 3}, ChatOptions{MaxTokens: 4}, func(s string) error { text.WriteString(s); return nil })
	if err != nil || finish == "" {
		t.Fatalf("completion on the attested connection: %q, %v", finish, err)
	}
	// Once the attested connection is gone, the client does not dial again.
	c.Close()
	ts.CloseClientConnections()
	if _, err := c.Complete(ctx, []int{1}, ChatOptions{MaxTokens: 1}, nil); err == nil {
		t.Fatal("the client sent a prompt on a new, unattested connection")
	}

	want := digest
	want[0] ^= 1
	if _, err := Dial(ctx, ts.URL, Options{Policy: simOK.Policy, PlanDigest: want}); err == nil || !strings.Contains(err.Error(), "expected") {
		t.Fatalf("another plan expected: %v", err)
	}
	if _, err := Dial(ctx, ts.URL, Options{Policy: simOK.Policy, MinSecurity: "exact"}); err == nil || !strings.Contains(err.Error(), "below the minimum") {
		t.Fatalf("a none plan under --min-security exact: %v", err)
	}
	high := simOK
	high.Policy.MinimumTCB = attest.SimulatedTCB
	high.Policy.MinimumTCB.SNP++
	if _, err := Dial(ctx, ts.URL, high); err == nil || !strings.Contains(err.Error(), "policy") {
		t.Fatalf("a TCB below the minimum: %v", err)
	}
	if _, err := Dial(ctx, strings.Replace(ts.URL, "https://", "http://", 1), Options{Plain: false}); err == nil {
		t.Fatal("http:// without plain mode accepted")
	}
}

// TestRelayAndStaleNonce: evidence fetched on one connection does not
// verify on another, and evidence for an old nonce does not verify for a
// new one, on the same connection.
func TestRelayAndStaleNonce(t *testing.T) {
	ts, _ := attestedServer(t, "none")
	ctx := context.Background()
	open := func() (*Client, *oneConn) {
		oc := &oneConn{tlsCfg: newTLSConfig()}
		c := newClient(ts.URL, oc)
		return c, oc
	}
	nonce := func() []byte {
		n := make([]byte, 32)
		rand.Read(n)
		return n
	}

	// Relay: fetched on A, presented on B.
	a, ocA := open()
	defer a.Close()
	nA := nonce()
	ar, err := a.fetchAttestation(ctx, nA)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.verify(ocA, ar, nA, simOK); err != nil {
		t.Fatalf("evidence on its own connection: %v", err)
	}
	b, ocB := open()
	defer b.Close()
	if _, err := b.fetchAttestation(ctx, nonce()); err != nil { // opens B
		t.Fatal(err)
	}
	if err := b.verify(ocB, ar, nA, simOK); !errors.Is(err, ErrRelayed) {
		t.Fatalf("evidence relayed from another connection: %v", err)
	}

	// Stale nonce: an old answer for a new challenge.
	n2 := nonce()
	if err := a.verify(ocA, ar, n2, simOK); !errors.Is(err, ErrRelayed) {
		t.Fatalf("evidence for a stale nonce: %v", err)
	}
}

// chatServer serves qwen3-tiny with the test tokenizer: over TLS with a
// simulated attester, or over plain HTTP.
func chatServer(t *testing.T, tlsOn bool) *httptest.Server {
	t.Helper()
	l, err := models.Open("qwen3-tiny", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := plan.Level("none")
	m, err := plan.Compile(l.Source, l.Config, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := plan.NewEngine(plan.EngineOptions{}, l.Weights, []byte("gelo client test session key"), m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	tok, err := testtok.New()
	if err != nil {
		t.Fatal(err)
	}
	opt := serve.Options{ModelName: "qwen3-tiny", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var tlsCfg *tls.Config
	if tlsOn {
		p, _, err := plan.Seal(m, l, o, "")
		if err != nil {
			t.Fatal(err)
		}
		sim, err := attest.NewSimulatedAttester(1)
		if err != nil {
			t.Fatal(err)
		}
		opt.Attest = &serve.Attestation{Attester: sim, PlanDigest: p.Digest(), Security: p.Passes.Security}
		if tlsCfg, err = opt.Attest.TLSConfig(); err != nil {
			t.Fatal(err)
		}
	}
	s := serve.New(opt)
	eos := append([]int{}, l.Config.EOSTokenIDs...)
	if id, ok := tok.EOSTokenID(); ok {
		eos = append(eos, id)
	}
	if err := s.Start(serve.Model{Module: m, Backend: eng.Runtime, Tokenizer: tok, MaxContext: 512, EOS: eos}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s.Handler())
	if tlsOn {
		ts.TLS = tlsCfg
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close(); s.Close() })
	return ts
}

// TestChatTurns: a conversation of five turns on one attested connection
// (and on one plain connection): each turn reads its stream to the end,
// so the connection is reused rather than dropped, which would leave the
// next turn no connection it may use.
func TestChatTurns(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"simulated TLS", true}, {"plain HTTP", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := chatServer(t, tc.tls)
			opt := simOK
			opt.Plain = !tc.tls
			ctx := context.Background()
			c, err := Dial(ctx, ts.URL, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			temp := 0.0
			var msgs []Message
			for turn := range 5 {
				msgs = append(msgs, Message{Role: "user", Content: fmt.Sprintf("turn %d: hi", turn)})
				var reply strings.Builder
				finish, err := c.Chat(ctx, msgs, ChatOptions{MaxTokens: 6, Temperature: &temp}, func(s string) error { reply.WriteString(s); return nil })
				if err != nil {
					t.Fatalf("turn %d: %v", turn+1, err)
				}
				if finish == "" {
					t.Fatalf("turn %d: no finish reason", turn+1)
				}
				msgs = append(msgs, Message{Role: "assistant", Content: reply.String()})
			}
		})
	}
}
