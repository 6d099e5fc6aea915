package serve

import "testing"

// TestStopHoldback: text that could begin a stop string is held back
// until the next token says whether it does; a stop string split across
// pieces is found and cut before.
func TestStopHoldback(t *testing.T) {
	q := &seq{req: &request{stop: []string{"END", "xy"}}}
	var out string
	for _, piece := range []string{"hello E", "N", "ough x", "E", "ND tail"} {
		q.pend += piece
		if q.stopAt() {
			out += q.pend
			q.pend = ""
			break
		}
		out += q.take()
	}
	if out != "hello ENough x" {
		t.Fatalf("got %q, want %q", out, "hello ENough x")
	}
	q = &seq{req: &request{}}
	q.pend = "abc"
	if q.take() != "abc" || q.pend != "" {
		t.Fatal("without stop strings nothing is held back")
	}
}
