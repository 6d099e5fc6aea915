package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// progress draws a one-line bar on stderr when it is a terminal; otherwise
// it stays silent so logs and pipes get no control characters.
type progress struct {
	w     io.Writer
	label string
	on    bool
	last  time.Time
}

func newProgress(w io.Writer, label string) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, label: label, on: ok && term.IsTerminal(int(f.Fd()))}
}

func (p *progress) update(done, total int64) {
	if !p.on || total <= 0 || (time.Since(p.last) < 100*time.Millisecond && done < total) {
		return
	}
	p.last = time.Now()
	const width = 30
	fill := int(done * width / total)
	fmt.Fprintf(p.w, "\r%s [%-*s] %3d%%", p.label, width, string(repeat('#', fill)), done*100/total)
}

func (p *progress) done() {
	if p.on {
		fmt.Fprintln(p.w)
	}
}

func repeat(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}
