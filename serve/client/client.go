// Package client talks to a gelo server over an attested connection: it
// opens one TLS 1.3 connection, asks for SEV-SNP evidence bound to that
// session (POST /v1/attestation with a fresh nonce), verifies the chain,
// the policy and the REPORT_DATA against its own view of the session
// (exported keying material, the server's public key, the plan digest),
// and only then sends prompts, on that same connection and no other.
package client

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"gelo/attest"
	"gelo/passes"
	"gelo/plan/planfile"
	"gelo/serve"
)

// Options say what the client accepts.
type Options struct {
	// Policy is what the evidence must meet (attest.Verify); its
	// AllowSimulated must be set to accept simulated evidence.
	Policy attest.Policy
	// PlanDigest, when not zero, is the only plan the client accepts.
	PlanDigest [32]byte
	// MinSecurity, when set, refuses a plan below this level (as gelo
	// verify --min-security).
	MinSecurity string
	// Plain talks plain HTTP without attestation: loopback development
	// only (the URL must be http:// on a loopback address).
	Plain bool
}

// Client is one attested connection.
type Client struct {
	base string
	hc   *http.Client
	// Report is the verified attestation (nil in plain mode).
	Report *attest.Report
	// Plan is the attested plan (nil in plain mode).
	Plan *planfile.Plan
	// Security is the attested plan's level ("" when the server sent no
	// plan).
	Security string
	// PlanDigest is the attested plan digest.
	PlanDigest [32]byte
}

// ErrRelayed marks evidence that does not verify for this session: it
// was fetched on another connection, or for another nonce or key.
var ErrRelayed = errors.New("evidence is not bound to this session")

// oneConn dials exactly once: after its connection closes the client
// refuses to dial again (a new connection would not be attested).
type oneConn struct {
	mu     sync.Mutex
	dialed bool
	state  *tls.ConnectionState
	tlsCfg *tls.Config
	plain  bool
}

func (o *oneConn) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dialed {
		return nil, errors.New("the attested connection is closed: attest a new one (Dial)")
	}
	o.dialed = true
	d := &net.Dialer{}
	if o.plain {
		return d.DialContext(ctx, network, addr)
	}
	c, err := (&tls.Dialer{NetDialer: d, Config: o.tlsCfg}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	st := c.(*tls.Conn).ConnectionState()
	o.state = &st
	return c, nil
}

// Dial connects to url (https://host:port, or http:// with Options.Plain)
// and attests the connection.
func Dial(ctx context.Context, url string, opt Options) (*Client, error) {
	url = strings.TrimRight(url, "/")
	oc := &oneConn{plain: opt.Plain, tlsCfg: newTLSConfig()}
	switch {
	case opt.Plain && strings.HasPrefix(url, "http://"):
	case !opt.Plain && strings.HasPrefix(url, "https://"):
	default:
		return nil, fmt.Errorf("client: %s: want https:// (or http:// in plain mode)", url)
	}
	c := newClient(url, oc)
	if opt.Plain {
		if err := checkLoopback(url); err != nil {
			return nil, err
		}
		return c, nil
	}
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("client: nonce: %w", err)
	}
	ar, err := c.fetchAttestation(ctx, nonce)
	if err != nil {
		return nil, err
	}
	if err := c.verify(oc, ar, nonce, opt); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func newTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: []string{"http/1.1"},
		// The server's certificate is self-signed by a key made at its
		// start-up: it is trusted through the attestation, which binds
		// its public key and this session, not through a CA.
		InsecureSkipVerify: true,
	}
}

// newClient is a client whose every request goes through oc's one
// connection.
func newClient(url string, oc *oneConn) *Client {
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, ForceAttemptHTTP2: false}
	if oc.plain {
		tr.DialContext = oc.dial
	} else {
		tr.DialTLSContext = oc.dial
	}
	return &Client{base: url, hc: &http.Client{Transport: tr}}
}

