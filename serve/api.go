package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"gelo/runtime"
	"gelo/tokenizer"
)

// apiError is an OpenAI error body ({"error": {...}}) with its HTTP
// status. NPromptTokens and NCtx are set for a prompt over the context (as
// llama.cpp's server reports it).
type apiError struct {
	Status        int    `json:"-"`
	Message       string `json:"message"`
	Type          string `json:"type"`
	Param         any    `json:"param"`
	Code          any    `json:"code"`
	NPromptTokens int    `json:"n_prompt_tokens,omitempty"`
	NCtx          int    `json:"n_ctx,omitempty"`
	// RetryAfter, when positive, is sent as the Retry-After header
	// (seconds): every 429 and 503 that a retry may cure carries one.
	RetryAfter int `json:"-"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *apiError {
	var p any
	if param != "" {
		p = param
	}
	return &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error", Param: p}
}

// Limits on a request, so that no field asks for unbounded work.
const (
	maxChoices     = 16
	maxStops       = 4
	maxStopLen     = 256
	maxTopLogprobs = 20
)

// chatMessage is one message; content is a string or an array of parts
// ({"type": "text", "text": ...}), as the OpenAI API allows.
type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
}

// params are the fields chat and completions share. Pointers tell a
// field left out from its zero value.
type params struct {
	Model               string           `json:"model"`
	MaxTokens           *int             `json:"max_tokens"`
	MaxCompletionTokens *int             `json:"max_completion_tokens"`
	Temperature         *float64         `json:"temperature"`
	TopP                *float64         `json:"top_p"`
	TopK                *int             `json:"top_k"`
	MinP                *float64         `json:"min_p"`
	Seed                *int64           `json:"seed"`
	Stop                json.RawMessage  `json:"stop"`
	N                   *int             `json:"n"`
	FrequencyPenalty    *float64         `json:"frequency_penalty"`
	PresencePenalty     *float64         `json:"presence_penalty"`
	RepetitionPenalty   *float64         `json:"repetition_penalty"`
	Stream              bool             `json:"stream"`
	StreamOptions       *json.RawMessage `json:"stream_options"`
	Logprobs            json.RawMessage  `json:"logprobs"`
	TopLogprobs         *int             `json:"top_logprobs"`
	// unsupported holds the fields this server does not implement: a
	// request that sets one to anything but its no-op value is refused
	// (400 naming the field, as vLLM does), not answered as if it had
	// been honoured.
	unsupported
	// ReturnTokenIDs (vLLM's extension) adds each choice's token ids.
	ReturnTokenIDs bool `json:"return_token_ids"`
	// ChatTemplateKwargs.EnableThinking (vLLM's spelling) lets Qwen3 open
	// a thinking block; off by default, as gelo generate --chat.
	ChatTemplateKwargs *struct {
		EnableThinking bool `json:"enable_thinking"`
	} `json:"chat_template_kwargs"`
}

// unsupported are the OpenAI fields gelo does not implement, kept raw so
// that check can tell a no-op value (null, [], false, ...) from a request
// for the feature.
type unsupported struct {
	Tools          json.RawMessage `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	Functions      json.RawMessage `json:"functions"`
	FunctionCall   json.RawMessage `json:"function_call"`
	ResponseFormat json.RawMessage `json:"response_format"`
	LogitBias      json.RawMessage `json:"logit_bias"`
	Echo           json.RawMessage `json:"echo"`
	Suffix         json.RawMessage `json:"suffix"`
	BestOf         json.RawMessage `json:"best_of"`
}

// unsupportedField is one field of unsupported: its name, what it asks
// for, and the values that ask for nothing (compact JSON; null always).
type unsupportedField struct {
	name, feature string
	raw           json.RawMessage
	noop          []string
}

