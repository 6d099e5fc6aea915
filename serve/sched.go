package serve

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gelo/lower/cpu/probe"
	"gelo/runtime"
	"gelo/tokenizer"
)

// The scheduling policy (continuous batching over one runtime.Batch):
//
//   - A sequence holds one of the batch's MaxBatch KV slots from its
//     prefill until it finishes or its client goes away; it takes the
//     lowest free slot.
//   - Between two decode steps the scheduler retires finished and
//     cancelled sequences (their slot is zeroised: runtime.Batch.Release),
//     gives free slots to waiting ones in arrival order, and prefills
//     them in chunks of at most PrefillChunk tokens, in arrival order:
//     while sequences decode, chunks until PrefillChunk tokens are spent
//     in the step (under 2 x PrefillChunk tokens of prefill before a
//     decode step, so a long prompt cannot stall the batch for its whole
//     prefill, and a burst of short prompts joins in a few steps); with
//     nothing decoding, chunks back to back. A sequence part-way through
//     its prefill is parked (runtime.Batch.Park). Chunk boundaries depend
//     only on the prompt's length, so a request is computed the same way
//     whatever else runs.
//   - A decode step spans slots 0..w-1 with w the highest occupied slot
//     plus one, rounded up to a power of two (runtime.Batch.DecodePrefix):
//     the width follows the load, and each width has its own captured steps.
//   - Events go to each request through a channel with room for all of
//     its tokens, so a send never blocks and a slow reader never stalls
//     the batch; the handler writes with deadlines and cancels on failure.

// event is what a sequence reports to its handler: a text delta with the
// tokens that made it, and on the last event the finish reason.
type event struct {
	text     string
	tokens   []int
	logprobs []tokenLogprob
	finish   runtime.FinishReason // set on the last event
	err      error                // set on the last event when the run failed
	prompt   int                  // prompt tokens (last event)
	output   int                  // completion tokens (last event)
}

// tokenLogprob is the log-probability of a sampled token and of the most
// likely alternatives, computed in the TEE from the raw logits.
type tokenLogprob struct {
	id      int
	logprob float64
	top     []idLogprob
}

type idLogprob struct {
	id      int
	logprob float64
}

// seq is one choice of a request in the scheduler.
type seq struct {
	ctx     context.Context
	req     *request
	index   int
	events  chan event
	enq     time.Time
	sampler *runtime.Sampler

	slot    int
	done    int // prompt tokens prefilled
	history []int
	out     []int
	next    int32
	dec     *tokenizer.StreamDecoder
	pend    string // decoded text held back (a possible stop-string prefix)
	first   time.Time
	last    time.Time
}

// scheduler owns the batch; only its goroutine touches it.
type scheduler struct {
	bt       *runtime.Batch
	tok      *tokenizer.Tokenizer
	eos      []int
	maxT     int
	vocab    int
	maxQueue int
	log      *slog.Logger
	met      *metrics

	mu      sync.Mutex
	waiting []*seq
	wake    chan struct{}
	closed  bool

	nRunning atomic.Int32 // occupied slots, for Load
	// aborted: a device result failed its integrity probe; the engine
	// wiped its key and refuses every run, so the server refuses work.
	aborted atomic.Bool
	chunk   int    // prefill chunk, tokens
	pre     []*seq // sequences part-way through their prefill, in arrival order
	slots   []*seq // by slot; nil: free
	scratch []float64
	stepTok []int32
}

func newScheduler(bt *runtime.Batch, tok *tokenizer.Tokenizer, eos []int, maxT, vocab, maxQueue, chunk int, log *slog.Logger, met *metrics) (*scheduler, error) {
	s := &scheduler{bt: bt, tok: tok, eos: eos, maxT: maxT, vocab: vocab, maxQueue: maxQueue, chunk: chunk, log: log, met: met,
		wake: make(chan struct{}, 1), slots: make([]*seq, bt.Size()), stepTok: make([]int32, bt.Size())}
	for i := range bt.Size() { // every slot starts held: no decode step advances it
		if err := bt.Release(i); err != nil {
			return nil, err
		}
	}
	return s, nil
}

var errQueueFull = errors.New("queue full")

// errShuttingDown refuses work once the server stops admitting it, and
// ends what still runs when it stops (Server.Shutdown, Server.Close).
var errShuttingDown = errors.New("the server is shutting down; retry the request (on another replica, or once this one is back)")

