package serve

import (
	"testing"

	"gelo/serve/internal/testtok"
)

// FuzzParseRequest: the request parsers (outside data) never panic, and a
// request they accept is within the limits they promise.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"temperature":0}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stop":["a","b"],"n":2,"logprobs":true,"top_logprobs":3}`,
		`{"prompt":"the ","stream":true,"stream_options":{"include_usage":true},"logprobs":2,"seed":-1}`,
		`{"prompt":[[1,2,3]],"top_k":-1,"top_p":0.5,"min_p":0.1,"repetition_penalty":1.1}`,
		`{"prompt":["x"],"max_completion_tokens":3,"frequency_penalty":1,"presence_penalty":-1}`,
		`{"prompt": 5}`, `[]`, `{"messages": null}`, "{\"prompt\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	tok, err := testtok.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, r := range []*request{mustNil(parseChat(body, tok, 4096)), mustNil(parseCompletion(body, tok, 512, 4096))} {
			if r == nil {
				continue
			}
			if r.n < 1 || r.n > maxChoices || len(r.stop) > maxStops || r.topLogprobs > maxTopLogprobs || r.maxTokens < 0 {
				t.Fatalf("accepted out-of-range request %+v", r)
			}
			if err := r.sampler.Validate(); err != nil {
				t.Fatalf("accepted invalid sampler options: %v", err)
			}
			for _, id := range r.prompt {
				if id < 0 || id >= 512 {
					t.Fatalf("prompt token %d outside the vocabulary", id)
				}
			}
		}
	})
}

func mustNil(r *request, e *apiError) *request {
	if e != nil {
		return nil
	}
	return r
}
