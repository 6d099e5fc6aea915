package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"gelo/runtime"
	"gelo/tokenizer"
)

// responder turns a request's events into its HTTP answer.
type responder struct {
	s      *Server
	w      http.ResponseWriter
	rc     *http.ResponseController
	req    *request
	id     string
	chat   bool
	cancel context.CancelFunc
	tok    *tokenizer.Tokenizer
}

// indexed is an event of choice i.
type indexed struct {
	i  int
	ev event
}

// merge fans the choices' channels into one; it closes when they all do.
func merge(chans []chan event) <-chan indexed {
	if len(chans) == 1 { // the common case: no goroutine
		out := make(chan indexed, cap(chans[0]))
		go func() {
			for ev := range chans[0] {
				out <- indexed{0, ev}
			}
			close(out)
		}()
		return out
	}
	total := 0
	for _, c := range chans {
		total += cap(c)
	}
	out := make(chan indexed, total)
	left := make(chan struct{}, len(chans))
	for i, c := range chans {
		go func() {
			for ev := range c {
				out <- indexed{i, ev}
			}
			left <- struct{}{}
		}()
	}
	go func() {
		for range chans {
			<-left
		}
		close(out)
	}()
	return out
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// choiceState accumulates one choice.
type choiceState struct {
	text     []byte
	tokens   []int
	logprobs []tokenLogprob
	finish   runtime.FinishReason
	started  bool
}

// whole answers a non-streaming request once every choice is done.
func (o *responder) whole(ctx context.Context, chans []chan event) {
	cs := make([]choiceState, len(chans))
	u := usage{}
	for ie := range merge(chans) {
		c, ev := &cs[ie.i], ie.ev
		if ev.err != nil {
			if ctx.Err() != nil {
				return // the client went away
			}
			o.cancel()
			o.rc.SetWriteDeadline(time.Now().Add(o.s.opt.WriteTimeout))
			if errors.Is(ev.err, errShuttingDown) {
				o.s.writeError(o.w, shuttingDownError())
				return
			}
			o.s.writeError(o.w, &apiError{Status: http.StatusInternalServerError, Message: "generation failed", Type: "server_error"})
			o.s.log.Error("generation failed", "id", o.id, "err", ev.err)
			return
		}
		c.text = append(c.text, ev.text...)
		c.tokens = append(c.tokens, ev.tokens...)
		c.logprobs = append(c.logprobs, ev.logprobs...)
		if ev.finish != "" {
			c.finish = ev.finish
			u.PromptTokens = ev.prompt
			u.CompletionTokens += ev.output
		}
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	choices := make([]map[string]any, len(cs))
	for i, c := range cs {
		ch := map[string]any{"index": i, "finish_reason": string(c.finish), "logprobs": nil}
		if o.chat {
			ch["message"] = map[string]any{"role": "assistant", "content": string(c.text)}
			if o.req.logprobs {
				ch["logprobs"] = o.chatLogprobs(c.logprobs)
			}
		} else {
			ch["text"] = string(c.text)
			if o.req.logprobs {
				ch["logprobs"] = o.legacyLogprobs(c.logprobs, 0)
			}
		}
		if o.req.tokenIDs || o.tok == nil {
			ch["token_ids"] = nonNil(c.tokens)
		}
		choices[i] = ch
	}
	o.w.Header().Set("Content-Type", "application/json")
	o.rc.SetWriteDeadline(time.Now().Add(o.s.opt.WriteTimeout))
	json.NewEncoder(o.w).Encode(map[string]any{"id": o.id, "object": o.object(false), "created": time.Now().Unix(),
		"model": o.s.opt.ModelName, "choices": choices, "usage": u})
}

func nonNil(t []int) []int {
	if t == nil {
		return []int{}
	}
	return t
}

func (o *responder) object(chunk bool) string {
	switch {
	case o.chat && chunk:
		return "chat.completion.chunk"
	case o.chat:
		return "chat.completion"
	}
	return "text_completion"
}

// stream answers with Server-Sent Events, one chunk per event.
func (o *responder) stream(ctx context.Context, chans []chan event) {
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	o.w.WriteHeader(http.StatusOK)
	if !o.flush() {
		return
	}
	created := time.Now().Unix()
	cs := make([]choiceState, len(chans))
	u := usage{}
	ping := time.NewTicker(o.s.opt.PingInterval)
	defer ping.Stop()
	events := merge(chans)
	offset := make([]int, len(chans))
	for {
		var ie indexed
		var ok bool
		select {
		case <-ctx.Done():
			return
		case <-ping.C:
			if !o.write(": ping\n\n") {
				return
			}
			continue
		case ie, ok = <-events:
		}
		if !ok {
			break
		}
		ping.Reset(o.s.opt.PingInterval)
		c, ev := &cs[ie.i], ie.ev
		if ev.err != nil {
			if ctx.Err() != nil {
				return
			}
			e := &apiError{Message: "generation failed", Type: "server_error"}
			if errors.Is(ev.err, errShuttingDown) {
				e = shuttingDownError()
			} else {
				o.s.log.Error("generation failed", "id", o.id, "err", ev.err)
			}
			b, _ := json.Marshal(map[string]any{"error": e})
			o.write("data: " + string(b) + "\n\n")
			o.write("data: [DONE]\n\n")
			o.cancel()
			return
		}
		ch := map[string]any{"index": ie.i, "finish_reason": nil, "logprobs": nil}
		if ev.finish != "" {
			ch["finish_reason"] = string(ev.finish)
			u.PromptTokens = ev.prompt
			u.CompletionTokens += ev.output
		}
		if o.chat {
			delta := map[string]any{"content": ev.text}
			if !c.started {
				delta["role"] = "assistant"
			}
			ch["delta"] = delta
			if o.req.logprobs && len(ev.logprobs) > 0 {
				ch["logprobs"] = o.chatLogprobs(ev.logprobs)
			}
		} else {
			ch["text"] = ev.text
			if o.req.logprobs && len(ev.logprobs) > 0 {
				ch["logprobs"] = o.legacyLogprobs(ev.logprobs, offset[ie.i])
			}
		}
		offset[ie.i] += len(ev.text)
		if o.req.tokenIDs || o.tok == nil {
			ch["token_ids"] = nonNil(ev.tokens)
		}
		c.started = true
		chunk := map[string]any{"id": o.id, "object": o.object(true), "created": created, "model": o.s.opt.ModelName,
			"choices": []any{ch}}
		if o.req.includeUsage {
			chunk["usage"] = nil
		}
		if !o.send(chunk) {
			return
		}
	}
	if o.req.includeUsage {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		if !o.send(map[string]any{"id": o.id, "object": o.object(true), "created": created, "model": o.s.opt.ModelName,
			"choices": []any{}, "usage": u}) {
			return
		}
	}
	o.write("data: [DONE]\n\n")
}

// send writes one data line.
func (o *responder) send(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		o.cancel()
		return false
	}
	return o.write("data: " + string(b) + "\n\n")
}

// write writes and flushes under the write deadline; on failure (a
// client gone, or one that stopped reading) it cancels the request, whose
// slot the scheduler frees at its next step.
func (o *responder) write(s string) bool {
	o.rc.SetWriteDeadline(time.Now().Add(o.s.opt.WriteTimeout))
	if _, err := o.w.Write([]byte(s)); err != nil {
		o.cancel()
		return false
	}
	return o.flush()
}

func (o *responder) flush() bool {
	if err := o.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		o.cancel()
		return false
	}
	return true
}

