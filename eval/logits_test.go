package eval

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
)

// smallFile is a valid saved-logits file of two records.
func smallFile(t testing.TB, dt DType) []byte {
	t.Helper()
	var buf bytes.Buffer
	lw, err := NewLogitsWriter(&buf, Header{DType: dt, Vocab: 4, Ctx: 3, Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range [][]float32{{-0.5, -1.5, -2.5, -3.5}, {-1, float32(math.Inf(-1)), -0.25, -4}} {
		if err := lw.Write(int32(i+1), row); err != nil {
			t.Fatal(err)
		}
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestLogitsRoundTrip: what the writer writes the reader reads, f32
// exactly, f16 as rounded, and the file's size is what the header says.
func TestLogitsRoundTrip(t *testing.T) {
	for _, dt := range []DType{F32, F16} {
		data := smallFile(t, dt)
		if want := 32 + 2*(4+4*dt.width()); len(data) != want {
			t.Fatalf("%v: %d bytes, want %d", dt, len(data), want)
		}
		lr, err := NewLogitsReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if h := lr.Header(); h != (Header{DType: dt, Vocab: 4, Ctx: 3, Count: 2}) {
			t.Fatalf("header %+v", h)
		}
		tok, row, err := lr.Next()
		if err != nil || tok != 1 || row[0] != -0.5 || row[3] != -3.5 {
			t.Fatalf("record 1: %d %v %v", tok, row, err)
		}
		tok, row, err = lr.Next()
		if err != nil || tok != 2 || !math.IsInf(float64(row[1]), -1) || row[2] != -0.25 {
			t.Fatalf("record 2: %d %v %v", tok, row, err)
		}
		if _, _, err := lr.Next(); err == nil || !strings.Contains(err.Error(), "past the header's count 2") {
			t.Fatalf("record 3: %v", err)
		}
	}
}

// TestLogitsReaderRefuses: every malformed file is an error that says
// what is wrong.
func TestLogitsReaderRefuses(t *testing.T) {
	good := smallFile(t, F32)
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	put32 := func(off int, v uint32) []byte {
		return mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b })
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "shorter than the 32-byte header"},
		{"magic", mod(func(b []byte) []byte { b[0] = 'X'; return b }), "not a saved-logits file"},
		{"version", put32(8, 2), "version 2"},
		{"dtype", put32(12, 7), "dtype 7"},
		{"vocab 0", put32(16, 0), "vocab 0"},
		{"huge vocab", put32(16, 1<<30), "vocab 1073741824"},
		{"ctx", put32(20, 2), "ctx 2"},
		{"count 0", mod(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[24:], 0); return b }), "count 0"},
		{"truncated", good[:len(good)-1], "truncated: 71 bytes, but its header (vocab 4, ctx 3, 2 scored tokens, f32) needs 72"},
		{"trailing", append(append([]byte(nil), good...), 0), "has trailing bytes: 73 bytes"},
		{"token", put32(32, 4), "record 1: token 4 outside the vocabulary of 4"},
		{"nan", put32(36, math.Float32bits(float32(math.NaN()))), "record 1: value 0 is NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := readAll(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	// A header that matches the size but a reader cut short: the record
	// in flight is reported truncated.
	lr, err := NewLogitsReader(io.LimitReader(bytes.NewReader(good), 40), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := lr.Next(); err == nil || !strings.Contains(err.Error(), "record 1 of 2: truncated") {
		t.Fatalf("short read: %v", err)
	}
}

// readAll reads every record of data.
func readAll(data []byte) error {
	lr, err := NewLogitsReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	for range lr.Header().Count {
		if _, _, err := lr.Next(); err != nil {
			return err
		}
	}
	return nil
}

// FuzzLogitsReader: no input makes the reader panic, allocate past the
// input's size, or accept a record it cannot account for.
func FuzzLogitsReader(f *testing.F) {
	f.Add(smallFile(f, F32))
	f.Add(smallFile(f, F16))
	f.Add(smallFile(f, F32)[:40])
	f.Add([]byte(logitsMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		lr, err := NewLogitsReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		h := lr.Header()
		if h.size() != int64(len(data)) {
			t.Fatalf("accepted a header (%v) of %d bytes for %d", h, h.size(), len(data))
		}
		for range h.Count {
			tok, row, err := lr.Next()
			if err != nil {
				return
			}
			if tok < 0 || int(tok) >= h.Vocab || len(row) != h.Vocab {
				t.Fatalf("record: token %d, %d values, vocab %d", tok, len(row), h.Vocab)
			}
		}
	})
}

// countingWriter counts the bytes that reach the file.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// peakHeap runs a saving, comparing run over n tokens and returns the
// largest live heap seen after a window (after a GC), checking on the way
// that the saved file grows window by window: the records stream out,
// none wait for the end.
func peakHeap(t *testing.T, n int) (peak uint64, saved int64) {
	t.Helper()
	const vocab, ctx = 2048, 64
	toks := textOf(n, vocab)
	nw, per := Windows(n, ctx)
	h := Header{DType: F32, Vocab: vocab, Ctx: ctx, Count: int64(nw * per)}
	var out countingWriter
	lw, err := NewLogitsWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	_, err = Run(&fakeModel{vocab: vocab, logit: wavy}, toks, Options{Ctx: ctx, Batch: 16, Save: lw,
		Window: func(done, total int, _ Estimate) {
			if lag := int64(done*per)*h.recordSize() - out.n; lag > 1<<16+h.recordSize() {
				t.Fatalf("after window %d, %d bytes of records not yet written", done, lag)
			}
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	return peak, out.n
}

// TestBoundedMemory: sixteen times the text writes sixteen times the
// file, and the live heap does not follow it (it holds a chunk of logits
// and a row, never the text's logits).
func TestBoundedMemory(t *testing.T) {
	small, smallOut := peakHeap(t, 4*64)
	large, largeOut := peakHeap(t, 64*64)
	if largeOut < 15*smallOut {
		t.Fatalf("saved %d bytes for the long text, %d for the short", largeOut, smallOut)
	}
	grow := int64(large) - int64(small)
	t.Logf("peak live heap %d KiB (4 windows), %d KiB (64 windows); saved %d KiB and %d KiB", small>>10, large>>10, smallOut>>10, largeOut>>10)
	if grow > 1<<20 {
		t.Fatalf("live heap grew by %d KiB with the text (the extra windows' logits are %d KiB)", grow>>10, (largeOut-smallOut)>>10)
	}
}
