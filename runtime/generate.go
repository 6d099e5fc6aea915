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

// Generate prefills the prompt and decodes (greedily, or with the
// options' sampler) until an EOS token,
// MaxTokens new tokens, or the context is full. It returns the new tokens.
func (s *Session) Generate(prompt []int32, opt GenerateOptions) ([]int, error) {
	if opt.MaxTokens <= 0 {
		return nil, fmt.Errorf("generate: max tokens must be positive, got %d", opt.MaxTokens)
	}
	logits, err := s.Prefill(prompt)
	if err != nil {
		return nil, err
	}
	if len(logits) != s.Vocab() {
		return nil, errors.New("generate: prefill returns logits for every row; trace without AllLogits")
	}
	var out []int
	history := make([]int, 0, len(prompt)+opt.MaxTokens)
	for _, t := range prompt {
		history = append(history, int(t))
	}
	for {
		tok, err := opt.pick(logits, history)
		if err != nil {
			return out, fmt.Errorf("generate: %w", err)
		}
		history = append(history, tok)
		out = append(out, tok)
		if opt.Emit != nil {
			if err := opt.Emit(tok); err != nil {
				return out, err
			}
		}
		if slices.Contains(opt.EOS, tok) || len(out) >= opt.MaxTokens || s.Pos() >= s.MaxContext() {
			return out, nil
		}
		if logits, err = s.Decode(int32(tok)); err != nil {
			return out, err
		}
	}
}