// tokenText is a token's text as logprobs show it, and its bytes.
func (o *responder) tokenText(id int) (string, []int) {
	if o.tok == nil {
		return "token_id:" + strconv.Itoa(id), nil
	}
	b, _ := o.tok.TokenBytes(id)
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	return string(b), ints
}

func (o *responder) chatLogprobs(lps []tokenLogprob) map[string]any {
	content := make([]map[string]any, len(lps))
	for i, lp := range lps {
		t, b := o.tokenText(lp.id)
		top := make([]map[string]any, len(lp.top))
		for j, a := range lp.top {
			tt, tb := o.tokenText(a.id)
			top[j] = map[string]any{"token": tt, "logprob": a.logprob, "bytes": tb}
		}
		content[i] = map[string]any{"token": t, "logprob": lp.logprob, "bytes": b, "top_logprobs": top}
	}
	return map[string]any{"content": content}
}

func (o *responder) legacyLogprobs(lps []tokenLogprob, offset int) map[string]any {
	toks := make([]string, len(lps))
	vals := make([]float64, len(lps))
	tops := make([]map[string]float64, len(lps))
	offs := make([]int, len(lps))
	for i, lp := range lps {
		toks[i], _ = o.tokenText(lp.id)
		vals[i] = lp.logprob
		offs[i] = offset
		offset += len(toks[i])
		tops[i] = map[string]float64{}
		for _, a := range lp.top {
			t, _ := o.tokenText(a.id)
			tops[i][t] = a.logprob
		}
	}
	return map[string]any{"tokens": toks, "token_logprobs": vals, "top_logprobs": tops, "text_offset": offs}
}