// fetchAttestation asks for evidence on the client's connection.
func (c *Client) fetchAttestation(ctx context.Context, nonce []byte) (*serve.AttestationResponse, error) {
	body, _ := json.Marshal(serve.AttestationRequest{Nonce: hex.EncodeToString(nonce)})
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+"/v1/attestation", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: attestation: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("client: attestation: %w", err)
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("client: attestation: status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var ar serve.AttestationResponse
	if err := json.Unmarshal(b, &ar); err != nil {
		return nil, fmt.Errorf("client: attestation response: %w", err)
	}
	return &ar, nil
}

// verify checks the evidence against this session and the policy.
func (c *Client) verify(oc *oneConn, ar *serve.AttestationResponse, nonce []byte, opt Options) error {
	oc.mu.Lock()
	st := oc.state
	oc.mu.Unlock()
	if st == nil || len(st.PeerCertificates) == 0 {
		return errors.New("client: no TLS session to attest")
	}
	ev, err := attest.UnmarshalEvidence(ar.Evidence)
	if err != nil {
		return fmt.Errorf("client: evidence: %w", err)
	}
	if ev.Simulated && !opt.Policy.AllowSimulated {
		return fmt.Errorf("client: refused: %w", attest.ErrSimulated)
	}
	var digest [32]byte
	if d, err := hex.DecodeString(ar.PlanDigest); err != nil || len(d) != 32 {
		return errors.New("client: the server's plan digest is not 32 bytes of hex")
	} else {
		copy(digest[:], d)
	}
	if opt.PlanDigest != ([32]byte{}) && digest != opt.PlanDigest {
		return fmt.Errorf("client: refused: the server runs plan %x, expected %x", digest, opt.PlanDigest)
	}
	ekm, err := st.ExportKeyingMaterial(attest.SessionLabel, nonce, attest.SessionEKMLen)
	if err != nil {
		return fmt.Errorf("client: exporting keying material: %w", err)
	}
	key := sha256.Sum256(st.PeerCertificates[0].RawSubjectPublicKeyInfo)
	want, err := attest.SessionReportData(ekm, nonce, key, digest)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	rep, err := attest.Verify(ev, want, opt.Policy)
	if errors.Is(err, attest.ErrReportDataMismatch) {
		return fmt.Errorf("client: refused: %w (relayed from another connection, a stale nonce, or another key): %v", ErrRelayed, err)
	}
	if err != nil {
		return fmt.Errorf("client: refused: %w", err)
	}
	// The plan the digest names, for its level.
	if len(ar.Plan) > 0 {
		p, err := planfile.Decode(ar.Plan)
		if err != nil {
			return fmt.Errorf("client: the attested plan: %w", err)
		}
		if p.Digest() != digest {
			return errors.New("client: refused: the plan sent does not hash to the attested plan digest")
		}
		c.Plan = p
		c.Security = cmp.Or(p.Passes.Security, passes.LevelCustom)
	}
	if opt.MinSecurity != "" {
		if c.Plan == nil {
			return errors.New("client: refused: the server sent no plan, so its level cannot be checked")
		}
		m, err := c.Plan.Module()
		if err != nil {
			return fmt.Errorf("client: the attested plan: %w", err)
		}
		insecure := m.Meta["insecure"]
		if passes.LevelRank(c.Security) < passes.LevelRank(opt.MinSecurity) || (insecure != "" && passes.LevelRank(opt.MinSecurity) > 0) {
			return fmt.Errorf("client: refused: the plan has security %s, below the minimum %s", c.Security, opt.MinSecurity)
		}
	}
	c.Report, c.PlanDigest = rep, digest
	return nil
}

// checkLoopback refuses plain HTTP to anything but a loopback address.
func checkLoopback(url string) error {
	host := strings.TrimPrefix(url, "http://")
	host, _, _ = strings.Cut(host, "/")
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if h == "localhost" {
		return nil
	}
	if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("client: plain HTTP only to a loopback address, not %s", h)
	}
	return nil
}

// HTTPClient is bound to the attested connection (for an OpenAI client
// library: option.WithHTTPClient). It never opens another connection.
func (c *Client) HTTPClient() *http.Client { return c.hc }

// BaseURL is the server's URL.
func (c *Client) BaseURL() string { return c.base }

// Close closes the connection.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Message is a chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatOptions are a chat request's sampling fields (zero: the server's
// defaults; Temperature nil: 1).
type ChatOptions struct {
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
}

// Chat streams a chat completion, calling delta with each piece of text,
// and returns the finish reason.
func (c *Client) Chat(ctx context.Context, msgs []Message, o ChatOptions, delta func(string) error) (string, error) {
	body, _ := json.Marshal(struct {
		Messages []Message `json:"messages"`
		Stream   bool      `json:"stream"`
		ChatOptions
	}{msgs, true, o})
	return c.stream(ctx, "/v1/chat/completions", body, func(ch streamChoice) string { return ch.Delta.Content }, delta)
}

// Complete streams a text completion of prompt (a string, or []int token
// ids) and returns the finish reason.
func (c *Client) Complete(ctx context.Context, prompt any, o ChatOptions, delta func(string) error) (string, error) {
	body, _ := json.Marshal(struct {
		Prompt any  `json:"prompt"`
		Stream bool `json:"stream"`
		ChatOptions
	}{prompt, true, o})
	return c.stream(ctx, "/v1/completions", body, func(ch streamChoice) string { return ch.Text }, delta)
}

type streamChoice struct {
	Text  string `json:"text"`
	Delta struct {
		Content string `json:"content"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

func (c *Client) stream(ctx context.Context, path string, body []byte, text func(streamChoice) string, delta func(string) error) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+path, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("client: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		return "", fmt.Errorf("client: status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	finish := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			// Read to the body's end (the chunked terminator after
			// [DONE]): a body closed before its end drops the connection,
			// and this client may not open another.
			if err := drain(resp.Body); err != nil {
				return finish, err
			}
			return finish, nil
		}
		var chunk struct {
			Choices []streamChoice `json:"choices"`
			Error   *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return finish, fmt.Errorf("client: bad chunk: %w", err)
		}
		if chunk.Error != nil {
			drain(resp.Body) // the server ends the stream after its error: keep the connection
			return finish, fmt.Errorf("client: server error: %s", chunk.Error.Message)
		}
		for _, ch := range chunk.Choices {
			if t := text(ch); t != "" && delta != nil {
				if err := delta(t); err != nil {
					return finish, err
				}
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		return finish, fmt.Errorf("client: %w", err)
	}
	return finish, errors.New("client: the stream ended without [DONE]")
}

// maxTrailing bounds what drain reads after [DONE]: the server sends
// nothing more than the end of the chunked body.
const maxTrailing = 4 << 10

// drain reads a stream's body to its end, so that the transport keeps the
// (attested) connection for the next request.
func drain(body io.Reader) error {
	n, err := io.Copy(io.Discard, io.LimitReader(body, maxTrailing+1))
	if err != nil {
		return fmt.Errorf("client: reading the end of the stream: %w", err)
	}
	if n > maxTrailing {
		return fmt.Errorf("client: more than %d bytes after [DONE]", maxTrailing)
	}
	return nil
}
