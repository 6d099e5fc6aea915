package lwe

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrPoolClosed is returned by Get on a closed pool.
var ErrPoolClosed = errors.New("lwe: pad pool closed")

// Pool fills pads ahead of time in TEE worker goroutines, so the online
// path of a row is only its encode, the device call and the decode. It
// hands out the pads of counters start, start + 1, ... in order; worker w
// fills the counters n with (n - start) mod workers = w into its own
// bounded set of buffers, so a pad's bytes depend only on (key, n), never
// on GOMAXPROCS, the worker count or scheduling. A worker behind by
// enough buffers fills them in one FillBatch (see work). The pool holds at
// most Size pads (Bytes, for the preflight); a buffer returns to its
// worker through Put.
type Pool struct {
	start   uint64
	in      int
	ready   []chan *Pad
	free    []chan *Pad
	gens    []*PadGen
	per     int
	padSize int
	stop    chan struct{}
	wg      sync.WaitGroup
	getMu   sync.Mutex // serialises Get, so pads leave in counter order
	mu      sync.Mutex // guards next and closed
	next    uint64
	closed  bool
	once    sync.Once
	batches atomic.Int64 // FillBatch calls made (for tests)
	filling atomic.Int64 // nanoseconds the workers spent filling pads (TakeFillTime)
	filled  atomic.Int64 // pads filled
	busy    atomic.Int32 // workers filling pads now (Idle)
	// tileRows is the batch a worker waits for (TiledRows, or its whole
	// share when that is smaller) while at least lowWater pads are ready:
	// half of what the share holds beyond tileRows.
	tileRows, lowWater int
}

// NewPool starts workers goroutines (at least one) filling up to size pads
// (rounded up to a multiple of workers) from counter start on, for the
// ciphertext kind name (see PadGen).
func NewPool(p Params, a *Public, hints []*Hint, key []byte, name string, start uint64, size, workers int) (*Pool, error) {
	workers = max(1, workers)
	if size < 1 {
		return nil, fmt.Errorf("lwe: pad pool: size %d", size)
	}
	pl := &Pool{start: start, next: start, in: a.In, per: (size + workers - 1) / workers, stop: make(chan struct{})}
	pl.tileRows = min(pl.per, TiledRows(p))
	pl.lowWater = (pl.per - pl.tileRows) / 2
	for range workers {
		g, err := NewPadGen(p, a, hints, key, name)
		if err != nil {
			pl.forget()
			return nil, err
		}
		pl.gens = append(pl.gens, g)
		pl.ready = append(pl.ready, make(chan *Pad, pl.per))
		free := make(chan *Pad, pl.per)
		for range pl.per {
			free <- g.New()
		}
		pl.free = append(pl.free, free)
	}
	pl.padSize = pl.gens[0].New().Bytes()
	for w := range workers {
		pl.wg.Go(func() { pl.work(w) })
	}
	return pl, nil
}

// work fills worker w's counters in order while it has free buffers.
// When it is behind, with enough buffers free for FillBatch to tile
// (tiled), it fills them all in one batch: the public matrices are then
// streamed once for the batch, not once per pad. Otherwise it fills them
// one at a time, each handed over as soon as it is made. Either way pad n
// holds the pad of counter n (FillBatch's words are Fill's).
func (pl *Pool) work(w int) {
	W := uint64(len(pl.gens))
	g := pl.gens[w]
	batch := make([]*Pad, 0, pl.per)
	tick := time.NewTimer(time.Hour)
	defer tick.Stop()
	for n := pl.start + uint64(w); ; {
		batch = batch[:0]
		select {
		case pad := <-pl.free[w]:
			batch = append(batch, pad)
		case <-pl.stop:
			return
		}
		// Collect free buffers: wait for a batch FillBatch tiles while
		// the ready pads last (above low water), else take what is free.
	more:
		for len(batch) < pl.per {
			if len(batch) >= pl.tileRows || len(pl.ready[w]) < pl.lowWater {
				for len(batch) < pl.per { // whatever else is free, without waiting
					select {
					case pad := <-pl.free[w]:
						batch = append(batch, pad)
					default:
						break more
					}
				}
				break
			}
			// (Woken now and then to look at the ready pads again: a
			// caller that takes pads without giving any back must not wait
			// on buffers this worker sits on.)
			tick.Reset(time.Millisecond)
			select {
			case pad := <-pl.free[w]:
				batch = append(batch, pad)
			case <-tick.C:
			case <-pl.stop:
				for _, pad := range batch {
					pad.Wipe()
				}
				return
			}
		}
		pl.busy.Add(1)
		if touched(len(batch), g.p.H, g.p.Lambda) {
			t0 := time.Now()
			err := g.fillBatch(n, W, batch, 1)
			pl.account(time.Since(t0), len(batch))
			for r, pad := range batch {
				pad.err, pad.Counter = err, n+uint64(r)*W
				pl.ready[w] <- pad // never blocks: ready holds all of w's buffers
			}
			pl.batches.Add(1)
			pl.busy.Add(-1)
			n += uint64(len(batch)) * W
			continue
		}
		for _, pad := range batch {
			select {
			case <-pl.stop: // the unfilled buffers left are wiped ones: dropped
				pl.busy.Add(-1)
				return
			default:
			}
			t0 := time.Now()
			pad.err = g.Fill(n, pad)
			pl.account(time.Since(t0), 1)
			pad.Counter = n
			pl.ready[w] <- pad
			n += W
		}
		pl.busy.Add(-1)
	}
}

