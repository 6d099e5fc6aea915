package pool

import "sync/atomic"

// Warming what a coming run reads. Between two matvecs of a decode step
// the caller runs the small ops (norms, RoPE, the KV append, quantizing
// the next input) alone, together about a tenth of the step, while the
// other workers spin and the memory system idles. A Warmer hands them the
// first bytes of the next matvec's tasks to read meanwhile (Idle), so that
// the matvec finds its start in cache and the prefetchers already running.
// It computes nothing: whatever it reads, the run's results are the same.
const (
	// WarmChunk is the bytes read per Idle task, small so that the next
	// run (which ends the warming) waits little for the claimed ones.
	WarmChunk = 16 << 10
	// WarmTaskBytes is the most bytes warmed of each range, about what
	// the idle workers read in the longest gaps of a step.
	WarmTaskBytes = 512 << 10
)

// Warmer reads the starts of byte ranges of one buffer, WarmChunk bytes
// an Idle task, round-robin across the ranges (so that each worker's
// first task of the coming run finds as much in cache as the others').
// Reset sets the buffer, Add the ranges, Warm starts or resumes the
// reading. A Warmer is used with one pool, by its one caller.
type Warmer struct {
	data   []byte
	starts []int // each range's first byte
	ends   []int // and the end of its warmed bytes
	chunks int   // Idle tasks in all: the longest range's chunks, times the ranges
	base   int   // chunks read by earlier Idle runs (a prefix of the order)
	done   atomic.Int64
	sink   atomic.Uint32
}

// For reports whether w was last Reset with data (the same bytes).
func (w *Warmer) For(data []byte) bool {
	return len(data) > 0 && len(w.data) == len(data) && &w.data[0] == &data[0]
}

// Reset ends p's Idle run, if any, and sets w up to read data, with no
// ranges yet; a nil data forgets it (the next Warm of the same buffer
// starts over, as after the run that read it).
func (w *Warmer) Reset(p *Pool, data []byte) {
	p.Stop() // w's fields are no longer read
	w.data = data
	w.starts, w.ends, w.chunks, w.base = w.starts[:0], w.ends[:0], 0, 0
	w.done.Store(0)
}

// Add adds the range [start, end) of the data, of which the first
// WarmTaskBytes are read.
func (w *Warmer) Add(start, end int) {
	end = min(end, start+WarmTaskBytes, len(w.data))
	if start < 0 || end <= start {
		return
	}
	w.starts, w.ends = append(w.starts, start), append(w.ends, end)
	per := max(w.chunks/max(1, len(w.starts)-1), (end-start+WarmChunk-1)/WarmChunk)
	w.chunks = per * len(w.starts)
}

// Ranges returns the ranges Add kept (clipped to WarmTaskBytes), for
// tests: the caller must not change them.
func (w *Warmer) Ranges() (starts, ends []int) { return w.starts, w.ends }

// Warm has p's idle workers read the ranges while the caller goes on,
// going on from where the last Warm was ended; the next run on p ends it
// (Pool.Idle). It does nothing while the reading is still under way, and
// nothing at all for a pool of one worker or one whose helpers are parked.
func (w *Warmer) Warm(p *Pool) {
	if p.Idling(w) {
		return
	}
	p.Stop()
	w.base = int(w.done.Load())
	if w.base < w.chunks {
		p.Idle(w, w.chunks-w.base)
	}
}

// Do reads chunk base+task. Chunks past a short range's end read nothing.
func (w *Warmer) Do(task, _ int) {
	c := w.base + task
	r, k := c%len(w.starts), c/len(w.starts)
	off := w.starts[r] + k*WarmChunk
	end := min(off+WarmChunk, w.ends[r])
	var s byte
	data := w.data
	for i := off; i < end; i += 64 {
		s += data[i]
	}
	w.sink.Add(uint32(s))
	w.done.Add(1)
}
