package runtime

import (
	"errors"
	"fmt"
	"slices"
)

// Argmax returns the index of the largest logit; ties go to the lowest
// index, so greedy decoding is deterministic.
func Argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}

// GenerateOptions bound a greedy generation.
type GenerateOptions struct {
	MaxTokens int
	// EOS ids end generation; the EOS token is emitted and included.
	EOS []int
	// Emit receives each token as it is sampled (streaming); an error
	// stops generation.
	Emit func(token int) error
	// Sampler picks each token in the TEE (nil: greedy argmax). It sees
	// the prompt and the tokens generated so far as its penalty history,
	// and zeroises the logits it consumes.
	Sampler *Sampler
}

// pick chooses the next token.
func (opt *GenerateOptions) pick(logits []float32, history []int) (int, error) {
	if opt.Sampler == nil {
		return Argmax(logits), nil
	}
	return opt.Sampler.Sample(logits, history)
}

// FinishReason says why a generation stopped (the OpenAI API's names, so
// a server can pass it on).
type FinishReason string

const (
	// FinishStop: an EOS token was sampled.
	FinishStop FinishReason = "stop"
	// FinishLength: MaxTokens new tokens, or the context is full
	// (Completion.ContextFull says which).
	FinishLength FinishReason = "length"
)

// Completion is one sequence's generated tokens and why it stopped.
type Completion struct {
	Tokens []int
	Finish FinishReason
	// ContextFull: generation stopped because the KV cache was full,
	// before MaxTokens and without an EOS.
	ContextFull bool
}

// finish is the completion of out after its last token tok, or ok=false
// when generation goes on.
func (opt *GenerateOptions) finish(out []int, tok, pos, maxT int) (Completion, bool) {
	switch {
	case slices.Contains(opt.EOS, tok):
		return Completion{Tokens: out, Finish: FinishStop}, true
	case len(out) >= opt.MaxTokens:
		return Completion{Tokens: out, Finish: FinishLength}, true
	case pos >= maxT:
		return Completion{Tokens: out, Finish: FinishLength, ContextFull: true}, true
	}
	return Completion{}, false
}

// Generate prefills the prompt and decodes (greedily, or with the
// options' sampler) until an EOS token,
// MaxTokens new tokens, or the context is full. It returns the new tokens.
func (s *Session) Generate(prompt []int32, opt GenerateOptions) ([]int, error) {
	c, err := s.Complete(prompt, opt)
	return c.Tokens, err
}

// Complete is Generate that also says why generation stopped, so a
// truncation at the context is never silent.
func (s *Session) Complete(prompt []int32, opt GenerateOptions) (Completion, error) {
	if opt.MaxTokens <= 0 {
		return Completion{}, fmt.Errorf("generate: max tokens must be positive, got %d", opt.MaxTokens)
	}
	logits, err := s.Prefill(prompt)
	if err != nil {
		return Completion{}, err
	}
	if len(logits) != s.Vocab() {
		return Completion{}, errors.New("generate: prefill returns logits for every row; trace without AllLogits")
	}
	var out []int
	// The history never outgrows the context, whatever MaxTokens says.
	history := make([]int, 0, len(prompt)+min(opt.MaxTokens, max(s.MaxContext()-len(prompt), 0)+1))
	for _, t := range prompt {
		history = append(history, int(t))
	}
	for {
		tok, err := opt.pick(logits, history)
		if err != nil {
			return Completion{Tokens: out}, fmt.Errorf("generate: %w", err)
		}
		history = append(history, tok)
		out = append(out, tok)
		if opt.Emit != nil {
			if err := opt.Emit(tok); err != nil {
				return Completion{Tokens: out}, err
			}
		}
		if c, done := opt.finish(out, tok, s.Pos(), s.MaxContext()); done {
			return c, nil
		}
		if logits, err = s.Decode(int32(tok)); err != nil {
			return Completion{Tokens: out}, err
		}
	}
}