// Idle reports whether no worker is filling pads now (each is waiting for
// buffers to come back, or for a batch's worth of them): a benchmark waits
// for it so a pass it times does not share the cores with a fill.
func (pl *Pool) Idle() bool { return pl.busy.Load() == 0 }

func (pl *Pool) account(d time.Duration, pads int) {
	pl.filling.Add(int64(d))
	pl.filled.Add(int64(pads))
}

// TakeFillTime returns the time the workers spent filling pads since the
// last call: the TEE work the pads cost, off the rows' critical path.
func (pl *Pool) TakeFillTime() time.Duration { return time.Duration(pl.filling.Swap(0)) }

// Size is the number of pads the pool holds.
func (pl *Pool) Size() int { return pl.per * len(pl.gens) }

// Bytes is the memory of the pool's pads (each worker's generator adds
// about 4.3 KiB of stream buffer and 8 h bytes of scratch, 8 h Size /
// workers when it batches, and a batch in flight lambda 4 KiB of copied
// public words, shared: see FillBatch).
func (pl *Pool) Bytes() int { return pl.Size() * pl.padSize }

// Get returns the pad of the next counter, waiting for its worker if it is
// not filled yet. The caller encodes and decodes with it, then gives it
// back with Put. Each worker has Size / workers buffers: a caller that
// holds all of one worker's pads without giving any back waits in Get
// until Close, so hold fewer than Size / workers at a time.
func (pl *Pool) Get() (*Pad, error) {
	pl.getMu.Lock()
	defer pl.getMu.Unlock()
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		return nil, ErrPoolClosed
	}
	n := pl.next
	pl.mu.Unlock()
	w := (n - pl.start) % uint64(len(pl.gens))
	var pad *Pad
	select {
	case pad = <-pl.ready[w]:
	case <-pl.stop:
		return nil, ErrPoolClosed
	}
	pl.mu.Lock()
	pl.next++ // the counter is spent even if its fill failed: no reuse
	pad.out = pad.err == nil && pad.Counter == n
	pl.mu.Unlock()
	if !pad.out {
		err := pad.err
		pad.Wipe()
		pl.free[w] <- pad
		return nil, fmt.Errorf("lwe: pad pool: counter %d (got %d): %w", n, pad.Counter, err)
	}
	return pad, nil
}

// Put wipes pad and returns its buffer to the worker that fills its
// counter's slot. A pad that is not out of this pool (given back twice,
// or never handed out) is refused and left untouched: its buffer may
// already be a worker's again.
func (pl *Pool) Put(pad *Pad) error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if !pad.out {
		return fmt.Errorf("lwe: pad pool: pad %p is not out of this pool (given back twice, or another's)", pad)
	}
	pad.Wipe()
	pad.out = false
	if pl.closed {
		return nil
	}
	if pad.Counter < pl.start || pad.Counter >= pl.next || len(pad.M) != pl.in || pad.Bytes() != pl.padSize {
		return fmt.Errorf("lwe: pad pool: pad %d is another pool's", pad.Counter)
	}
	select { // room for every buffer of the worker; full only for a foreign pad
	case pl.free[(pad.Counter-pl.start)%uint64(len(pl.gens))] <- pad:
		return nil
	default:
		return fmt.Errorf("lwe: pad pool: pad %d is another pool's", pad.Counter)
	}
}

// Close stops the workers and wipes every pad the pool holds and the
// generators' keys. Pads handed out and not given back are the caller's
// to wipe. Get after Close gives ErrPoolClosed.
func (pl *Pool) Close() {
	pl.once.Do(func() {
		pl.mu.Lock()
		pl.closed = true
		pl.mu.Unlock()
		close(pl.stop)
		pl.wg.Wait()
		pl.getMu.Lock() // a Get in flight has returned (stop)
		defer pl.getMu.Unlock()
		for w := range pl.gens {
			drain(pl.ready[w])
			drain(pl.free[w])
		}
		pl.forget()
	})
}

func drain(ch chan *Pad) {
	for {
		select {
		case p := <-ch:
			p.Wipe()
		default:
			return
		}
	}
}

func (pl *Pool) forget() {
	for _, g := range pl.gens {
		g.Forget()
	}
}
