package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Shutdown stops the server gracefully (gelo serve on SIGTERM): hs stops
// accepting connections and the scheduler stops admitting requests (a
// request that still reaches it is answered 503 shutting_down, with a
// Retry-After); the requests already admitted, running or waiting, go on
// for up to drain. Those still unfinished then end with a shutting_down
// error: an error event and [DONE] on a stream, a 503 otherwise, never a
// 500 or a cut connection. Shutdown returns once every handler has
// answered, or after a further WriteTimeout for the last writes (then the
// connections left are closed and the error says so).
func (s *Server) Shutdown(hs *http.Server, drain time.Duration) error {
	if l := s.ready.Load(); l != nil {
		l.sched.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	err := hs.Shutdown(ctx)
	cancel()
	if err == nil {
		s.Close()
		return nil
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		s.Close()
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	running, waiting := s.Load()
	s.log.Warn("drain timeout passed: ending the requests still unfinished", "drain_timeout", drain, "running", running, "waiting", waiting)
	s.Close() // their handlers write the shutting_down error and return
	ctx, cancel = context.WithTimeout(context.Background(), s.opt.WriteTimeout)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		hs.Close()
		return fmt.Errorf("serve: shutdown: connections still busy %v after the drain timeout, closed: %w", s.opt.WriteTimeout, err)
	}
	return nil
}
