package pool

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestWarmerRanges: Add clips each range to WarmTaskBytes and the data,
// drops empty ones, and counts the longest range's chunks for every range.
func TestWarmerRanges(t *testing.T) {
	p := New(1)
	defer p.Close()
	data := make([]byte, 3<<20)
	var w Warmer
	if w.For(data) {
		t.Fatal("a new Warmer is for data it was never given")
	}
	w.Reset(p, data)
	w.Add(0, 2<<20)
	w.Add(1<<20, 1<<20+40<<10)
	w.Add(5, 5)
	w.Add(-1, 10)
	w.Add(3<<20-100, 3<<20+100)
	starts, ends := w.Ranges()
	if want := []int{0, 1 << 20, 3<<20 - 100}; !slices.Equal(starts, want) {
		t.Fatalf("starts %v, want %v", starts, want)
	}
	if want := []int{WarmTaskBytes, 1<<20 + 40<<10, 3 << 20}; !slices.Equal(ends, want) {
		t.Fatalf("ends %v, want %v", ends, want)
	}
	if want := 3 * (WarmTaskBytes / WarmChunk); w.chunks != want {
		t.Fatalf("%d chunks, want %d", w.chunks, want)
	}
	if !w.For(data) || w.For(data[1:]) || w.For(data[:10]) {
		t.Fatal("For does not tell the data from other slices")
	}
	w.Warm(p) // one worker: nothing
	if d := w.done.Load(); d != 0 {
		t.Fatalf("a one-worker pool read %d chunks", d)
	}
	w.Reset(p, nil)
	if w.For(data) {
		t.Fatal("Reset(nil) did not forget the data")
	}
}

// TestWarmerResumes: Warm called again while the reading goes on does not
// restart it; after a Stop it goes on from the chunks already read, none
// read twice, until all are read.
func TestWarmerResumes(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 || runtime.NumCPU() < 2 {
		t.Skip("warming needs a spinning helper: at least 2 CPUs")
	}
	p := New(2)
	defer p.Close()
	data := make([]byte, 4<<20)
	var w Warmer
	w.Reset(p, data)
	for r := 0; r < 4; r++ {
		w.Add(r<<20, (r+1)<<20)
	}
	for try := 0; try < 10000 && int(w.done.Load()) < w.chunks; try++ {
		p.Run(&countJob{hits: make([]atomic.Int32, 2), who: make([]int, 2)}, 2) // wakes the helper
		w.Warm(p)
		if p.Idling(&countJob{}) {
			t.Fatal("Idling reports another job's run")
		}
		w.Warm(p) // still at it: nothing
		time.Sleep(20 * time.Microsecond)
		p.Stop()
		if d := int(w.done.Load()); d > w.chunks {
			t.Fatalf("%d chunks read of %d: some twice", d, w.chunks)
		}
	}
	if d := int(w.done.Load()); d != w.chunks {
		t.Fatalf("%d chunks read of %d", d, w.chunks)
	}
	w.Warm(p) // all read: nothing
	if p.Idling(&w) {
		t.Fatal("Warm restarted a finished reading")
	}
}