// errAborted refuses work once a probe failed.
var errAborted = errors.New("the session was aborted: a device result failed its integrity probe (restart the server for a new session key)")

// failed notes a run's error: a failed integrity probe aborts the server's
// session for good (logged once).
func (s *scheduler) failed(err error) {
	if errors.Is(err, probe.ErrFailed) && !s.aborted.Swap(true) {
		s.log.Error("integrity failure: the session is aborted; every request is refused until the server restarts")
	}
}

// submit queues n sequences of r (one per choice) and returns their
// event channels; errQueueFull when they do not fit.
func (s *scheduler) submit(ctx context.Context, r *request) ([]chan event, error) {
	maxTok := r.maxTokens
	if maxTok == 0 || maxTok > s.maxT {
		maxTok = s.maxT
	}
	seqs := make([]*seq, r.n)
	chans := make([]chan event, r.n)
	for i := range seqs {
		key := make([]byte, 32)
		if r.seed != nil {
			// A seed repeats a run; choice i gets its own stream.
			key = binary.BigEndian.AppendUint64(runtime.SeedKey(*r.seed), uint64(i))
		} else if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("sampler key: %w", err)
		}
		sp, err := runtime.NewSampler(r.sampler, key)
		if err != nil {
			return nil, err
		}
		chans[i] = make(chan event, maxTok+2) // room for every token: a send never blocks
		seqs[i] = &seq{ctx: ctx, req: r, index: i, events: chans[i], enq: time.Now(), sampler: sp, slot: -1}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errShuttingDown
	}
	if s.aborted.Load() {
		s.mu.Unlock()
		for _, q := range seqs {
			q.sampler.Zeroise()
		}
		return nil, errAborted
	}
	if len(s.waiting)+len(seqs) > s.maxQueue {
		s.mu.Unlock()
		for _, q := range seqs {
			q.sampler.Zeroise()
		}
		return nil, errQueueFull
	}
	s.waiting = append(s.waiting, seqs...)
	s.met.waiting.Set(float64(len(s.waiting)))
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return chans, nil
}

// close stops admissions (Server.Close then ends the loop, which fails
// what is still running).
func (s *scheduler) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run is the scheduler loop; it returns when ctx ends.
func (s *scheduler) run(ctx context.Context) {
	for {
		s.retireCancelled()
		s.assign()
		s.prefillChunks(s.decoding() > 0)
		if s.running() == 0 {
			select {
			case <-ctx.Done():
				s.drain(context.Cause(ctx))
				return
			case <-s.wake:
			}
			continue
		}
		if ctx.Err() != nil {
			s.drain(context.Cause(ctx))
			return
		}
		if s.decoding() > 0 {
			s.step()
		}
	}
}

// decoding counts the sequences past their prefill.
func (s *scheduler) decoding() int {
	n := 0
	for _, q := range s.slots {
		if q != nil && q.decoding() {
			n++
		}
	}
	return n
}

func (q *seq) decoding() bool { return q.done == len(q.req.prompt) }

// setRunning publishes the occupied slot count.
func (s *scheduler) setRunning() {
	n := s.running()
	s.nRunning.Store(int32(n))
	s.met.running.Set(float64(n))
}

// running counts occupied slots.
func (s *scheduler) running() int {
	n := 0
	for _, q := range s.slots {
		if q != nil {
			n++
		}
	}
	return n
}

// retireCancelled frees the slots of sequences whose client went away,
// and drops such sequences from the queue.
func (s *scheduler) retireCancelled() {
	for i, q := range s.slots {
		if q != nil && q.ctx.Err() != nil {
			s.retire(i, event{err: q.ctx.Err()})
		}
	}
	s.mu.Lock()
	kept := s.waiting[:0]
	for _, q := range s.waiting {
		if q.ctx.Err() != nil {
			q.sampler.Zeroise()
			q.events <- event{err: q.ctx.Err()}
			close(q.events) // ends the handler's merge
			continue
		}
		kept = append(kept, q)
	}
	clear(s.waiting[len(kept):])
	s.waiting = kept
	s.met.waiting.Set(float64(len(s.waiting)))
	s.mu.Unlock()
}