// fields lists u's fields; n is the request's n (best_of equal to n asks
// for nothing more).
func (u *unsupported) fields(n int) []unsupportedField {
	return []unsupportedField{
		{"tools", "tool calls", u.Tools, []string{"[]"}},
		{"tool_choice", "tool calls", u.ToolChoice, []string{`"none"`, `"auto"`}},
		{"functions", "function calls", u.Functions, []string{"[]"}},
		{"function_call", "function calls", u.FunctionCall, []string{`"none"`, `"auto"`}},
		{"response_format", "structured output (JSON mode, JSON schema)", u.ResponseFormat, []string{`{"type":"text"}`}},
		{"logit_bias", "logit bias", u.LogitBias, []string{"{}"}},
		{"echo", "echoing the prompt", u.Echo, []string{"false"}},
		{"suffix", "insertion (a suffix after the completion)", u.Suffix, []string{`""`}},
		{"best_of", "best-of sampling", u.BestOf, []string{fmt.Sprint(n)}},
	}
}

// check refuses the first field set to a value that is not a no-op.
func (u *unsupported) check(n int) *apiError {
	for _, f := range u.fields(n) {
		if len(f.raw) == 0 {
			continue
		}
		var c bytes.Buffer
		if json.Compact(&c, f.raw) != nil || c.String() == "null" || slices.Contains(f.noop, c.String()) {
			continue // malformed JSON was refused by the decoder already
		}
		e := badRequest(f.name, "%s is not supported: this server does not implement %s (leave it out, or send %s)", f.name, f.feature, strings.Join(append([]string{"null"}, f.noop...), " or "))
		e.Code = "unsupported_parameter"
		return e
	}
	return nil
}

// request is a parsed, validated request: what the scheduler needs.
type request struct {
	chat         bool
	model        string
	prompt       []int32
	maxTokens    int // 0: up to the context
	sampler      runtime.SamplerOptions
	seed         *uint64
	stop         []string
	n            int
	stream       bool
	includeUsage bool
	logprobs     bool
	topLogprobs  int
	tokenIDs     bool
}

// decodeStrict decodes a JSON object from body into v; unknown fields are
// ignored (as the reference servers do). The body must be valid UTF-8
// (encoding/json would silently replace invalid bytes).
func decodeStrict(body []byte, v any) *apiError {
	if !utf8.Valid(body) {
		return badRequest("", "request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badRequest(te.Field, "field %s: expected %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return badRequest("", "request body is not valid JSON: %v", err)
	}
	if dec.More() {
		return badRequest("", "request body holds data after the JSON object")
	}
	return nil
}

// parseChat parses a /v1/chat/completions body and encodes its messages
// with the chat template (message text encoded as text: control tokens
// written inside a message open no turn, as gelo generate --chat does).
func parseChat(body []byte, tok *tokenizer.Tokenizer, maxContext int) (*request, *apiError) {
	var raw struct {
		params
		Messages []chatMessage `json:"messages"`
	}
	if e := decodeStrict(body, &raw); e != nil {
		return nil, e
	}
	if len(raw.Messages) == 0 {
		return nil, badRequest("messages", "messages must hold at least one message")
	}
	msgs := make([]tokenizer.Message, 0, len(raw.Messages))
	for i, m := range raw.Messages {
		switch m.Role {
		case "system", "user", "assistant", "tool", "developer":
		default:
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d]: role %q: want system, developer, user, assistant or tool", i, m.Role)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: %v", i, err)
		}
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		msgs = append(msgs, tokenizer.Message{Role: role, Content: text, ReasoningContent: m.ReasoningContent})
	}
	r, e := raw.params.check(true)
	if e != nil {
		return nil, e
	}
	if tok == nil {
		return nil, badRequest("messages", "this model has no tokenizer, so it cannot take chat messages: use /v1/completions with a prompt of token ids")
	}
	var all strings.Builder
	for _, m := range msgs {
		all.WriteString(m.Content)
	}
	if e := overContext(tok, all.String(), maxContext, "messages"); e != nil {
		return nil, e
	}
	think := raw.ChatTemplateKwargs != nil && raw.ChatTemplateKwargs.EnableThinking
	r.prompt = toI32(tok.EncodeChatSafe(msgs, true, think))
	return r, nil
}