// assign gives free slots to waiting sequences, in arrival order; each
// waits (parked) for its prefill chunks.
func (s *scheduler) assign() {
	for {
		slot := slices.Index(s.slots, nil)
		if slot < 0 {
			return
		}
		s.mu.Lock()
		if len(s.waiting) == 0 {
			s.mu.Unlock()
			return
		}
		q := s.waiting[0]
		s.waiting = slices.Delete(s.waiting, 0, 1)
		s.met.waiting.Set(float64(len(s.waiting)))
		s.mu.Unlock()
		q.slot, q.done = slot, 0
		s.slots[slot] = q
		s.pre = append(s.pre, q)
		s.setRunning()
	}
}

// prefillChunks prefills the oldest sequences waiting for it: chunks
// until PrefillChunk tokens are spent when budgeted (others decode), else
// until none is left.
func (s *scheduler) prefillChunks(budgeted bool) {
	spent := 0
	for len(s.pre) > 0 {
		q := s.pre[0]
		p := q.req.prompt
		n := min(s.chunk, len(p)-q.done)
		logits, err := s.bt.Prefill(q.slot, p[q.done:q.done+n])
		if err != nil {
			s.log.Error("prefill failed", "slot", q.slot, "prompt_tokens", len(p), "err", err)
			s.failed(err)
			s.retire(q.slot, event{err: fmt.Errorf("prefill: %w", err)})
			continue
		}
		q.done += n
		spent += n
		s.met.tokensIn.Add(float64(n))
		if q.done < len(p) {
			if err := s.bt.Park(q.slot); err != nil {
				s.retire(q.slot, event{err: fmt.Errorf("prefill: %w", err)})
			}
		} else {
			s.pre = s.pre[1:]
			q.history = make([]int, 0, len(p)+16)
			for _, t := range p {
				q.history = append(q.history, int(t))
			}
			if s.tok != nil {
				q.dec = s.tok.NewStreamDecoderWithOptions(tokenizer.DecodeOptions{SkipSpecialTokens: true})
			}
			s.sample(q, logits)
		}
		if budgeted && spent >= s.chunk {
			return
		}
	}
}

// step decodes one token for every running sequence.
func (s *scheduler) step() {
	hi := 0
	active := 0
	for i, q := range s.slots {
		s.stepTok[i] = 0 // a free or parked slot: its row is scratch
		if q != nil && q.decoding() {
			hi = i + 1
			active++
			s.stepTok[i] = q.next
		}
	}
	w := min(1<<bits.Len(uint(hi-1)), len(s.slots))
	s.met.batch.Observe(float64(active))
	logits, err := s.bt.DecodePrefix(s.stepTok[:w])
	if err != nil {
		s.log.Error("decode step failed", "width", w, "err", err)
		s.failed(err)
		for i, q := range s.slots {
			if q != nil {
				s.retire(i, event{err: fmt.Errorf("decode: %w", err)})
			}
		}
		return
	}
	for i := range w {
		if q := s.slots[i]; q != nil && q.decoding() {
			s.sample(q, logits[i*s.vocab:(i+1)*s.vocab])
		} else {
			clear(logits[i*s.vocab : (i+1)*s.vocab])
		}
	}
}

// sample picks q's next token from its logits row (consumed: the sampler
// zeroises it), reports it, and retires q when it is done.
func (s *scheduler) sample(q *seq, logits []float32) {
	var lp *tokenLogprob
	if q.req.logprobs {
		lp = s.logprob(logits, q.req.topLogprobs)
	}
	tok, err := q.sampler.Sample(logits, q.history)
	if err != nil {
		s.retire(q.slot, event{err: fmt.Errorf("sample: %w", err)})
		return
	}
	if lp != nil {
		lp.id = tok
		lp.logprob = s.lastLogprob(tok)
	}
	clear(s.scratch)
	now := time.Now()
	if q.first.IsZero() {
		q.first = now
		s.met.ttft.Observe(now.Sub(q.enq).Seconds())
	} else {
		s.met.itl.Observe(now.Sub(q.last).Seconds())
	}
	q.last = now
	s.met.tokensOut.Inc()
	q.history = append(q.history, tok)
	q.out = append(q.out, tok)
	q.next = int32(tok)
	ev := event{tokens: []int{tok}}
	if lp != nil {
		ev.logprobs = []tokenLogprob{*lp}
	}
	var finish runtime.FinishReason
	isEOS := slices.Contains(s.eos, tok)
	if !isEOS && q.dec != nil {
		q.pend += q.dec.Push(tok)
	}
	stopped := q.stopAt()
	switch {
	case isEOS || stopped:
		finish = runtime.FinishStop
	case (q.req.maxTokens > 0 && len(q.out) >= q.req.maxTokens) || s.bt.Pos(q.slot) >= s.maxT:
		finish = runtime.FinishLength
	}
	if finish == "" {
		ev.text = q.take()
		q.events <- ev
		return
	}
	if !stopped && q.dec != nil {
		q.pend += q.dec.Flush()
		if q.stopAt() {
			finish = runtime.FinishStop
		}
	}
	ev.text, q.pend = q.pend, ""
	ev.finish = finish
	s.retire(q.slot, ev)
}

// stopAt looks for a stop string in the held-back text; when one is there
// it cuts the text before it and reports true.
func (q *seq) stopAt() bool {
	cut := -1
	for _, st := range q.req.stop {
		if i := strings.Index(q.pend, st); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut < 0 {
		return false
	}
	q.pend = q.pend[:cut]
	return true
}

// take returns the text that can go out: everything but the longest
// suffix that could still begin a stop string.
func (q *seq) take() string {
	hold := 0
	for _, st := range q.req.stop {
		for k := min(len(st)-1, len(q.pend)); k > hold; k-- {
			if strings.HasSuffix(q.pend, st[:k]) {
				hold = k
				break
			}
		}
	}
	out := q.pend[:len(q.pend)-hold]
	q.pend = q.pend[len(q.pend)-hold:]
	return out
}

// retire ends the sequence in slot: its last event, its slot zeroised and
// freed, its sampler wiped.
func (s *scheduler) retire(slot int, ev event) {
	q := s.slots[slot]
	s.slots[slot] = nil
	s.pre = slices.DeleteFunc(s.pre, func(p *seq) bool { return p == q })
	if err := s.bt.Release(slot); err != nil {
		s.log.Error("release failed", "slot", slot, "err", err)
	}
	s.setRunning()
	q.sampler.Zeroise()
	ev.prompt, ev.output = len(q.req.prompt), len(q.out)
	if ev.err == nil {
		s.met.e2e.Observe(time.Since(q.enq).Seconds())
	}
	clear(q.history)
	select {
	case q.events <- ev:
	default: // cannot happen: the channel has room for every token
	}
	close(q.events)
}

// drain fails every sequence when the scheduler stops.
func (s *scheduler) drain(err error) {
	for i, q := range s.slots {
		if q != nil {
			s.retire(i, event{err: err})
		}
	}
	s.mu.Lock()
	w := s.waiting
	s.waiting, s.closed = nil, true
	s.mu.Unlock()
	for _, q := range w {
		q.sampler.Zeroise()
		q.events <- event{err: err}
		close(q.events)
	}
}

// logprob computes the log-softmax of the raw logits into the scratch
// (float64) and the top k alternatives. The scratch holds secret data and
// is cleared after the token is sampled.
func (s *scheduler) logprob(logits []float32, k int) *tokenLogprob {
	if cap(s.scratch) < len(logits) {
		s.scratch = make([]float64, len(logits))
	}
	z := s.scratch[:len(logits)]
	m := math.Inf(-1)
	for _, v := range logits {
		m = max(m, float64(v))
	}
	var sum float64
	for i, v := range logits {
		z[i] = float64(v) - m
		sum += math.Exp(z[i])
	}
	ls := math.Log(sum)
	for i := range z {
		z[i] -= ls
	}
	lp := &tokenLogprob{}
	if k > 0 {
		top := make([]idLogprob, 0, k+1)
		for i, v := range z {
			if len(top) == k && v <= top[k-1].logprob {
				continue
			}
			j, _ := slices.BinarySearchFunc(top, v, func(a idLogprob, t float64) int {
				if a.logprob >= t { // ties: the lower id first
					return -1
				}
				return 1
			})
			top = slices.Insert(top, j, idLogprob{i, v})
			if len(top) > k {
				top = top[:k]
			}
		}
		lp.top = top
	}
	return lp
}

// lastLogprob reads a token's log-probability from the scratch.
func (s *scheduler) lastLogprob(tok int) float64 {
	if tok < len(s.scratch) {
		return s.scratch[tok]
	}
	return math.Inf(-1)
}