// contentText reads a message's content: a string, an array of text
// parts, or null.
func contentText(c json.RawMessage) (string, error) {
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(c, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", errors.New("want a string or an array of text parts")
	}
	var b []byte
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("part %d has type %q: only text parts are supported", i, p.Type)
		}
		b = append(b, p.Text...)
	}
	return string(b), nil
}

// parseCompletion parses a /v1/completions body: prompt is a string, an
// array of one string, an array of token ids, or an array of one such
// array (one prompt per request).
func parseCompletion(body []byte, tok *tokenizer.Tokenizer, vocab, maxContext int) (*request, *apiError) {
	var raw struct {
		params
		Prompt json.RawMessage `json:"prompt"`
	}
	if e := decodeStrict(body, &raw); e != nil {
		return nil, e
	}
	r, e := raw.params.check(false)
	if e != nil {
		return nil, e
	}
	p := raw.Prompt
	var one []json.RawMessage
	if json.Unmarshal(p, &one) == nil && len(one) == 1 && len(bytes.TrimSpace(one[0])) > 0 && (one[0][0] == '"' || one[0][0] == '[') {
		p = one[0] // ["text"] or [[1, 2]]
	}
	var s string
	var ids []int64
	switch {
	case len(p) == 0 || string(p) == "null":
		return nil, badRequest("prompt", "prompt is required")
	case json.Unmarshal(p, &s) == nil:
		if tok == nil {
			return nil, badRequest("prompt", "this model has no tokenizer: give the prompt as an array of token ids")
		}
		if e := overContext(tok, s, maxContext, "prompt"); e != nil {
			return nil, e
		}
		r.prompt = toI32(tok.Encode(s))
	case json.Unmarshal(p, &ids) == nil:
		for i, id := range ids {
			if id < 0 || id >= int64(vocab) {
				return nil, badRequest("prompt", "prompt token %d at index %d is outside the vocabulary [0, %d)", id, i, vocab)
			}
			r.prompt = append(r.prompt, int32(id))
		}
	default:
		return nil, badRequest("prompt", "prompt must be a string or an array of token ids (one prompt per request)")
	}
	if len(r.prompt) == 0 {
		return nil, badRequest("prompt", "prompt is empty")
	}
	return r, nil
}

// check validates the shared fields into a request.
func (p *params) check(chat bool) (*request, *apiError) {
	r := &request{chat: chat, model: p.Model, n: 1, stream: p.Stream, tokenIDs: p.ReturnTokenIDs}
	r.sampler.Temperature = 1 // the API's default
	if p.MaxCompletionTokens != nil {
		p.MaxTokens = p.MaxCompletionTokens
	}
	if p.MaxTokens != nil {
		if *p.MaxTokens < 1 {
			return nil, badRequest("max_tokens", "max_tokens must be at least 1, got %d", *p.MaxTokens)
		}
		r.maxTokens = *p.MaxTokens
	}
	if p.N != nil {
		if *p.N < 1 || *p.N > maxChoices {
			return nil, badRequest("n", "n must be in [1, %d], got %d", maxChoices, *p.N)
		}
		r.n = *p.N
	}
	if e := p.unsupported.check(r.n); e != nil {
		return nil, e
	}
	so := &r.sampler
	if p.Temperature != nil {
		so.Temperature = *p.Temperature
	}
	if p.TopP != nil && *p.TopP != 1 {
		so.TopP = *p.TopP
	}
	if p.TopK != nil && *p.TopK > 0 { // -1 (vLLM) and 0 mean off
		so.TopK = *p.TopK
	}
	if p.MinP != nil {
		so.MinP = *p.MinP
	}
	if p.FrequencyPenalty != nil {
		so.FrequencyPenalty = *p.FrequencyPenalty
	}
	if p.PresencePenalty != nil {
		so.PresencePenalty = *p.PresencePenalty
	}
	if p.RepetitionPenalty != nil {
		so.RepetitionPenalty = *p.RepetitionPenalty
	}
	for _, f := range []struct {
		name string
		v    float64
		lo   float64
		hi   float64
	}{{"temperature", so.Temperature, 0, 2}, {"frequency_penalty", so.FrequencyPenalty, -2, 2}, {"presence_penalty", so.PresencePenalty, -2, 2}} {
		if f.v < f.lo || f.v > f.hi || math.IsNaN(f.v) {
			return nil, badRequest(f.name, "%s must be in [%g, %g], got %g", f.name, f.lo, f.hi, f.v)
		}
	}
	if err := so.Validate(); err != nil {
		return nil, badRequest("", "%v", err)
	}
	if p.Seed != nil {
		s := uint64(*p.Seed)
		r.seed = &s
	}
	if len(p.Stop) > 0 && string(p.Stop) != "null" {
		var one string
		if json.Unmarshal(p.Stop, &one) == nil {
			r.stop = []string{one}
		} else if json.Unmarshal(p.Stop, &r.stop) != nil {
			return nil, badRequest("stop", "stop must be a string or an array of strings")
		}
		if len(r.stop) > maxStops {
			return nil, badRequest("stop", "at most %d stop sequences, got %d", maxStops, len(r.stop))
		}
		for i, s := range r.stop {
			if s == "" || len(s) > maxStopLen {
				return nil, badRequest("stop", "stop[%d] must be 1 to %d bytes long", i, maxStopLen)
			}
		}
	}
	if p.StreamOptions != nil && string(*p.StreamOptions) != "null" {
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(*p.StreamOptions, &so); err != nil {
			return nil, badRequest("stream_options", "stream_options must be an object")
		}
		r.includeUsage = so.IncludeUsage
	}
	if len(p.Logprobs) > 0 && string(p.Logprobs) != "null" {
		var b bool
		var k int
		switch {
		case chat && json.Unmarshal(p.Logprobs, &b) == nil:
			r.logprobs = b
		case !chat && json.Unmarshal(p.Logprobs, &k) == nil:
			if k < 0 || k > maxTopLogprobs {
				return nil, badRequest("logprobs", "logprobs must be in [0, %d], got %d", maxTopLogprobs, k)
			}
			r.logprobs, r.topLogprobs = true, k
		case chat:
			return nil, badRequest("logprobs", "logprobs must be a boolean")
		default:
			return nil, badRequest("logprobs", "logprobs must be an integer")
		}
	}
	if p.TopLogprobs != nil {
		if !chat || *p.TopLogprobs < 0 || *p.TopLogprobs > maxTopLogprobs {
			return nil, badRequest("top_logprobs", "top_logprobs must be in [0, %d] (chat only), got %d", maxTopLogprobs, *p.TopLogprobs)
		}
		if *p.TopLogprobs > 0 && !r.logprobs {
			return nil, badRequest("top_logprobs", "top_logprobs needs logprobs: true")
		}
		r.topLogprobs = *p.TopLogprobs
	}
	return r, nil
}

func toI32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, v := range ids {
		out[i] = int32(v)
	}
	return out
}

// overContext refuses a text whose token count is bound, from its length
// alone (Tokenizer.MinTokens), to leave no room in a context of
// maxContext tokens: such a prompt is refused before it is tokenized, so
// a body of megabytes costs its length, not its tokenization (0: no
// bound).
func overContext(tok *tokenizer.Tokenizer, text string, maxContext int, param string) *apiError {
	if maxContext <= 0 {
		return nil
	}
	n := tok.MinTokens(text)
	if n < maxContext {
		return nil
	}
	e := badRequest(param, "the prompt is at least %d tokens, the context %d: it leaves no room for a new token", n, maxContext)
	e.Code, e.NPromptTokens, e.NCtx = "context_length_exceeded", n, maxContext
	return e
}
